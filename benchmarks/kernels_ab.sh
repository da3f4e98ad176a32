#!/usr/bin/env bash
# obbinfer's overhead with two builds of the CUDA kernels swapped in one machine, run after run (new, old, new, old),
# so that host-to-host spread does not pass for a kernel change. On the GPU machine, with .gpu-gst and .whl carried
# (tests/gpu/nvmm.sh says how) and the older kernels' sources in OLD_DIR, made here with e.g.
#   mkdir -p .device-work/old && for f in $(git ls-tree --name-only <rev> kernels/); do
#     git show <rev>:$f > .device-work/old/$(basename $f); done
#   bash benchmarks/kernels_ab.sh .device-work/old
# Prints pipeline_overhead.py's batch lines for each build (the docs/gpu.md figures of the NMS rewrite came from it).
set -uo pipefail
OLD_DIR="${1:?usage: kernels_ab.sh OLD_KERNEL_DIR}"
source .gpu-gst/activate.sh
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:$PWD/tests/gst:/tmp/site:${PYTHONPATH:-} OBBMETA_CUDA_ARCHS=90 PYTHONUNBUFFERED=1
python3 setup.py -q build_ext --inplace > /tmp/ab-build.log 2>&1 || { tail /tmp/ab-build.log; exit 1; }
lib=$(ls obbmeta/_cuda*.so); cp "$lib" /tmp/ab-new.so
nvcc -O3 -std=c++17 -shared -cudart static -Xcompiler -fPIC,-fvisibility=hidden -I"$OLD_DIR" \
  -gencode=arch=compute_90,code=sm_90 "$OLD_DIR/obbmeta_cuda.cu" -o /tmp/ab-old.so || exit 1
for v in new old new old; do
  cp "/tmp/ab-$v.so" "$lib"; echo "== $v"
  python3 benchmarks/pipeline_overhead.py --device cuda 2>&1 | grep "^batch"
done
cp /tmp/ab-new.so "$lib"
