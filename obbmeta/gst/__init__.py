"""GStreamer elements (the only part of obbmeta that imports ``gi``).

* ``obbinfer``: a PyTorch oriented detector in the pipeline, the nvinfer replacement: frames (system memory or
  ``memory:NVMM``) -> model -> decode + rotated NMS -> NvDsObjectMeta + OBB user meta on the batch meta.
* ``obboverlay``: the rotated boxes for nvdsosd (``mode=meta``, display-meta lines) or drawn into the frames
  (``mode=draw``); ``follow-tracker=true`` after nvtracker gives every tracked object an OBB first.
* ``obbtrack``: obbmeta's oriented tracker (rotated-IoU association), writing object ids as nvtracker does.
* ``obbmessage``: every frame's objects with their rotated boxes as an ``NVDS_CUSTOM_MSG_BLOB`` JSON message for
  ``nvmsgconv msg2p-newapi=1`` (docs/messages.md).

Two ways to get them:

* ``export GST_PLUGIN_PATH=$(python -m obbmeta.gst --plugin-path)``, with the interpreter whose packages the elements
  should use (activated or called by path): ``gst-inspect-1.0 obbinfer``, ``gst-launch-1.0 ... ! obbinfer model=...``,
  ``Gst.parse_launch``, pyservicemaker ``Pipeline.add("obbinfer", ...)``; needs
  ``gstreamer1.0-python3-plugin-loader``. The folder it prints is made for that interpreter (:func:`plugin_path`).
* ``obbmeta.gst.register()`` inside a Python program registers them in-process (no plugin loader needed).

``from obbmeta.gst import Gst, GstVideo`` (also ``GLib``, ``GObject``, ``GstBase``) gives GStreamer's bindings,
imported on first use and initialised (:func:`init`). Importing this package imports neither ``gi`` nor torch (the
GStreamer plugin scanner imports the plugin files).
"""
from __future__ import annotations

import hashlib
import json
import os
import site
import sys
import sysconfig
from importlib import import_module
from pathlib import Path

PLUGIN_DIR = Path(__file__).resolve().parent / "plugin"
# obbmeta's elements, each with the module of this package that declares it (importing it imports gi).
_DECLARED_IN = {"obbinfer": "infer", "obboverlay": "overlay", "obbtrack": "track", "obbmessage": "message"}
#: obbmeta's element names (known without importing ``gi``).
ELEMENTS = tuple(_DECLARED_IN)
_BINDINGS = ("GLib", "GObject", "Gst", "GstBase", "GstVideo")
#: What the generated plugin folder's ``python/`` holds beside the shipped plugin files: the interpreter it serves.
SITE_CONFIG = "_obbmeta_site.json"
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds the ``obbmeta`` package


def site_folders() -> list[str]:
    """This interpreter's site folders (its venv's site-packages, the system ones it sees, the user site), in its
    ``sys.path`` order: what the plugin loader's embedded Python adds with ``site.addsitedir``, so that their
    ``.pth`` files (editable installs) apply there too."""
    sites = set(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        sites.add(site.getusersitepackages())
    return [p for p in dict.fromkeys(sys.path) if p in sites and os.path.isdir(p)]


def python_path() -> str:
    """``os.pathsep``-joined package folders of this interpreter, for a ``PYTHONPATH`` that should see its packages:
    its ``sys.path`` without what every Python has of its own (the standard library, ``lib-dynload``, zips) and
    without ``''`` or the current directory; plus the folder holding ``obbmeta`` when only an import hook (an
    editable install's ``.pth``, which ``PYTHONPATH`` does not run) finds it."""
    own = {os.path.realpath(sysconfig.get_path(k)) for k in ("stdlib", "platstdlib")}
    own |= {os.path.join(p, "lib-dynload") for p in list(own)}
    cwd = os.path.realpath(os.getcwd())
    folders = [p for p in dict.fromkeys(sys.path)
               if p and os.path.isdir(p) and os.path.realpath(p) not in own | {cwd}]
    if not any((Path(p) / "obbmeta" / "__init__.py").is_file() for p in folders):
        folders.append(str(_PACKAGE_ROOT))
    return os.pathsep.join(folders)


def _site_config() -> dict:
    return {
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "executable": sys.executable,
        "site_folders": site_folders(),
        # Used only when the site folders do not make obbmeta importable (a source tree on sys.path, not installed).
        "package_root": str(_PACKAGE_ROOT),
    }


def _folder_candidates() -> list[Path]:
    out = []
    if sys.prefix != sys.base_prefix:  # a venv: the folder lives (and goes) with it
        out.append(Path(sys.prefix) / "share" / "obbmeta" / "gst-plugin")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = hashlib.sha256(f"{sys.prefix}\0{sys.executable}\0{_PACKAGE_ROOT}".encode()).hexdigest()[:12]
    out.append(cache / "obbmeta" / "gst-plugin" / f"python{sys.version_info[0]}.{sys.version_info[1]}-{key}")
    return out


def _write_if_changed(path: Path, data: bytes) -> None:
    # Unchanged files keep their mtime, so GStreamer's registry cache does not rescan the plugins needlessly.
    if path.is_file() and path.read_bytes() == data:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def make_plugin_folder(folder: Path) -> Path:
    """Write (or refresh) a plugin folder for this interpreter at ``folder``: ``python/`` with obbmeta's plugin files
    and :data:`SITE_CONFIG` naming this interpreter's site folders. Returns ``folder``; raises OSError when it
    cannot be written."""
    target = Path(folder) / "python"
    target.mkdir(parents=True, exist_ok=True)
    for src in sorted((PLUGIN_DIR / "python").glob("*.py")):
        _write_if_changed(target / src.name, src.read_bytes())
    _write_if_changed(target / SITE_CONFIG, (json.dumps(_site_config(), indent=1) + "\n").encode())
    return Path(folder)


def plugin_path() -> str:
    """The folder to put on ``GST_PLUGIN_PATH`` for this interpreter.

    gst-python's plugin loader runs the system Python embedded in ``gst-launch-1.0`` / ``gst-inspect-1.0``, which
    sees neither a venv nor an editable install. So this writes a plugin folder whose files know this interpreter's
    site folders (:func:`site_folders`): in a venv ``<venv>/share/obbmeta/gst-plugin``, otherwise (or when the venv
    is read-only) ``${XDG_CACHE_HOME:-~/.cache}/obbmeta/gst-plugin/pythonX.Y-<hash>``; files are rewritten only
    when their content changes. Should neither be writable, the folder shipped in the package is returned: it finds
    the package's own folder and ``$VIRTUAL_ENV``, nothing else. The embedded Python must be the same X.Y version
    as this interpreter (the plugin files say so when it is not)."""
    for folder in _folder_candidates():
        try:
            return str(make_plugin_folder(folder))
        except OSError:
            continue
    return str(PLUGIN_DIR)


def init():
    """GStreamer's ``Gst`` module, imported and initialised (``Gst.init``), or ImportError saying how to install the
    bindings. Call it before anything imports torch where that order matters (docs/gst.md, "two C++ unwinders").
    ``from obbmeta.gst import Gst`` does the same."""
    from ._gi import Gst

    return Gst


def __getattr__(name):
    if name in _BINDINGS:  # the bindings, imported (and Gst initialised) when first asked for
        from . import _gi

        return getattr(_gi, name)
    raise AttributeError(f"module 'obbmeta.gst' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


def element_classes() -> dict[str, type]:
    """The element classes by element name: obbmeta's (their modules imported here) and any other subclass of an
    element that declares an ``element_name`` of its own (``obbmeta.gst._element.ObbmetaElement``)."""
    from ._element import ELEMENT_CLASSES

    for module in _DECLARED_IN.values():
        import_module(f".{module}", __name__)
    return dict(ELEMENT_CLASSES)


def element_factory(name: str) -> tuple:
    """``(name, rank, class)`` of obbmeta's element ``name``: a plugin file's ``__gstelementfactory__`` for gst-python's
    plugin loader, and the arguments ``Gst.Element.register`` takes after the plugin. Imports only the module that
    declares the element."""
    if name not in _DECLARED_IN:
        raise ValueError(f"name must be one of obbmeta's elements ({', '.join(ELEMENTS)}), got {name!r}")
    from ._element import ELEMENT_CLASSES
    from ._gi import Gst

    import_module(f".{_DECLARED_IN[name]}", __name__)
    return name, Gst.Rank.NONE, ELEMENT_CLASSES[name]


def register() -> None:
    """Register the elements of :func:`element_classes` with GStreamer in this process (idempotent: a name already
    registered is left as it is)."""
    from ._gi import Gst

    for name, cls in element_classes().items():
        if Gst.ElementFactory.find(name) is None:
            Gst.Element.register(None, name, Gst.Rank.NONE, cls)


__all__ = ["init", "plugin_path", "python_path", "site_folders", "make_plugin_folder", "register", "element_classes",
           "element_factory", "ELEMENTS", "PLUGIN_DIR", "SITE_CONFIG", *_BINDINGS]
