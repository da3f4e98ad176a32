"""Builds the C core as plain shared libraries (no Python C API, no torch headers).

They are loaded with ctypes by ``obbmeta._native``; setuptools' Extension is only used to compile and place them
next to the package, so ``pip install .`` and ``pip install -e .`` both work without torch at build time.

The CUDA kernels (kernels/obbmeta_cuda.cu, the same geometry headers compiled by nvcc) are built into
``obbmeta._cuda`` when ``nvcc`` is found (``$CUDA_HOME/bin`` or ``PATH``). Environment:
``OBBMETA_CUDA=0`` skips them, ``OBBMETA_CUDA=1`` makes a missing nvcc an error, ``OBBMETA_CUDA_ARCHS`` sets the
targets (default ``75;80;86;87;89;90``, plus PTX for the newest so later GPUs JIT it).
"""
import os
import shutil
import subprocess
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CFLAGS = ["-O3", "-std=c11", "-fvisibility=hidden", "-Wall", "-Wextra", "-Werror=implicit-function-declaration"]
HEADERS = ["kernels/obb_geometry.h", "kernels/obb_draw.h", "kernels/nvds_meta.h"]


class CUDAExtension(Extension):
    """A shared library built by nvcc from .cu sources (no Python C API)."""


def find_nvcc():
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and (Path(home) / "bin" / "nvcc").exists():
        return str(Path(home) / "bin" / "nvcc")
    return shutil.which("nvcc")


class BuildExt(build_ext):
    def run(self):
        mode = os.environ.get("OBBMETA_CUDA", "auto")
        self.nvcc = None if mode == "0" else find_nvcc()
        if mode == "1" and not self.nvcc:
            raise RuntimeError("OBBMETA_CUDA=1 but nvcc was not found (set CUDA_HOME or put nvcc on PATH)")
        if not self.nvcc:
            if mode != "0":
                print("obbmeta: nvcc not found, building without CUDA kernels (CUDA tensors use the host code)")
            self.extensions = [e for e in self.extensions if not isinstance(e, CUDAExtension)]
        super().run()

    def build_extension(self, ext):
        if not isinstance(ext, CUDAExtension):
            return super().build_extension(ext)
        target = Path(self.get_ext_fullpath(ext.name))
        inputs = [Path(p) for p in ext.sources + ext.depends]
        if not self.force and target.exists() and all(p.stat().st_mtime <= target.stat().st_mtime for p in inputs):
            return
        archs = [a for a in os.environ.get("OBBMETA_CUDA_ARCHS", "75;80;86;87;89;90").split(";") if a]
        gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
        gencode.append(f"-gencode=arch=compute_{archs[-1]},code=compute_{archs[-1]}")
        target.parent.mkdir(parents=True, exist_ok=True)
        cmd = [self.nvcc, "-O3", "-std=c++17", "-shared", "-cudart", "static", "-Xcompiler", "-fPIC,-fvisibility=hidden",
               "-Ikernels", *gencode, *ext.sources, "-o", str(target)]
        print(" ".join(cmd))
        subprocess.check_call(cmd)


def c_library(name, source):
    """A plain C shared library (no Python C API), loaded with ctypes by obbmeta._native."""
    return Extension(name, sources=[source], depends=HEADERS, include_dirs=["kernels"], extra_compile_args=CFLAGS,
                     libraries=["m"])


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=[
        c_library("obbmeta._geometry", "kernels/geometry_cpu.c"),
        c_library("obbmeta._draw", "kernels/draw_cpu.c"),
        c_library("obbmeta.nvds._nvdsmeta", "kernels/nvds_meta.c"),
        c_library("obbmeta.nvds._nvdsmessage", "kernels/nvds_message.c"),
        CUDAExtension("obbmeta._cuda", sources=["kernels/obbmeta_cuda.cu"], depends=HEADERS),
    ],
)
