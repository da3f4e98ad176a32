"""Shared by the plugin files: make the environment obbmeta is installed in importable.

The gst-python loader runs the system's Python (embedded in gst-launch-1.0, gst-inspect-1.0, ...), which does not
see a virtual environment's packages. This adds, as site folders, the folder that holds the ``obbmeta`` package and
the active virtual environment's (``$VIRTUAL_ENV``) site-packages of this Python version. Anything else goes on
``PYTHONPATH`` (``python -m obbmeta.gst --env`` prints it). Defines no element: the loader skips this file.
"""
import os
import site
import sys

_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
_folders = [_root]
if os.environ.get("VIRTUAL_ENV"):
    _folders.append(os.path.join(os.environ["VIRTUAL_ENV"], "lib",
                                 f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages"))
for _folder in _folders:
    if os.path.isdir(_folder) and _folder not in sys.path:
        site.addsitedir(_folder)

HINT = ("set PYTHONPATH for the plugin loader's Python: eval \"$(python -m obbmeta.gst --env)\" with the interpreter "
        "that has obbmeta and torch installed")
