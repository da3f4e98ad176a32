#!/usr/bin/env bash
# The CUDA checks of the ops and the decode on a GPU machine (the device tool's H200): build the kernels, run the
# CUDA tests, compute-sanitizer's memcheck / racecheck / synccheck on every entry point, and the GPU benchmarks.
# Carry .whl (a cp312 shapely wheel) and, for the peers of the benchmarks, .peers (benchmarks/prepare_peers.sh).
#   bash tests/gpu/ops.sh [tests] [sanitize] [bench]     (default: all three; logs and results in $OUT or ./gpu-out)
set -uo pipefail
OUT="${OUT:-$PWD/gpu-out}"; mkdir -p "$OUT"
STEPS="${*:-tests sanitize bench}"
[ -d .whl ] && python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
export PYTHONUNBUFFERED=1 OBBMETA_CUDA_ARCHS="${OBBMETA_CUDA_ARCHS:-90}" PYTHONPATH="$PWD:${PYTHONPATH:-}"
python3 setup.py -q build_ext --inplace > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
status=0
if [[ " $STEPS " == *" tests "* ]]; then
  python3 -m pytest -q -p no:cacheprovider -p no:jaxtyping -rfE tests/ops tests/decode > "$OUT/pytest_ops.log" 2>&1
  rc=$?; echo "pytest ops/decode exit: $rc" | tee -a "$OUT/pytest_ops.log"; tail -15 "$OUT/pytest_ops.log"
  [ $rc -eq 0 ] || status=1
fi
if [[ " $STEPS " == *" sanitize "* ]]; then
  for tool in memcheck racecheck synccheck; do
    compute-sanitizer --tool "$tool" --error-exitcode 1 python3 tests/gpu/memcheck_smoke.py > "$OUT/sanitizer_$tool.log" 2>&1
    rc=$?; echo "compute-sanitizer $tool exit: $rc" | tee -a "$OUT/sanitizer_$tool.log"; tail -3 "$OUT/sanitizer_$tool.log"
    [ $rc -eq 0 ] || status=1
  done
fi
if [[ " $STEPS " == *" bench "* ]]; then
  [ -f .peers/env.sh ] && source .peers/env.sh
  for b in nms_cuda decode; do
    python3 "benchmarks/$b.py" 2>&1 | tee "$OUT/bench_$b.log" | tail -12
    cp benchmarks/results/$b.json benchmarks/results/$b.png "$OUT/" 2>/dev/null
  done
fi
exit $status
