#!/usr/bin/env bash
# The CPU pipeline of examples/pipeline.py as one gst-launch line (GStreamer 1.22, no DeepStream needed):
#   bash examples/pipeline_cpu.sh MODEL [OUT.webm]      e.g. MODEL=mypkg.models:build or model.pt2
# GST_PLUGIN_PATH (printed by `python -m obbmeta.gst --env`) makes obbinfer / obboverlay visible, and its plugin
# files give gst-launch's embedded Python this environment's packages (torch, obbmeta); your own model package
# comes on PYTHONPATH as for any Python program.
set -euo pipefail
MODEL="$1"; OUT="${2:-obb.webm}"
eval "$(python -m obbmeta.gst --env)"
gst-launch-1.0 -e videotestsrc num-buffers=90 pattern=ball \
  ! video/x-raw,format=RGBA,width=640,height=480,framerate=30/1 \
  ! obbinfer model="$MODEL" input-size=640 conf=0.25 ! tee name=t \
  t. ! queue ! obboverlay mode=draw thickness=2 ! videoconvert ! vp8enc deadline=1 ! webmmux ! filesink location="$OUT" \
  t. ! queue ! fakesink
