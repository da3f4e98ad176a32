"""Command line: `obbmeta demo`, `obbmeta doctor`."""
from __future__ import annotations

import argparse
import sys


def _doctor() -> int:
    import platform

    import torch

    import obbmeta
    from ._native import load_library

    print(f"obbmeta {obbmeta.__version__} on Python {platform.python_version()}, torch {torch.__version__}")
    try:
        load_library("_geometry")
        print("C geometry core: loaded")
    except ImportError as exc:
        print(f"C geometry core: MISSING — {exc}")
    from ._cuda_lib import cuda_library

    built = cuda_library() is not None
    print(f"CUDA kernels (obbmeta._cuda): {'built' if built else 'not built (no nvcc at install): CUDA tensors use the host code on a copy'}")
    print(f"CUDA available to torch: {torch.cuda.is_available()}")
    try:
        from . import nvds

        print(nvds.describe())
    except ImportError as exc:
        print(f"DeepStream metadata layer: unavailable — {exc}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="obbmeta", description="Oriented boxes as DeepStream metadata.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="decode + rotated NMS (+ DeepStream metadata) on the embedded example")
    sub.add_parser("doctor", help="show what obbmeta found: C core, CUDA, NVIDIA's metadata library, layout")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import run

        run()
        return 0
    return _doctor()


if __name__ == "__main__":
    sys.exit(main())
