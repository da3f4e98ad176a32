"""Document video -> oriented detections in DeepStream metadata -> annotated WebM + JSON, with your model or ours.

    python examples/document_video.py                                   # generated document video, bundled model, scored
    python examples/document_video.py --input clip.mp4 --model mypkg.models:build --class-names a,b --input-size 640

It runs appsrc/filesrc ! obbinfer ! obboverlay mode=draw ! vp8enc (obbmeta.demo.run_pipeline) and writes
detections.jsonl / summary.json / PNG frames into --output. --model is anything obbinfer takes: 'package.module:callable'
(called with no arguments; e.g. an Ultralytics export wrapped to return the raw OBB head, an mmrotate model with
output-format mmrotate, or any callable returning OrientedBoxes), a TorchScript file or a torch.export .pt2 file.
"""
import argparse
import json
from pathlib import Path

from obbmeta import demo, scenes

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--input", help="a video file (default: a generated held-out document video with ground truth)")
ap.add_argument("--model", default="obbmeta.models:document_detector")
ap.add_argument("--class-names", default=",".join(scenes.class_names("document")))
ap.add_argument("--input-size", type=int, default=256)
ap.add_argument("--frames", type=int, default=30)
ap.add_argument("--output", default="document-output")
args = ap.parse_args()

out = Path(args.output)
out.mkdir(parents=True, exist_ok=True)
frames = None if args.input else demo.generate("document", args.frames, 256, seed=1)
result = demo.run_pipeline(frames, out, model=args.model, class_names=args.class_names.split(","),
                           input_file=args.input, input_size=args.input_size)
summary = {"frames": result["frames"], "fps": round(result["frames"] / result["seconds"], 2)}
if frames is not None:
    summary["map50"] = round(demo.score(frames, result["objects"]).map50, 4)
demo.write_outputs(out, result, summary)
print(json.dumps(summary), "->", out)
