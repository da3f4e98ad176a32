"""Aerial video -> oriented detections in DeepStream metadata -> annotated WebM + JSON, with your model or ours.

    python examples/aerial_video.py            # a generated aerial video, the bundled model, scored
    python examples/aerial_video.py --input clip.mp4 --model mypkg.models:build --class-names a,b --input-size 640

Adapt --model / --class-names / --input-size (or examples/video_example.py). It runs appsrc/filesrc ! obbinfer
! obboverlay mode=draw ! vp8enc (obbmeta.demo.run_pipeline) and writes detections.jsonl / summary.json / PNG frames
into --output. --model is anything obbinfer takes: 'package.module:callable'
(called with no arguments; e.g. an Ultralytics export wrapped to return the raw OBB head, an mmrotate model with
output-format mmrotate, or any callable returning OrientedBoxes), a TorchScript file or a torch.export .pt2 file.
"""
import sys

from video_example import main

sys.exit(main("aerial", __doc__))
