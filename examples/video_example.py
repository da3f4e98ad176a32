"""The body of examples/aerial_video.py and examples/document_video.py: a video -> oriented detections in
DeepStream metadata -> annotated WebM + JSON, with your model or the bundled one for ``scene``."""
import argparse
import sys

import obbmeta.gst

try:
    obbmeta.gst.init()  # Gst.init before torch (obbmeta.scenes and obbmeta.infer import it)
except ImportError:
    pass  # demo.run says what is missing, in one line
from obbmeta import demo, scenes  # noqa: E402
from obbmeta.infer import OUTPUT_FORMATS  # noqa: E402


def main(scene: str, doc: str) -> int:
    prog = f"examples/{scene}_video.py"
    ap = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    demo.add_arguments(ap, scene=scene)
    ap.add_argument("--model", default=f"obbmeta.models:{scene}_detector",
                    help="what obbinfer's model property takes (default: the bundled %(default)s)")
    ap.add_argument("--class-names", default=",".join(scenes.class_names(scene)),
                    help="comma-separated class names, in the model's label order (default: %(default)s)")
    ap.add_argument("--output-format", choices=OUTPUT_FORMATS, default="yolo-obb",
                    help="what the model returns: the YOLO-OBB head (raw or end-to-end), mmrotate results, or "
                         "OrientedBoxes per frame (default %(default)s)")
    args = ap.parse_args()
    demo.check_arguments(ap, args)
    try:
        demo.run(args, scene=scene, model=args.model, class_names=args.class_names.split(","),
                 output_format=args.output_format)
    except demo.DemoError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    return 0
