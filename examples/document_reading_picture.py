"""The README's picture of the document demo reading its text: one frame of `obbmeta demo --scene document` as
obboverlay drew it in the pipeline, with the string the secondary obbinfer read on each line written beside it
(from the demo's detections.jsonl, i.e. what was read back from NVIDIA's NvDsClassifierMeta lists).

Usage: python examples/document_reading_picture.py [--demo-output DIR] [--seed 8] [--out docs/images/document_read.png]
(runs the demo on held-out video --seed into DIR first when DIR has no detections.jsonl)
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--demo-output", default="document-output")
    ap.add_argument("--frame", type=int, default=0)
    ap.add_argument("--seed", type=int, default=8, help="the held-out video (8: a page turned by about 70 degrees)")
    ap.add_argument("--out", default="docs/images/document_read.png")
    args = ap.parse_args()
    out_dir = Path(args.demo_output)
    if not (out_dir / "detections.jsonl").exists():
        from obbmeta import demo

        argv = ["--scene", "document", "--frames", "10", "--seed", str(args.seed), "--output", str(out_dir)]
        if demo.main(argv) != 0:
            raise SystemExit("the demo failed")
    from PIL import Image, ImageDraw, ImageFont

    rows = [json.loads(line) for line in (out_dir / "detections.jsonl").read_text().splitlines()]
    frame = Image.open(out_dir / f"frame_{args.frame:04d}.png").convert("RGB")
    w, h = frame.size
    canvas = Image.new("RGB", (w * 2, h), "white")
    canvas.paste(frame, (0, 0))
    draw = ImageDraw.Draw(canvas)
    font = ImageFont.load_default(size=12)
    objects = sorted(rows[args.frame]["objects"], key=lambda o: (o["obb"]["cy"], o["obb"]["cx"]))
    y = 4
    for o in objects:
        if not o.get("text") or y > h - 14:
            continue
        cx, cy = o["obb"]["cx"], o["obb"]["cy"]
        draw.line([(cx, cy), (w + 2, y + 7)], fill=(230, 120, 0), width=1)
        draw.text((w + 6, y), o["text"], fill=(0, 0, 0), font=font)
        y += 15
    canvas.convert("P", palette=Image.Palette.ADAPTIVE, colors=64).save(args.out, optimize=True)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
