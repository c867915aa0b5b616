"""Builds the kernel's shared library against the FFI headers of the jaxlib it is built with.

The library is not a Python extension module (it has no ``PyInit``): Python loads it
with ctypes and hands its handler to ``jax.ffi.register_ffi_target``. setuptools'
extension machinery is used only because it knows how to compile and place a shared
library inside a wheel for the running interpreter.
"""

from __future__ import annotations

import jax.ffi
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildSharedLibrary(build_ext):
    """Compile ``_cpu_flash``; export nothing Python-specific (there is no ``PyInit``)."""

    def get_export_symbols(self, ext: Extension) -> list[str]:
        return []


setup(
    ext_modules=[
        Extension(
            "seamline_cpu_flash._cpu_flash",
            sources=["src/seamline_cpu_flash/cpu_flash.cc"],
            # Included by cpu_flash.cc (the first once per instruction set).
            depends=[
                "src/seamline_cpu_flash/cpu_flash_isa.inc",
                "src/seamline_cpu_flash/cpu_flash_bf16.inc",
            ],
            include_dirs=[jax.ffi.include_dir()],
            language="c++",
            # A machine without a C++17 compiler still installs the package (and the rest of
            # seamline with it); cpu-flash then refuses every shape, saying to rebuild it.
            optional=True,
            # No -ffast-math: the kernel relies on NaN comparing false. The AVX-512 and
            # AVX2/FMA copies are compiled under `#pragma GCC target` and chosen at run
            # time, so the library runs on any x86-64.
            extra_compile_args=[
                "-O3",
                "-funroll-loops",
                "-std=gnu++17",
                "-Wno-psabi",
                "-Wno-attributes",
                "-Wno-return-type",
            ],
        )
    ],
    cmdclass={"build_ext": BuildSharedLibrary},
)
