#!/usr/bin/env bash
# Idempotent set-up shared by scripts/test.sh and scripts/demo.sh:
#   1. Debian packages (GStreamer 1.22 + gst-python, valgrind, a C compiler) when running as root;
#   2. a venv in .venv made from Debian's python3 with --system-site-packages, so that gi / Gst (apt) import,
#      which is also how DeepStream containers run Python;
#   3. pinned pip packages (requirements/*.txt) and obbmeta itself in editable mode (builds the C core).
# Usage: source scripts/setup-env.sh [requirements-file ...]   (default: requirements/base.txt)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
APT_PACKAGES=(python3 python3-venv python3-dev gcc libc6-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good python3-gst-1.0
  gstreamer1.0-python3-plugin-loader gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0 valgrind redis-server)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "[setup] apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "[setup] missing Debian packages (run as root to install): ${missing[*]}" >&2
  fi
fi

VENV="$ROOT/.venv"
if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating $VENV"
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
PY="$VENV/bin/python"
reqs=("$@")
[ ${#reqs[@]} -gt 0 ] || reqs=("$ROOT/requirements/base.txt")
stamp="$VENV/.obbmeta-installed"
want="$(cat "${reqs[@]}" "$ROOT/setup.py" "$ROOT/pyproject.toml" | sha256sum | cut -c1-16)"
have="$(cat "$stamp" 2>/dev/null || true)"
if ! grep -qx "$want" <<<"$have"; then
  req_args=()
  for r in "${reqs[@]}"; do req_args+=(-r "$r"); done
  echo "[setup] pip install ${reqs[*]}"
  "$PY" -m pip install -q --disable-pip-version-check "${req_args[@]}" 2> >(grep -v "^WARNING: Location" >&2)
  echo "$want" >> "$stamp"
fi
# (Re)build the C core in place when its sources changed (editable builds always recompile everything).
core="$(cat "$ROOT"/kernels/* "$ROOT/setup.py" "$ROOT/pyproject.toml" "$ROOT/setup.cfg" | sha256sum | cut -c1-16)"
if [ "$(cat "$VENV/.obbmeta-core" 2>/dev/null)" != "$core" ] || ! "$PY" -c "import ctypes, obbmeta._native as n; ctypes.CDLL(str(n.find_library('_geometry')))" 2>/dev/null; then
  echo "[setup] building obbmeta's C core"
  "$PY" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e "$ROOT" 2> >(grep -v "^WARNING: Location" >&2) >/dev/null
  echo "$core" > "$VENV/.obbmeta-core"
fi
export PATH="$VENV/bin:$PATH"
