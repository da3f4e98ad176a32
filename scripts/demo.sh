#!/usr/bin/env bash
# Runs the demo (a generated aerial video through the real pipeline, scored) on its default; installs what it needs
# first (idempotent). Extra arguments go to `obbmeta demo` (see `bash scripts/demo.sh --help`).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup-env.sh" "$ROOT/requirements/base.txt" "$ROOT/requirements/nvds.txt" "$ROOT/requirements/demo.txt"
cd "$ROOT"
exec python -m obbmeta demo "$@"
