#!/usr/bin/env bash
# valgrind memcheck of obbmeta.nvds on NVIDIA's real libnvds_meta (harness.py: write, NVIDIA deep copy, read,
# release, GstBuffer attach + copy + unref, pool reuse). Fails (exit 99) on any invalid read/write, use of
# uninitialised memory, or definitely-lost block not matched by python.supp (which covers only python / numpy /
# ld.so start-up). Usage: bash tests/nvds/valgrind/run.sh [python]   (default: .venv/bin/python)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
PY="${1:-$ROOT/.venv/bin/python}"
LOG="${VALGRIND_LOG:-$(mktemp /tmp/obbmeta-valgrind.XXXXXX.log)}"
status=0
PYTHONMALLOC=malloc valgrind --tool=memcheck --leak-check=full --show-leak-kinds=all \
  --errors-for-leak-kinds=definite --error-exitcode=99 --num-callers=40 \
  --suppressions="$HERE/python.supp" --log-file="$LOG" \
  "$PY" "$HERE/harness.py" --no-torch "${@:2}" || status=$?
grep -E "ERROR SUMMARY|definitely lost:|possibly lost:" "$LOG" | sed 's/^==[0-9]*== //'
echo "valgrind log: $LOG"
"$PY" "$HERE/check_log.py" "$LOG" | tail -n 40 || status=1
exit $status
