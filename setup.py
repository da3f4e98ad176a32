"""Builds the C core as plain shared libraries (no Python C API, no torch headers).

They are loaded with ctypes by ``obbmeta._native``; setuptools' Extension is only used to compile and place them
next to the package, so ``pip install .`` and ``pip install -e .`` both work without torch at build time.

The CUDA kernels (kernels/obbmeta_cuda.cu, the same geometry headers compiled by nvcc) are built into
``obbmeta._cuda`` when ``nvcc`` is found (``$CUDA_HOME/bin`` or ``PATH``). Environment:
``OBBMETA_CUDA=0`` skips them, ``OBBMETA_CUDA=1`` makes a missing nvcc an error, ``OBBMETA_CUDA_ARCHS`` sets the
targets (default ``75;80;86;87;89;90``, plus PTX for the newest so later GPUs JIT it).

Stale builds: a library is rebuilt whenever the fingerprint of what makes it (its sources and headers, the compiler
command, the CUDA architectures) differs from the one recorded for it in the build's temp folder, not only when a
source file is newer, so an old ``build/`` folder never ships a library of other sources or other architectures.
What was built (and why the CUDA kernels were not) is written to ``obbmeta/_build_info.json`` for ``obbmeta doctor``.
"""
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CFLAGS = ["-O3", "-std=c11", "-fvisibility=hidden", "-Wall", "-Wextra", "-Werror=implicit-function-declaration"]
HEADERS = ["kernels/obb_geometry.h", "kernels/obb_draw.h", "kernels/obb_crop.h", "kernels/obb_status.h",
           "kernels/obb_match.h", "kernels/obb_track.h", "kernels/obb_abi.h", "kernels/nvds_meta.h",
           *sorted(str(p) for p in Path("kernels").glob("nvds_meta_*.inc"))]
CUDA_HEADERS = ["kernels/obbmeta_nms_core.cuh", "kernels/obbmeta_nms.cuh", "kernels/obbmeta_decode.cuh"]


class CUDAExtension(Extension):
    """A shared library built by nvcc from .cu sources (no Python C API)."""


def find_nvcc():
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and (Path(home) / "bin" / "nvcc").exists():
        return str(Path(home) / "bin" / "nvcc")
    return shutil.which("nvcc")


def cuda_archs():
    archs = [a for a in os.environ.get("OBBMETA_CUDA_ARCHS", "75;80;86;87;89;90").split(";") if a]
    if not archs or not all(a.isdigit() for a in archs):
        raise RuntimeError(f"OBBMETA_CUDA_ARCHS must be ';'-separated compute capabilities like '80;90', got {archs}")
    return archs


class BuildExt(build_ext):
    def run(self):
        mode = os.environ.get("OBBMETA_CUDA", "auto")
        self.nvcc = None if mode == "0" else find_nvcc()
        if mode == "1" and not self.nvcc:
            raise RuntimeError("OBBMETA_CUDA=1 but nvcc was not found (set CUDA_HOME or put nvcc on PATH)")
        if mode == "0":
            self.cuda_status = "not built: disabled on purpose (OBBMETA_CUDA=0 at install)"
        elif not self.nvcc:
            self.cuda_status = "not built: nvcc was not found at install (CUDA_HOME / PATH)"
            print("obbmeta: nvcc not found, building without CUDA kernels (CUDA tensors use the host code)")
        else:
            self.cuda_status = f"built for sm_{', sm_'.join(cuda_archs())} (+ PTX) by {self.nvcc}"
        if not self.nvcc:
            self.extensions = [e for e in self.extensions if not isinstance(e, CUDAExtension)]
        super().run()
        if self.extensions:
            info = Path(self.get_ext_fullpath(self.extensions[0].name)).parent / "_build_info.json"
            info.write_text(json.dumps({"cuda": self.cuda_status}, indent=1) + "\n")

    def _command(self, ext, target):
        if isinstance(ext, CUDAExtension):
            archs = cuda_archs()
            gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
            gencode.append(f"-gencode=arch=compute_{archs[-1]},code=compute_{archs[-1]}")
            return [self.nvcc, "-O3", "-std=c++17", "-shared", "-cudart", "static", "-Xcompiler",
                    "-fPIC,-fvisibility=hidden", "-Ikernels", *gencode, *ext.sources, "-o", str(target)]
        compiler = self.compiler.compiler_so if hasattr(self.compiler, "compiler_so") else ""
        return [str(compiler), *ext.extra_compile_args, *ext.sources, *ext.libraries]

    def build_extension(self, ext):
        target = Path(self.get_ext_fullpath(ext.name))
        digest = hashlib.sha256(json.dumps(self._command(ext, target)).encode())
        for path in sorted(set(ext.sources + ext.depends)):
            digest.update(path.encode() + b"\0" + Path(path).read_bytes())
        stamp = Path(self.build_temp) / f"{ext.name}.fingerprint"
        # The stamp records what the library was built from and the library's own hash: a changed input, or a
        # library replaced since, means rebuild.
        fresh = target.exists() and stamp.exists() and stamp.read_text() == _stamp(digest.hexdigest(), target)
        if not fresh and target.exists():
            target.unlink()  # built from other sources, flags or architectures: never reuse it
        if isinstance(ext, CUDAExtension):
            if not (fresh and not self.force):
                target.parent.mkdir(parents=True, exist_ok=True)
                cmd = self._command(ext, target)
                print(" ".join(cmd))
                subprocess.check_call(cmd)
        else:
            super().build_extension(ext)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(_stamp(digest.hexdigest(), target))


def _stamp(inputs: str, target: Path) -> str:
    return f"{inputs} {hashlib.sha256(target.read_bytes()).hexdigest()}"


def c_library(name, source, libraries=("m",)):
    """A plain C shared library (no Python C API), loaded with ctypes by obbmeta._native."""
    return Extension(name, sources=[source], depends=HEADERS, include_dirs=["kernels"], extra_compile_args=CFLAGS,
                     libraries=list(libraries))


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=[
        c_library("obbmeta._geometry", "kernels/geometry_cpu.c"),
        c_library("obbmeta.track._tracker", "kernels/track_cpu.c", libraries=("m", "pthread")),
        c_library("obbmeta._draw", "kernels/draw_cpu.c"),
        c_library("obbmeta._crop", "kernels/crop_cpu.c"),
        c_library("obbmeta.nvds._nvdsmeta", "kernels/nvds_meta.c"),
        c_library("obbmeta.nvds._nvdsmessage", "kernels/nvds_message.c"),
        c_library("obbmeta.nvds._nvdstensor", "kernels/nvds_tensor.c", libraries=("m", "pthread")),
        CUDAExtension("obbmeta._cuda", sources=["kernels/obbmeta_cuda.cu"],
                      depends=HEADERS + CUDA_HEADERS),
    ],
)
