#!/usr/bin/env bash
# Runs the demo on its embedded default input; installs what it needs first (idempotent).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup-env.sh" "$ROOT/requirements/base.txt" "$ROOT/requirements/nvds.txt"
cd "$ROOT"
exec python -m obbmeta demo "$@"
