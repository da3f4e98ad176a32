"""Document video -> oriented detections in DeepStream metadata -> annotated WebM + JSON, with your model or ours.

    python examples/document_video.py            # a generated document video, the bundled model, scored
    python examples/document_video.py --input clip.mp4 --model mypkg.models:build --class-names a,b --input-size 640

Adapt --model / --class-names / --output-format / --input-size (or examples/video_example.py). It feeds the
frames through appsrc ! obbinfer ! obboverlay mode=draw ! vp8enc (obbmeta.demo.run) and writes annotated.webm,
detections.jsonl, summary.json and PNG frames into --output. --model is anything obbinfer takes:
'package.module:callable' (called with no arguments; e.g. an Ultralytics export wrapped to return the raw OBB head,
an mmrotate model with --output-format mmrotate, or any callable returning OrientedBoxes with --output-format
boxes), a TorchScript file or a torch.export .pt2 file.
"""
import sys

from video_example import main

sys.exit(main("document", __doc__))
