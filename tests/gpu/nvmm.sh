#!/usr/bin/env bash
# The NVMM and CUDA checks on a GPU machine with NVIDIA's nvvideoconvert / nvv4l2decoder / libnvbufsurface (the
# device tool's H200; every colour format from NvBufSurfaceCreate and nvvideoconvert, the decoder's NV12 of a
# lossless H.264 stream made by tests/gst/h264_pcm.py, forged CUDA surfaces;
# set up with shared/tools/gpu-gstreamer: carry .gpu-gst, and .whl with a cp312 shapely wheel). Writes logs and the
# CUDA pipeline benchmark to $OUT (or ./gpu-out).
#   bash tests/gpu/nvmm.sh        (NVMM_TESTS="..." runs other test paths)
set -uo pipefail
OUT="${OUT:-$PWD/gpu-out}"; mkdir -p "$OUT"
source .gpu-gst/activate.sh
# shapely for the geometry references of tests/ops and tests/osd (carry a cp312 wheel in .whl/)
[ -d .whl ] && python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
export PYTHONUNBUFFERED=1 OBBMETA_CUDA_ARCHS="${OBBMETA_CUDA_ARCHS:-90}" PYTHONPATH="$PWD:$PWD/tests/gst:${PYTHONPATH:-}"
python3 setup.py -q build_ext --inplace > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
# GStreamer is initialised first: on this machine (Debian 12's GStreamer unpacked on Ubuntu 24.04, PyGObject built
# there) Gst.init aborts ("free(): invalid pointer") when torch or NVIDIA's libnvds_meta was loaded before it.
python3 -c "import obbmeta.gst._gi, sys, pytest; sys.exit(pytest.main(sys.argv[1:]))" -q -p no:cacheprovider -p no:jaxtyping \
  -p no:benchmark -p no:cov -p no:xdist -rA ${NVMM_TESTS:-tests/test_frames.py tests/test_pixels.py tests/test_infer.py tests/gst tests/ops tests/osd} \
  > "$OUT/pytest_nvmm.log" 2>&1
echo "pytest exit: $?" | tee -a "$OUT/pytest_nvmm.log"; grep -v "should be floating" "$OUT/pytest_nvmm.log" | tail -25
# gst-launch-1.0 (the plugin loader's embedded Python) on real NVMM frames with the model on the GPU
export GST_PLUGIN_PATH="$(python3 -m obbmeta.gst --plugin-path):$GST_PLUGIN_PATH"
timeout 120 gst-launch-1.0 videotestsrc num-buffers=60 ! video/x-raw,format=RGBA,width=640,height=480 ! nvvideoconvert \
  ! "video/x-raw(memory:NVMM),format=RGBA" ! obbinfer model=obb_toy_models:toy input-size=320 device=cuda \
  ! obboverlay mode=draw ! fakesink 2>&1 | grep -v "should be floating" | tail -5 | tee "$OUT/gst_launch_nvmm.log"
echo "gst-launch exit: ${PIPESTATUS[0]}" | tee -a "$OUT/gst_launch_nvmm.log"
python3 benchmarks/pipeline_overhead.py --device cuda 2>&1 | grep -v "should be floating" | tee "$OUT/bench.log"
cp benchmarks/results/pipeline_overhead_cuda.json benchmarks/results/pipeline_overhead_cuda.png "$OUT/" 2>/dev/null
