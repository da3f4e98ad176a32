#!/usr/bin/env bash
# Runs the whole test suite; installs what it needs first (idempotent). Extra arguments go to pytest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup-env.sh" "$ROOT/requirements/base.txt" "$ROOT/requirements/nvds.txt" "$ROOT/requirements/test.txt"
cd "$ROOT"
exec python -m pytest -q "$@"
