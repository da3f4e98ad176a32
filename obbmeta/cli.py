"""Command line: `obbmeta demo`, `obbmeta doctor`, `obbmeta --version`."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("obbmeta")
    except PackageNotFoundError:  # a source checkout on sys.path, not installed
        import obbmeta

        return obbmeta.__version__


def cuda_build_status() -> str:
    """What the install did about the CUDA kernels (from obbmeta/_build_info.json, written by setup.py)."""
    info = Path(__file__).resolve().parent / "_build_info.json"
    try:
        return str(json.loads(info.read_text())["cuda"])
    except (OSError, ValueError, KeyError):
        return "unknown (no build record: installed by an older setup.py, or not built by setup.py)"


def _doctor() -> int:
    """Print what obbmeta found; exit status 1 when a part it needs is missing (the C core, NVIDIA's metadata
    library), so scripts can check an environment with `obbmeta doctor && ...`."""
    import platform

    import torch

    from ._native import load_library

    problems = []
    print(f"obbmeta {_version()} on Python {platform.python_version()}, torch {torch.__version__}")
    try:
        load_library("_geometry")
        print("C geometry core: loaded")
    except ImportError as exc:
        print(f"C geometry core: MISSING — {exc}")
        problems.append("the C geometry core is missing (rebuild: pip install .)")
    from ._cuda_lib import cuda_library

    loaded = cuda_library() is not None
    status = cuda_build_status()
    if loaded:
        print(f"CUDA kernels (obbmeta._cuda): loaded; {status}")
    else:
        print(f"CUDA kernels (obbmeta._cuda): {status}; CUDA tensors use the host code on a copy")
    print(f"CUDA available to torch: {torch.cuda.is_available()}")
    try:
        from . import nvds

        print(nvds.describe())
        if not nvds.available():
            problems.append("the DeepStream metadata layer (obbmeta.nvds) is unavailable (see above)")
    except ImportError as exc:
        print(f"DeepStream metadata layer: unavailable — {exc}")
        problems.append("the DeepStream metadata layer (obbmeta.nvds) is unavailable")
    if problems:
        print(f"\n{len(problems)} problem(s):")
        for p in problems:
            print(f"  - {p}")
        return 1
    print("\nno problems found")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="obbmeta", description="Oriented boxes as DeepStream metadata.")
    parser.add_argument("--version", action="version", version=f"obbmeta {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", add_help=False,
                   help="a generated video through obbinfer (bundled detector) -> metadata -> drawing -> WebM, "
                        "scored (obbmeta demo --help)")
    sub.add_parser("doctor", help="show what obbmeta found: C core, CUDA, NVIDIA's metadata library, layout; "
                                  "exit status 1 when a needed part is missing")
    args, rest = parser.parse_known_args(argv)
    if args.command == "demo":
        from .demo import main as demo

        return demo(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return _doctor()


if __name__ == "__main__":
    sys.exit(main())
