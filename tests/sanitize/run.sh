#!/usr/bin/env bash
# Builds the C core together with a fuzz driver (tests/sanitize/fuzz_c.c) twice and runs it over every exported C
# entry point: once with AddressSanitizer + UndefinedBehaviorSanitizer (float-to-int overflow included; any report
# aborts), once plain under valgrind memcheck (any error or definitely lost block fails).
# Usage: bash tests/sanitize/run.sh [libnvds_meta.so] [seed] [asan iterations] [valgrind iterations]
#        bash tests/sanitize/run.sh --selftest   (must FAIL: the driver commits a float-to-uint32 overflow)
# Without the library only the geometry, tracker and drawing entry points run. Exit status 0 only when both runs are clean.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SELFTEST=0
if [ "${1:-}" = "--selftest" ]; then SELFTEST=1; shift; fi
LIB="${1:-}"
SEED="${2:-1}"
ASAN_ITER="${3:-3000}"
VG_ITER="${4:-150}"
OUT="$(mktemp -d /tmp/obbmeta-sanitize.XXXXXX)"
SRC=("$HERE/fuzz_c.c" "$ROOT/kernels/geometry_cpu.c" "$ROOT/kernels/track_cpu.c" "$ROOT/kernels/draw_cpu.c"
     "$ROOT/kernels/nvds_meta.c")
CC="${CC:-gcc}"
ARGS=("$SEED")
status=0

echo "== ASan + UBSan build ($OUT/fuzz_asan)"
"$CC" -std=c11 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined,float-cast-overflow \
  -fno-sanitize-recover=all -I"$ROOT/kernels" "${SRC[@]}" -o "$OUT/fuzz_asan" -ldl -lm
if [ "$SELFTEST" = 1 ]; then
  exec env UBSAN_OPTIONS="halt_on_error=1:exitcode=87" "$OUT/fuzz_asan" --selftest
fi
# Leak checking stays on: every payload and display text obbmeta allocates must come back.
ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:exitcode=86" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=87" \
  "$OUT/fuzz_asan" "$SEED" "$ASAN_ITER" ${LIB:+"$LIB"} || status=$?
echo "asan+ubsan exit status: $status"

if command -v valgrind >/dev/null; then
  echo "== valgrind memcheck ($OUT/fuzz_plain)"
  "$CC" -std=c11 -g -O1 -I"$ROOT/kernels" "${SRC[@]}" -o "$OUT/fuzz_plain" -ldl -lm
  vstatus=0
  valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    --log-file="$OUT/valgrind.log" "$OUT/fuzz_plain" "$SEED" "$VG_ITER" ${LIB:+"$LIB"} || vstatus=$?
  grep -E "ERROR SUMMARY|definitely lost:" "$OUT/valgrind.log" | sed 's/^==[0-9]*== //'
  echo "valgrind exit status: $vstatus"
  [ "$vstatus" = 0 ] || { status=$vstatus; tail -n 60 "$OUT/valgrind.log"; }
else
  echo "valgrind not installed: memcheck run skipped"
fi
echo "sanitize: $([ "$status" = 0 ] && echo clean || echo FAILED) (logs in $OUT)"
exit "$status"
