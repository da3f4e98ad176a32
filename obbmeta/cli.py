"""Command line: `obbmeta demo`, `obbmeta doctor`, `obbmeta --version`."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("obbmeta")
    except PackageNotFoundError:  # a source checkout on sys.path, not installed
        import obbmeta

        return obbmeta.__version__


def cuda_build_status() -> str:
    """What the install did about the CUDA kernels (from obbmeta/_build_info.json, written by setup.py)."""
    info = Path(__file__).resolve().parent / "_build_info.json"
    try:
        return str(json.loads(info.read_text())["cuda"])
    except (OSError, ValueError, KeyError):
        return "unknown (no build record: installed by an older setup.py, or not built by setup.py)"


NVIDIA_ELEMENTS = ("nvstreammux", "nvinfer", "nvtracker", "nvdsosd", "nvmsgconv", "nvvideoconvert", "nvv4l2decoder")


def _line(name: str, ok: bool | None, why: str) -> str:
    """One doctor line: ``name: ok | missing | FAILED - why`` (None = missing but optional)."""
    return f"  {name + ':':<26} {'ok' if ok else 'FAILED' if ok is False else 'missing'} - {why}"


def gstreamer_report() -> tuple[list[str], list[str]]:
    """The GStreamer half of ``obbmeta doctor``: lines, and problems (a setup that is missing or broken).

    No ``gi`` (or one without gst-python's overrides) is a problem: obbmeta's elements and ``obbmeta demo`` need it,
    though the library, obbmeta.nvds and obbmeta.osd work without it. So are elements that neither GStreamer's
    registry nor ``obbmeta.gst.register()`` gives, and an obbmeta folder on the path whose elements do not load. No
    obbmeta folder on ``GST_PLUGIN_PATH`` is reported, not counted: ``register()`` (the demo, a Python program) works
    without it. Run before torch is imported (``Gst.init`` after torch aborted on some GStreamer builds)."""
    import os

    from . import gst

    lines, problems = ["GStreamer (obbmeta.gst):"], []
    try:
        Gst = gst.init()  # its ImportError says how to install the bindings (docs/install.md)
        import gi
    except ImportError as exc:
        lines.append(_line("gi", False, f"{exc}"))
        lines.append("  (the library, obbmeta.nvds and obbmeta.osd work without it; the elements and the demo need it)")
        problems.append("GStreamer's Python bindings (gi) cannot be imported, so obbmeta's elements and obbmeta demo "
                        "cannot run: install them as the gi line above says (docs/install.md)")
        return lines, problems
    lines.append(_line("gi", True, f"PyGObject {gi.__version__} with gst-python's overrides "
                                   f"({os.path.dirname(gi.__file__)})"))
    lines.append(_line("GStreamer", True, Gst.version_string()))
    registry = Gst.Registry.get()
    loader = registry.find_plugin("python")
    lines.append(_line("python plugin loader", True if loader else None,
                       loader.get_filename() if loader else
                       "GStreamer has no 'python' plugin: gst-launch-1.0 / gst-inspect-1.0 cannot load obbmeta's "
                       "elements (apt-get install gstreamer1.0-python3-plugin-loader); obbmeta.gst.register() in a "
                       "Python program still works"))
    variable = "GST_PLUGIN_PATH_1_0" if "GST_PLUGIN_PATH_1_0" in os.environ else "GST_PLUGIN_PATH"
    folders = [f for f in os.environ.get(variable, "").split(os.pathsep) if f]
    ours = [f for f in folders if os.path.isfile(os.path.join(f, "python", "gstobbinfer.py"))]
    if not ours:
        lines.append(_line("plugin path", None, f"${variable} holds no obbmeta plugin folder: for gst-launch-1.0 "
                                                "export GST_PLUGIN_PATH=$(python -m obbmeta.gst --plugin-path)"))
    else:
        config_file = os.path.join(ours[0], "python", gst.SITE_CONFIG)
        made_for = "the package's own folder (finds only the package's folder and $VIRTUAL_ENV)"
        ok = True
        try:
            with open(config_file, encoding="utf-8") as f:
                config = json.load(f)
            made_for = f"made for {config['executable']} (Python {config['python']})"
            if config["python"] != f"{sys.version_info[0]}.{sys.version_info[1]}":
                ok = False
        except (OSError, ValueError, KeyError):
            pass
        lines.append(_line("plugin path", ok, f"${variable} holds {ours[0]}, {made_for}"))
        if not ok:
            problems.append(f"{ours[0]} was made for another Python version: rerun python -m obbmeta.gst "
                            "--plugin-path with this environment's interpreter")
    in_registry = {name: Gst.ElementFactory.find(name) for name in gst.ELEMENTS}
    unregistered = None  # why obbmeta.gst.register() (what the demo does) cannot give the elements the registry lacks
    if not all(in_registry.values()):
        try:
            gst.register()
        except Exception as exc:  # noqa: BLE001 - reported
            unregistered = f"obbmeta.gst.register() failed: {type(exc).__name__}: {exc}"
    env_hint = 'eval "$(python -m obbmeta.gst --env)"'
    uncreatable: dict = {}  # element -> why neither the registry nor register() gives it
    for name in gst.ELEMENTS:
        factory = in_registry[name]
        here = unregistered or (None if Gst.ElementFactory.find(name) else  # what the demo gets, without the path
                                f"obbmeta.gst.register() did not register {name}")
        if factory is not None:
            plugin = factory.get_plugin()
            lines.append(_line(name, True, f"in GStreamer's registry (plugin {factory.get_plugin_name()}"
                                           + (f", {plugin.get_filename()})" if plugin else ")")))
        elif not ours and here is not None:
            lines.append(_line(name, False, "cannot be created: not in GStreamer's registry (no obbmeta folder on the "
                                            f"plugin path) and {here}"))
            uncreatable[name] = here
        elif not ours:
            lines.append(_line(name, None, "not in GStreamer's registry (no obbmeta folder on the plugin path; for "
                                           f"gst-launch-1.0: {env_hint}); obbmeta.gst.register() creates it in this "
                                           "Python, as obbmeta demo does"))
        elif loader is None:
            lines.append(_line(name, False, "not in GStreamer's registry: the python plugin loader is missing"))
            problems.append(f"{name} cannot load: install gstreamer1.0-python3-plugin-loader")
        else:
            lines.append(_line(name, False, f"not in GStreamer's registry: {ours[0]}/python/gst{name}.py did not "
                                            f"load in the plugin loader's Python (gst-inspect-1.0 {name} prints why)"))
            problems.append(f"the {name} element is on the plugin path but does not load")
    if uncreatable:
        problems.append(f"{', '.join(uncreatable)} cannot be created, so obbmeta demo cannot run: "
                        f"{'; '.join(dict.fromkeys(uncreatable.values()))} (a broken install? pip install -e . in a "
                        f"checkout, pip install . otherwise); for gst-launch-1.0 also {env_hint} (docs/install.md)")
    lines.append("NVIDIA's DeepStream elements (optional; come with a DeepStream install):")
    for name in NVIDIA_ELEMENTS:
        factory = Gst.ElementFactory.find(name)
        plugin = factory.get_plugin() if factory else None
        lines.append(_line(name, True if factory else None,
                           (plugin.get_filename() if plugin else factory.get_plugin_name()) if factory
                           else "not in GStreamer's registry"))
    return lines, problems


def _doctor() -> int:
    """Print what obbmeta found, one line per part; exit status 1 when a part it needs is missing (the C core,
    NVIDIA's metadata library) or a GStreamer set-up is there but broken, so scripts can check an environment with
    `obbmeta doctor && ...`."""
    import platform

    gst_lines, problems = gstreamer_report()  # before torch: see gstreamer_report

    import torch

    from . import geometry, nvds, ops, track
    from .nvds import messages as nvds_messages
    from .osd import draw

    print(f"obbmeta {_version()} on Python {platform.python_version()}, torch {torch.__version__}")
    rebuild = "rebuild: pip install -e . in a checkout, pip install . otherwise"
    for library in (geometry.GEOMETRY, *track.native_libraries(), *ops.native_libraries(), draw.DRAW,
                    *nvds.native_libraries()):
        state, why = library.status()
        if state == "loaded":
            print(f"{library.title}: loaded")
        else:  # stale: built from other sources than this Python code (a pull without a rebuild)
            print(f"{library.title}: {state.upper()} — {why}")
            problems.append(f"the {library.title} (obbmeta.{library.module}) is {state} ({rebuild})")
    cuda_state, stale_cuda = ops.cuda_kernels()
    status = cuda_build_status()
    if cuda_state == "stale":
        print(f"CUDA kernels (obbmeta._cuda): STALE — {stale_cuda}; CUDA tensors use the host code on a copy")
        problems.append(f"the CUDA kernels (obbmeta._cuda) are there but not usable ({rebuild})")
    elif cuda_state == "loaded":
        print(f"CUDA kernels (obbmeta._cuda): loaded; {status}")
    else:
        print(f"CUDA kernels (obbmeta._cuda): {status}; CUDA tensors use the host code on a copy")
    print(f"CUDA available to torch: {torch.cuda.is_available()}")
    try:
        from . import nvds

        print(nvds.describe())
        if not nvds.available():
            problems.append("the DeepStream metadata layer (obbmeta.nvds) is unavailable (see above)")
    except ImportError as exc:
        print(f"DeepStream metadata layer: unavailable — {exc}")
        problems.append("the DeepStream metadata layer (obbmeta.nvds) is unavailable")
    # The message writer's own rule (custom_msg_blob_type), so doctor refuses exactly what attach_message would.
    variable = nvds_messages.META_TYPE_ENV
    try:
        blob_type = nvds_messages.custom_msg_blob_type()
    except ValueError as exc:
        print(_line("message blob meta type", False, str(exc)))
        problems.append(f"{exc}: the message writer (attach_message, obbmessage) refuses it; fix or unset ${variable}")
    else:
        import os

        source = f"from ${variable}" if os.environ.get(variable) is not None else \
            f"NVDS_CUSTOM_MSG_BLOB; ${variable} is not set"
        print(_line("message blob meta type", True, f"{blob_type} ({source})"))
    print("\n".join(gst_lines))
    if problems:
        print(f"\n{len(problems)} problem(s):")
        for p in problems:
            print(f"  - {p}")
        return 1
    print("\nno problems found")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="obbmeta", description="Oriented boxes as DeepStream metadata.")
    parser.add_argument("--version", action="version", version=f"obbmeta {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", add_help=False,
                   help="a generated video through obbinfer (bundled detector) -> metadata -> drawing -> WebM, "
                        "scored (obbmeta demo --help)")
    sub.add_parser("doctor", help="show what obbmeta found: C core, CUDA, NVIDIA's metadata library, layout, "
                                  "GStreamer, the plugin loader and path, each element; exit status 1 when a needed "
                                  "part is missing")
    args, rest = parser.parse_known_args(argv)
    if args.command == "demo":
        from .demo import main as demo

        return demo(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return _doctor()


if __name__ == "__main__":
    sys.exit(main())
