#!/usr/bin/env bash
# The CUDA checks of the ops and the decode on a GPU machine (the device tool's H200): build the kernels, run the
# CUDA tests, compute-sanitizer's memcheck / racecheck / synccheck on every entry point, and the GPU benchmarks
# against their peers. Carry .whl (a cp312 shapely wheel) and .peers (made by benchmarks/prepare_peers.sh).
#   bash tests/gpu/ops.sh [tests] [sanitize] [bench]     (default: all three)
# Everything it prints goes to $OUT/ops.log (or ./gpu-out); the benchmarks' JSON and plots beside it.
set -uo pipefail
OUT="${OUT:-$PWD/gpu-out}"; mkdir -p "$OUT"
LOG="$OUT/ops.log"
STEPS="${*:-tests sanitize bench}"
[ -d .whl ] && python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONUNBUFFERED=1 OBBMETA_CUDA_ARCHS="${OBBMETA_CUDA_ARCHS:-90}" PYTHONPATH="$PWD:/tmp/site:${PYTHONPATH:-}"
python3 setup.py -q build_ext --inplace > /tmp/obbmeta-build.log 2>&1 || { tail -30 /tmp/obbmeta-build.log | tee -a "$LOG"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$LOG"
status=0
if [[ " $STEPS " == *" tests "* ]]; then
  python3 -m pytest -q -p no:cacheprovider -p no:jaxtyping -rfE tests/ops tests/decode > /tmp/pytest_ops.log 2>&1
  rc=$?; { grep -E "^(FAILED|ERROR)|passed|failed" /tmp/pytest_ops.log | tail -40; echo "pytest ops/decode exit: $rc"; } | tee -a "$LOG"
  [ $rc -eq 0 ] || { grep -B5 -A25 "^___" /tmp/pytest_ops.log | head -150 >> "$LOG"; status=1; }
fi
if [[ " $STEPS " == *" sanitize "* ]]; then
  for tool in memcheck racecheck synccheck; do
    compute-sanitizer --tool "$tool" --error-exitcode 1 python3 tests/gpu/memcheck_smoke.py > /tmp/san.log 2>&1
    rc=$?; { tail -4 /tmp/san.log; echo "compute-sanitizer $tool exit: $rc"; } | tee -a "$LOG"
    [ $rc -eq 0 ] || status=1
  done
fi
if [[ " $STEPS " == *" bench "* ]]; then
  PYTHON=python3 source benchmarks/gpu_peers.sh "$PWD/.peers" >> "$LOG" 2>&1  # not piped: it exports into this shell
  for b in nms_cuda decode; do
    python3 "benchmarks/$b.py" 2>&1 | grep -v "^WARNING" | tee -a "$LOG" | tail -8
    cp benchmarks/results/$b.json benchmarks/results/$b.png "$OUT/" 2>/dev/null
  done
fi
exit $status
