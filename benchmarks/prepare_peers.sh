#!/usr/bin/env bash
# Builds the git-ignored folder .peers/ that the GPU machine (no network) needs to run the peers of
# benchmarks/peers.py: third-party files, carried to the device and never committed.
#
#   .peers/mmcv/    mmcv 2.2.0's CUDA rotated NMS (Apache-2.0, its LICENSE beside it), flattened from the sdist:
#                   nms_rotated_cuda.cu (host side: mask kernel launch + greedy scan on the host),
#                   nms_rotated_cuda.cuh (the kernel), box_iou_rotated_utils.hpp (the polygon IoU),
#                   pytorch_cuda_helper.hpp, common_cuda_helper.hpp. One edit: pytorch_cuda_helper.hpp's
#                   <THC/THCAtomics.cuh> (gone from torch 2.x wheels) becomes <ATen/cuda/Atomic.cuh>.
#                   benchmarks/mmcv_nms_rotated_binding.cpp (ours, committed) binds it; peers.py builds both with
#                   torch.utils.cpp_extension.load on the GPU machine.
#   .peers/wheels/  ultralytics 8.4.190 (AGPL-3.0: a benchmark peer only, never a dependency), torchvision 0.26.0
#                   (+cu130 on PyPI, the release paired with torch 2.11), and what `ultralytics.utils.nms` imports
#                   that the GPU machine may lack: pillow, pyyaml; ninja for the extension build. All for CPython
#                   3.12 manylinux x86_64; benchmarks/gpu_peers.sh installs those missing there with --no-index.
#                   OpenCV (62 MB, over the carry limit) is not carried: peers.py puts in a stand-in module that
#                   raises on any use when cv2 is missing (the NMS path never calls it).
#
# Usage (here, with network): bash benchmarks/prepare_peers.sh [DEST]      (default: <repo root>/.peers)
# Then carry ".peers" in the device call and `source benchmarks/gpu_peers.sh` there (see benchmarks/README.md).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="${1:-$ROOT/.peers}"
MMCV=2.2.0
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$DEST/mmcv" "$DEST/wheels"

# mmcv is sdist-only on PyPI, and pip prepares its metadata before saving it: that runs setup.py, which needs
# pkg_resources (setuptools < 81). A throwaway venv with such a setuptools and --no-build-isolation does it.
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q --disable-pip-version-check "setuptools<81" wheel
"$WORK/venv/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary :all: --no-build-isolation \
  -d "$WORK" "mmcv==$MMCV" 2> >(grep -v "^WARNING: Location" >&2)
tar xzf "$WORK/mmcv-$MMCV.tar.gz" -C "$WORK"
SRC="$WORK/mmcv-$MMCV"
CSRC="$SRC/mmcv/ops/csrc"
cp "$CSRC/pytorch/cuda/nms_rotated_cuda.cu" "$CSRC/common/cuda/nms_rotated_cuda.cuh" \
   "$CSRC/common/box_iou_rotated_utils.hpp" "$CSRC/common/pytorch_cuda_helper.hpp" \
   "$CSRC/common/cuda/common_cuda_helper.hpp" "$SRC/LICENSE" "$DEST/mmcv/"
sed -i 's|#include <THC/THCAtomics.cuh>|#include <ATen/cuda/Atomic.cuh>  // was THC/THCAtomics.cuh (prepare_peers.sh)|' \
  "$DEST/mmcv/pytorch_cuda_helper.hpp"
echo "mmcv $MMCV (PyPI sdist), mmcv/ops/csrc files flattened by benchmarks/prepare_peers.sh" > "$DEST/mmcv/SOURCE"

# Wheels for the GPU machine's CPython 3.12 (manylinux x86_64, glibc 2.39).
PLATFORMS=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64)
pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${PLATFORMS[@]}" -d "$DEST/wheels" \
  ultralytics==8.4.190 torchvision==0.26.0 pillow==11.3.0 pyyaml==6.0.3 ninja==1.13.2 \
  2> >(grep -v "^WARNING: Location" >&2)
ls -la "$DEST/mmcv" "$DEST/wheels"
du -sh "$DEST"
