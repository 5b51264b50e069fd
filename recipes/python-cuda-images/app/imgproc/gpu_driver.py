"""The GPU path without CuPy: the CUDA driver API (libcuda.so.1) through ctypes,
with hand-written PTX. (Work in progress: not wired up yet.)"""

from __future__ import annotations

from . import NoGpuError


def open_backend():
    raise NoGpuError("cuda-driver: not implemented yet")
