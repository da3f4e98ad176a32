"""Shared by the plugin files: make the environment obbmeta is installed in importable.

The gst-python loader runs the system's Python (embedded in gst-launch-1.0, gst-inspect-1.0, ...), which sees neither
a virtual environment nor an editable install. In a folder made by ``python -m obbmeta.gst --plugin-path``,
``_obbmeta_site.json`` beside this file names that interpreter's site folders: they are added with
``site.addsitedir`` (so their ``.pth`` files, e.g. an editable install's, apply) ahead of the embedded Python's own
site folders, as in that interpreter. In the folder shipped inside the package (no JSON) the folder that holds the
``obbmeta`` package and ``$VIRTUAL_ENV``'s site-packages are added instead. Defines no element: the loader skips it;
each ``gstobb*.py`` beside it gets its element from :func:`element_factory`.
"""
import importlib.util
import json
import os
import site
import sys

HINT = ("put the folder printed by `python -m obbmeta.gst --plugin-path` on GST_PLUGIN_PATH, running that command "
        "with the interpreter that has obbmeta and torch installed")
_here = os.path.dirname(os.path.abspath(__file__))
_config_file = os.path.join(_here, "_obbmeta_site.json")
_version = f"{sys.version_info[0]}.{sys.version_info[1]}"


def _add_sites(folders):
    """addsitedir each folder, then move what that added in front of this Python's own site folders."""
    before = list(sys.path)
    for folder in folders:
        if os.path.isdir(folder):
            site.addsitedir(folder)
    added = [p for p in sys.path if p not in before]
    own = set(site.getsitepackages())
    first = next((i for i, p in enumerate(before) if p in own), len(before))
    sys.path[:] = before[:first] + added + before[first:]


if os.path.isfile(_config_file):
    with open(_config_file, encoding="utf-8") as _f:
        CONFIG = json.load(_f)
    if CONFIG["python"] != _version:
        raise ImportError(
            f"obbmeta's plugin folder {os.path.dirname(_here)} was made for Python {CONFIG['python']} "
            f"({CONFIG['executable']}), but GStreamer's plugin loader runs Python {_version}: its packages cannot "
            f"load here. Use an environment of Python {_version} (e.g. a venv of /usr/bin/python3 with "
            "--system-site-packages, docs/install.md)")
    _add_sites(CONFIG["site_folders"])
    if importlib.util.find_spec("obbmeta") is None and os.path.isdir(CONFIG["package_root"]):
        sys.path.insert(0, CONFIG["package_root"])
else:
    CONFIG = None
    _root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(_here))))
    _folders = [_root]
    if os.environ.get("VIRTUAL_ENV"):
        _folders.append(os.path.join(os.environ["VIRTUAL_ENV"], "lib", f"python{_version}", "site-packages"))
    _add_sites(_folders)


def element_factory(name):
    """``__gstelementfactory__`` of obbmeta's element ``name`` (``obbmeta.gst.element_factory``), or an ImportError
    that says how to make obbmeta importable here."""
    try:
        from obbmeta.gst import element_factory as factory

        return factory(name)
    except ImportError as exc:
        raise ImportError(f"obbmeta's {name} element cannot load: {exc}; {HINT}") from exc
