"""``python -m obbmeta.gst --plugin-path | --python-path | --env``: where GStreamer finds obbmeta's elements."""
from __future__ import annotations

import argparse
import shlex
import sys

from . import ELEMENTS, plugin_path, python_path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m obbmeta.gst",
        description=f"Make obbmeta's GStreamer elements ({', '.join(ELEMENTS)}) visible to gst-launch-1.0, "
                    "gst-inspect-1.0 and any GStreamer application: export GST_PLUGIN_PATH=$(python -m obbmeta.gst "
                    "--plugin-path), with this interpreter activated or called by its path. The folder printed is "
                    "made for this interpreter: its files add its site-packages to the plugin loader's Python.")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--plugin-path", action="store_true",
                   help="write this interpreter's plugin folder (again only if its content changed) and print it, "
                        "for GST_PLUGIN_PATH")
    g.add_argument("--python-path", action="store_true",
                   help="print this interpreter's package folders (no standard library, lib-dynload, '' or current "
                        "directory), for a PYTHONPATH that should see its packages")
    g.add_argument("--env", action="store_true",
                   help="print the shell export of GST_PLUGIN_PATH (nothing else is needed): "
                        "eval \"$(python -m obbmeta.gst --env)\"")
    args = ap.parse_args(argv)
    if args.plugin_path:
        print(plugin_path())
    elif args.python_path:
        print(python_path())
    else:
        print(f"export GST_PLUGIN_PATH={shlex.quote(plugin_path())}${{GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
