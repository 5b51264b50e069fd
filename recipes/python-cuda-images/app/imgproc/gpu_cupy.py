"""The GPU path through CuPy.

It runs the reference pipeline of :mod:`imgproc.cpu` with ``xp=cupy``: the same
array operations (edge padding, shifted multiply-adds, gathers for the resize),
executed as CuPy's elementwise kernels on the device. Used only when ``import
cupy`` works and CuPy sees a device.
"""

from __future__ import annotations

import numpy as np

from . import ImgprocError, NoGpuError
from . import cpu


class CupyBackend:
    kind = "gpu"

    def __init__(self, cupy, device_name: str):
        self._cp = cupy
        self.description = f"cupy, {device_name}"
        self.label = f"gpu ({self.description})"

    def process(self, rgb: np.ndarray, sigma: float, scale: float) -> np.ndarray:
        cp = self._cp
        try:
            out = cpu.process(cp.asarray(rgb, dtype=cp.float32), sigma, scale, xp=cp)
            return cp.asnumpy(out)
        except (ValueError, ImgprocError):
            raise
        except Exception as e:  # CUDA or compilation errors from CuPy
            raise ImgprocError(f"cupy: {type(e).__name__}: {e}") from None

    def close(self) -> None:
        pass


def open_backend() -> CupyBackend:
    """A working CuPy backend, or NoGpuError saying why not."""
    try:
        import cupy
    except ImportError as e:
        raise NoGpuError(f"cupy: not importable ({e})") from None
    except Exception as e:  # a broken install can raise anything on import
        raise NoGpuError(f"cupy: import failed ({type(e).__name__}: {e})") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        raise NoGpuError(f"cupy: no CUDA device ({type(e).__name__}: {e})") from None
    if count < 1:
        raise NoGpuError("cupy: no CUDA device")
    try:
        name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
    except Exception:
        name = "device 0"
    backend = CupyBackend(cupy, name)
    # Run a tiny image through once, so that a CuPy that imports but cannot
    # compile or launch (no NVRTC, driver too old) counts as "not working".
    try:
        backend.process(np.zeros((4, 4, 3), dtype=np.float32), 1.0, 0.5)
    except ImgprocError as e:
        raise NoGpuError(f"cupy: does not run ({e})") from None
    return backend
