# Sets up the benchmark peers of benchmarks/peers.py on the GPU machine (no network), from the carried folder
# .peers/ that benchmarks/prepare_peers.sh builds (never committed). Source it in the device command, then run the
# benchmarks in the same shell:
#
#   source benchmarks/gpu_peers.sh [PEERS_DIR]      # default: <repo root>/.peers
#   python benchmarks/peers.py                      # or the benchmarks that import it
#
# It installs, with --no-deps --no-index into /tmp/obbmeta-peers-site, only the carried wheels whose module is not
# importable there already (a torchvision already on the machine is kept), puts that folder on PYTHONPATH and its
# bin/ (ninja, for torch's extension builder) on PATH, and exports OBBMETA_PEERS for peers.py. Idempotent.
# Meant to be sourced: no `set -e`, so a failure reports and leaves the calling shell running.

_obbmeta_peers_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export OBBMETA_PEERS="$(cd "${1:-${OBBMETA_PEERS:-$_obbmeta_peers_root/.peers}}" 2>/dev/null && pwd)"
if [ -z "$OBBMETA_PEERS" ] || [ ! -d "$OBBMETA_PEERS/wheels" ]; then
  echo "[peers] no .peers folder (carry it; build it with benchmarks/prepare_peers.sh)" >&2
else
  _obbmeta_peers_site=/tmp/obbmeta-peers-site
  _obbmeta_peers_py="${PYTHON:-python}"
  _obbmeta_peers_want=()
  # wheel-name prefix -> the module that shows it is already there
  for _pair in ultralytics:ultralytics torchvision:torchvision pillow:PIL pyyaml:yaml ninja:ninja; do
    _wheel="${_pair%%:*}" _module="${_pair##*:}"
    if [ "$_module" = ninja ]; then
      command -v ninja >/dev/null 2>&1 && continue
    elif PYTHONPATH="$_obbmeta_peers_site${PYTHONPATH:+:$PYTHONPATH}" "$_obbmeta_peers_py" -c "import $_module" \
        >/dev/null 2>&1; then
      continue
    fi
    _obbmeta_peers_want+=("$OBBMETA_PEERS"/wheels/"$_wheel"-*.whl)
  done
  if [ ${#_obbmeta_peers_want[@]} -gt 0 ]; then
    echo "[peers] installing $(for w in "${_obbmeta_peers_want[@]}"; do basename "$w"; done | tr '\n' ' ')"
    "$_obbmeta_peers_py" -m pip install -q --disable-pip-version-check --no-deps --no-index \
      --target "$_obbmeta_peers_site" "${_obbmeta_peers_want[@]}" || echo "[peers] pip install failed" >&2
  fi
  export PYTHONPATH="$_obbmeta_peers_site${PYTHONPATH:+:$PYTHONPATH}"
  export PATH="$_obbmeta_peers_site/bin:$PATH"
  export YOLO_CONFIG_DIR="${YOLO_CONFIG_DIR:-/tmp/obbmeta-peers-yolo}"  # Ultralytics writes its settings there
  mkdir -p "$YOLO_CONFIG_DIR"
fi
unset _obbmeta_peers_root _obbmeta_peers_site _obbmeta_peers_py _obbmeta_peers_want _pair _wheel _module
