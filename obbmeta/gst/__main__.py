"""``python -m obbmeta.gst --plugin-path | --python-path | --env``: where GStreamer finds obbmeta's elements."""
from __future__ import annotations

import argparse
import shlex
import sys

from . import plugin_path, python_path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m obbmeta.gst",
        description="Make obbmeta's GStreamer elements (obbinfer, obboverlay) visible to gst-launch-1.0, "
                    "gst-inspect-1.0 and any GStreamer application: export GST_PLUGIN_PATH=$(python -m obbmeta.gst "
                    "--plugin-path)")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--plugin-path", action="store_true", help="print the folder to put on GST_PLUGIN_PATH")
    g.add_argument("--python-path", action="store_true",
                   help="print this interpreter's package folders (PYTHONPATH for the plugin loader's Python)")
    g.add_argument("--env", action="store_true",
                   help="print shell exports of GST_PLUGIN_PATH and PYTHONPATH: "
                        "eval \"$(python -m obbmeta.gst --env)\"")
    args = ap.parse_args(argv)
    if args.plugin_path:
        print(plugin_path())
    elif args.python_path:
        print(python_path())
    else:
        print(f"export GST_PLUGIN_PATH={shlex.quote(plugin_path())}${{GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}}")
        print(f"export PYTHONPATH={shlex.quote(python_path())}${{PYTHONPATH:+:$PYTHONPATH}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
