#!/usr/bin/env bash
# The DeepStream form, for a GPU machine with DeepStream 7.1, 8.0 or 9.x installed (written against their documented
# plugins; nvstreammux, nvtracker and nvdsosd are not installable on obbmeta's CI machines, so this exact line has not
# run there — what did run is in docs/gst.md):
#   bash examples/deepstream_pipeline.sh MODEL VIDEO.mp4 [TRACKER_CONFIG.yml]
# obbinfer takes the batched NVMM RGBA surfaces as zero-copy CUDA tensors, runs the model on the GPU and writes each
# frame's objects (tight AABB in rect_params, object_id untracked, bInferDone) plus the OBB user meta; nvtracker
# tracks the AABBs and keeps the user meta on matched objects; obboverlay turns the OBBs into nvdsosd lines.
set -euo pipefail
MODEL="$1"; VIDEO="$2"
TRACKER="${3:-/opt/nvidia/deepstream/deepstream/samples/configs/deepstream-app/config_tracker_NvDCF_perf.yml}"
eval "$(python3 -m obbmeta.gst --env)"
gst-launch-1.0 -e \
  nvstreammux name=mux batch-size=1 width=1920 height=1080 live-source=0 \
  ! nvvideoconvert ! "video/x-raw(memory:NVMM),format=RGBA" \
  ! obbinfer model="$MODEL" input-size=640 device=cuda unique-id=1 \
  ! nvtracker ll-lib-file=/opt/nvidia/deepstream/deepstream/lib/libnvds_nvmultiobjecttracker.so ll-config-file="$TRACKER" \
  ! obboverlay mode=meta hide-aabb=true \
  ! nvdsosd ! nvvideoconvert ! "video/x-raw,format=I420" ! fakesink \
  filesrc location="$VIDEO" ! qtdemux ! h264parse ! nvv4l2decoder ! mux.sink_0
