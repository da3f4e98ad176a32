#!/usr/bin/env bash
# Runs the whole test suite; installs what it needs first (idempotent). Extra arguments go to pytest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup-env.sh" "$ROOT/requirements/base.txt" "$ROOT/requirements/nvds.txt" "$ROOT/requirements/test.txt"
cd "$ROOT"
# Optional test oracles without their declared dependencies (see the file); a failure only skips those tests.
python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -r requirements/oracles.txt \
  2> >(grep -v "^WARNING: Location" >&2) || echo "[setup] could not install requirements/oracles.txt: its cross-checks will be skipped" >&2
exec python -m pytest -q "$@"
