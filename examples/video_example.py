"""The body of examples/aerial_video.py and examples/document_video.py: a video -> oriented detections in
DeepStream metadata -> annotated WebM + JSON, with your model or the bundled one for ``scene``."""
import argparse
import json
from pathlib import Path

from obbmeta import demo, scenes


def main(scene: str, doc: str) -> int:
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", help=f"a video file (default: a generated held-out {scene} video with ground truth)")
    ap.add_argument("--model", default=f"obbmeta.models:{scene}_detector")
    ap.add_argument("--class-names", default=",".join(scenes.class_names(scene)))
    ap.add_argument("--input-size", type=int, default=256)
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--output", default=f"{scene}-output")
    args = ap.parse_args()

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    frames = None if args.input else demo.generate(scene, args.frames, 256, seed=1)
    result = demo.run_pipeline(frames, out, model=args.model, class_names=args.class_names.split(","),
                               input_file=args.input, input_size=args.input_size)
    summary = {"frames": result["frames"], "fps": round(result["frames"] / result["seconds"], 2)}
    if frames is not None:
        summary["map50"] = round(demo.score(frames, result["objects"]).map50, 4)
    demo.write_outputs(out, result, summary)
    print(json.dumps(summary), "->", out)
    return 0
