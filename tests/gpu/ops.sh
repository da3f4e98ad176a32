#!/usr/bin/env bash
# The CUDA checks of the ops and the decode on a GPU machine (the device tool's H200): build the kernels, run the
# CUDA tests, compute-sanitizer's memcheck / racecheck / synccheck on every entry point, and the GPU benchmarks
# against their peers. Carry .whl (a cp312 shapely wheel) and .peers (made by benchmarks/prepare_peers.sh).
# "crop" alone (no carry needed) runs the rotated crop's tests, its kernel under the three sanitizer tools and
# benchmarks/crop.py.
#   bash tests/gpu/ops.sh [tests] [sanitize] [bench] [crop]     (default: all four)
# Everything it prints goes to $OUT/ops.log (or ./gpu-out); the benchmarks' JSON and plots beside it.
set -uo pipefail
OUT="${OUT:-$PWD/gpu-out}"; mkdir -p "$OUT"
LOG="$OUT/ops.log"
STEPS="${*:-tests sanitize bench crop}"
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
if [[ " $STEPS " == *" crop "* ]]; then
  python3 -m pytest -q -p no:cacheprovider -p no:jaxtyping -rfE tests/ops/test_crop_rotated.py > /tmp/pytest_crop.log 2>&1
  rc=$?; { grep -E "^(FAILED|ERROR)|passed|failed" /tmp/pytest_crop.log | tail -40; echo "pytest crop exit: $rc"; } | tee -a "$LOG"
  [ $rc -eq 0 ] || { grep -B5 -A25 "^___" /tmp/pytest_crop.log | head -150 >> "$LOG"; status=1; }
  # Every form of the kernel once: RGBA pitched views (4-lane loads), CHW float, half / bfloat16 in and out,
  # a (B, ...) batch, an expanded batch, more frames than one launch holds, frame edges, unchecked bad rows.
  CROP_SMOKE='
import torch
from obbmeta.ops import crop_rotated
g = torch.Generator(device="cuda").manual_seed(0)
store = torch.randint(0, 256, (3, 70, 96, 4), dtype=torch.uint8, device="cuda", generator=g)
views = [s[:, :90] for s in store]
t = torch.rand(200, 6, device="cuda", generator=g) * torch.tensor([3, 110, 90, 60, 30, 7], device="cuda")
t[:, 0] = t[:, 0].floor(); t[:, 1:3] -= 10; t[:, 5] -= 3.5
crop_rotated(views, t, (16, 40), channels=(2, 1, 0), fill=114)
crop_rotated(views, t, height=12, max_width=50, reading="long-side", out_dtype=torch.float16, padding=0.2)
chw = torch.stack(views).permute(0, 3, 1, 2).float()
crop_rotated(chw, t, (8, 8), out_dtype=torch.bfloat16)
crop_rotated(chw.to(torch.bfloat16), t, (8, 8), out_dtype=torch.uint8, reading="left-to-right")
crop_rotated(chw.half()[:1].expand(3, -1, -1, -1), t, (5, 7))
crop_rotated([views[0]] * 130, torch.cat([t[:, :1] * 43, t[:, 1:]], 1), (4, 4))
bad = t.clone(); bad[::7, 3] = float("nan"); bad[1::7, 0] = 9
crop_rotated(views, bad, (6, 6), check_boxes=False)
torch.cuda.synchronize(); print("crop sanitizer smoke: ok")
'
  for tool in memcheck racecheck synccheck; do
    compute-sanitizer --tool "$tool" --error-exitcode 1 python3 -c "$CROP_SMOKE" > /tmp/san_crop.log 2>&1
    rc=$?; { tail -3 /tmp/san_crop.log; echo "compute-sanitizer $tool (crop) exit: $rc"; } | tee -a "$LOG"
    [ $rc -eq 0 ] || status=1
  done
  python3 benchmarks/crop.py 2>&1 | grep -v "^WARNING" | tee -a "$LOG" | tail -8
  cp benchmarks/results/crop.json benchmarks/results/crop.png "$OUT/" 2>/dev/null
fi
exit $status
