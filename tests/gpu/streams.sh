#!/usr/bin/env bash
# obbinfer's threaded output path on the GPU machine (the device tool's H200; set up with
# shared/tools/gpu-gstreamer: carry .gpu-gst, and .whl with a cp312 shapely wheel): the CUDA submit / graph paths
# against eager and the output-thread tests on real NVMM buffers, then benchmarks/pipeline_streams.py with sources
# that load the GPU (upload: videotestsrc ! nvvideoconvert, decoder: nvv4l2decoder fed I_PCM frames by Python
# threads, camera: the same decoders fed a camera-like stream by multifilesrc) and 16 separate pipelines.
#   bash tests/gpu/streams.sh [tests] [upload] [decoder] [camera] [separate] [models] [chains]    (default: all seven)
# chains: upload sources (SOURCES=decoder: decoders, each converted to RGBA on the GPU), obbinfer alone and with
# obbtrack + obboverlay after it (with and without queues).
# models: the same weights as a factory, a TorchScript trace and an ONNX export (benchmarks/model_files.py), 16
# batched streams, eager and graph: the rows name the model format.
# Logs and the benchmarks' JSON go to $OUT (or ./gpu-out). TESTS=... replaces the test files of the tests step,
# CHAINS=... the chains of the chains step (names in benchmarks/pipeline_streams.py's CHAINS).
set -uo pipefail
OUT="${OUT:-$PWD/gpu-out}"; mkdir -p "$OUT"
STEPS="${*:-tests upload decoder camera separate models chains}"
source .gpu-gst/activate.sh
[ -d .whl ] && python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
export PYTHONUNBUFFERED=1 OBBMETA_CUDA_ARCHS="${OBBMETA_CUDA_ARCHS:-90}" PYTHONPATH="$PWD:$PWD/tests/gst:$PWD/tests:${PYTHONPATH:-}"
python3 setup.py -q build_ext --inplace > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/streams.log"
status=0
if [[ " $STEPS " == *" tests "* ]]; then
  # GStreamer first (see tests/gpu/nvmm.sh)
  python3 -c "import obbmeta.gst._gi, sys, pytest; sys.exit(pytest.main(sys.argv[1:]))" -q -p no:cacheprovider \
    -p no:jaxtyping -p no:benchmark -p no:cov -p no:xdist -rfE ${TESTS:-tests/test_infer_detector.py tests/test_onnx.py \
    tests/gst/test_output_thread.py tests/gst/test_batches.py tests/gst/test_nvvideoconvert.py} > "$OUT/pytest_streams.log" 2>&1
  rc=$?; echo "pytest exit: $rc" | tee -a "$OUT/pytest_streams.log" "$OUT/streams.log"
  grep -v "should be floating" "$OUT/pytest_streams.log" | grep -E "passed|failed|FAILED|ERROR" | tail -15 | tee -a "$OUT/streams.log"
  [ $rc -eq 0 ] || status=1
fi
bench() {  # name, arguments...
  local name=$1; shift
  timeout ${BENCH_TIMEOUT:-420} python3 benchmarks/pipeline_streams.py --name "$name" "$@" 2>&1 | grep -v "should be floating" \
    | tee -a "$OUT/streams.log" | tail -12
  cp "benchmarks/results/$name.json" "$OUT/" 2>/dev/null || status=1
}
[[ " $STEPS " == *" upload "* ]] && bench pipeline_streams_upload --sources upload --streams 16 --formats RGBA,NV12
[[ " $STEPS " == *" decoder "* ]] && bench pipeline_streams_decoder --sources decoder --streams 16 --formats NV12
[[ " $STEPS " == *" camera "* ]] && bench pipeline_streams_camera --sources camera --streams 16 --formats RGBA,NV12 \
  --variants graph --depths 2 --rates 30
[[ " $STEPS " == *" separate "* ]] && bench pipeline_streams_separate --sources appsrc --streams 16 --formats RGBA \
  --modes separate --variants graph,graph+batch
if [[ " $STEPS " == *" models "* ]]; then
  python3 benchmarks/model_files.py /tmp/obbmeta-models 2>&1 | grep -v -i warning | tail -2
  for m in obbmeta.models:aerial_detector /tmp/obbmeta-models/aerial.ts /tmp/obbmeta-models/aerial.onnx; do
    f=$(python3 -c "import sys; print({'.ts': 'torchscript', '.onnx': 'onnx'}.get(sys.argv[1][sys.argv[1].rfind('.'):], 'factory'))" "$m")
    bench pipeline_streams_model_$f --sources appsrc --streams 16 --formats RGBA --modes batched --variants ${MODEL_VARIANTS:-eager,graph} \
      --model "$m" --repeats 3
  done
fi
[[ " $STEPS " == *" chains "* ]] && bench pipeline_streams_chains --sources ${SOURCES:-upload} --streams 16 --formats RGBA \
  --variants graph --depths 2 --chains ${CHAINS:-obbinfer+track+overlay,obbinfer+queue+track+queue+overlay}
exit $status
