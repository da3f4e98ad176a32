#!/usr/bin/env bash
# The DeepStream form, for a GPU machine with DeepStream 7.1, 8.0 or 9.x installed:
#   bash examples/deepstream_pipeline.sh MODEL_OR_CONFIG VIDEO.mp4 [TRACKER_CONFIG.yml]
# MODEL_OR_CONFIG is a model (package.module:callable, a TorchScript / torch.export / ONNX file, or an Ultralytics
# .pt checkpoint where Ultralytics is installed) or an nvinfer config file (.txt / .yml: its onnx-file, or an
# [obbmeta] model=, names the model; docs/models.md, docs/gst.md "An nvinfer config file").
# The decoder's own NV12 surfaces go straight into obbinfer (no converter: it reads BT.601/709/2020 NV12 in place,
# as CUDA tensors); obbinfer runs the model on the GPU and writes each frame's objects (tight AABB in rect_params,
# bInferDone) plus the OBB user meta; nvtracker tracks the AABBs and keeps the user meta on matched objects;
# obboverlay turns the OBBs into nvdsosd lines. The pieces ran separately (docs/gst.md "What ran where"); this exact
# line needs an installed DeepStream.
set -euo pipefail
MODEL="$1"; VIDEO="$2"
DS=/opt/nvidia/deepstream/deepstream
TRACKER="${3:-$DS/samples/configs/deepstream-app/config_tracker_NvDCF_perf.yml}"
eval "$(python3 -m obbmeta.gst --env)"

case "$MODEL" in
  *.txt|*.yml|*.yaml) INFER="obbinfer config-file-path=$MODEL" ;;
  *)     INFER="obbinfer model=$MODEL input-size=640 device=cuda unique-id=1" ;;
esac
# DeepStream 9 has only the new nvstreammux (frames batched at their own size, no width/height); 7.1 / 8.0 use the
# legacy one unless USE_NEW_NVSTREAMMUX=yes.
MAJOR=$(sed -n 's/^Version: *\([0-9]*\).*/\1/p' "$DS/version" 2>/dev/null || true)
if [[ "${MAJOR:-0}" -ge 9 || "${USE_NEW_NVSTREAMMUX:-}" == yes ]]; then
  MUX="nvstreammux name=mux batch-size=1"
else
  MUX="nvstreammux name=mux batch-size=1 width=1920 height=1080 batched-push-timeout=40000"
fi

gst-launch-1.0 -e \
  $MUX \
  ! $INFER \
  ! nvtracker ll-lib-file=$DS/lib/libnvds_nvmultiobjecttracker.so ll-config-file="$TRACKER" \
  ! obboverlay mode=meta hide-aabb=true \
  ! nvvideoconvert ! "video/x-raw(memory:NVMM),format=RGBA" ! nvdsosd ! fakesink \
  filesrc location="$VIDEO" ! qtdemux ! h264parse ! nvv4l2decoder ! mux.sink_0
