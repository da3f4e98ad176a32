#!/usr/bin/env bash
# A separate venv with the comparators of benchmarks/nms_cpu.py (never dependencies of obbmeta):
# mmcv 2.2.0 with compiled CPU ops (source build, about 15 minutes on 2 cores) and Ultralytics 8.4.190 (AGPL-3.0,
# used only as a benchmark/test oracle; it wants a torchvision distribution installed, even one that cannot load).
# mmrotate 1.x (onedl-mmrotate 1.2.1) is added for the oracle tests.
# Usage: bash benchmarks/setup_comparators.sh [VENV]   then   PYTHONPATH=. VENV/bin/python benchmarks/nms_cpu.py
set -euo pipefail
VENV="${1:-$HOME/.cache/obbmeta-comparators}"
[ -x "$VENV/bin/python" ] || /usr/bin/python3 -m venv "$VENV"
PIP="$VENV/bin/pip"
"$PIP" install -q torch==2.13.0 numpy==2.4.6 "setuptools<81" wheel ninja psutil shapely==2.2.0 matplotlib==3.11.2 \
  pytest==9.2.0 hypothesis==6.170.17
"$VENV/bin/python" -c "import mmcv.ops" 2>/dev/null || \
  MMCV_WITH_OPS=1 FORCE_CUDA=0 MAX_JOBS=2 "$PIP" install --no-build-isolation mmcv==2.2.0
"$PIP" install -q --no-deps ultralytics==8.4.190 torchvision==0.29.1 ultralytics-thop
"$PIP" install -q scipy requests polars pillow psutil pyyaml
# mmrotate 1.x (the maintained onedl fork) for tests/test_mmrotate_oracle.py; it runs on the mmcv above.
"$PIP" install -q --no-deps onedl-mmrotate==1.2.1 onedl-mmdetection==3.5.1
"$PIP" install -q pycocotools terminaltables
echo "comparators ready in $VENV"
