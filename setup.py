"""Builds the C core as plain shared libraries (no Python C API, no torch headers).

They are loaded with ctypes by ``obbmeta._native``; setuptools' Extension is only used to compile and place them
next to the package, so ``pip install .`` and ``pip install -e .`` both work without torch at build time.
"""
from setuptools import Extension, setup

CFLAGS = ["-O3", "-std=c11", "-fvisibility=hidden", "-Wall", "-Wextra", "-Werror=implicit-function-declaration"]

setup(
    ext_modules=[
        Extension(
            "obbmeta._geometry",
            sources=["kernels/geometry_cpu.c"],
            include_dirs=["kernels"],
            extra_compile_args=CFLAGS,
            libraries=["m"],
        ),
        Extension(
            "obbmeta.nvds._nvdsmeta",
            sources=["kernels/nvds_meta.c"],
            include_dirs=["kernels"],
            extra_compile_args=CFLAGS,
            libraries=["m"],
        ),
    ],
)
