"""imgproc: grayscale, Gaussian blur and bilinear resize of PNG/JPEG images,
on the GPU (CuPy, or the CUDA driver API through ctypes) with a NumPy fallback.

Library functions here never print; the entry points (``__main__``,
``selftest``) do.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = [
    "ImgprocError",
    "NoGpuError",
    "load_rgb",
    "quantize",
    "save_gray_png",
    "open_backend",
]

DEVICES = ("auto", "gpu", "cpu")


class ImgprocError(Exception):
    """An error with a message meant for the user."""


class NoGpuError(ImgprocError):
    """No GPU path works on this host."""


def load_rgb(path) -> np.ndarray:
    """Load a PNG or JPEG as float32 RGB (h, w, 3) in [0, 1].

    Palette, grayscale, 16-bit and alpha images are converted to 8-bit RGB by
    Pillow (alpha is dropped, not composited).
    """
    from PIL import Image, UnidentifiedImageError

    path = Path(path)
    try:
        with Image.open(path) as im:
            if im.format not in ("PNG", "JPEG"):
                raise ImgprocError(f"{path}: not a PNG or JPEG image (Pillow reads it as {im.format})")
            rgb = np.asarray(im.convert("RGB"), dtype=np.uint8)
    except UnidentifiedImageError:
        raise ImgprocError(f"{path}: not an image Pillow can read") from None
    except OSError as e:
        raise ImgprocError(f"{path}: cannot read: {e.strerror or e}") from None
    return rgb.astype(np.float32) / np.float32(255.0)


def quantize(gray: np.ndarray) -> np.ndarray:
    """float [0, 1] -> uint8: scale by 255, round half to even, clip."""
    return np.clip(np.rint(np.asarray(gray, dtype=np.float32) * np.float32(255.0)), 0, 255).astype(np.uint8)


def save_gray_png(gray: np.ndarray, path) -> None:
    """Write a 2-D float image as an 8-bit grayscale PNG.

    Pillow writes no timestamp or other metadata unless asked (no ``pnginfo``
    here), so the bytes depend only on the pixels.
    """
    from PIL import Image

    Image.fromarray(quantize(gray), mode="L").save(path, format="PNG")


GPU_PATHS = ("cupy", "cuda-driver")


def _open_gpu():
    """The first GPU backend that works, or NoGpuError naming why each failed.

    The environment variable IMGPROC_GPU_PATHS (comma-separated, default
    "cupy,cuda-driver") chooses which paths are tried and in which order, e.g.
    IMGPROC_GPU_PATHS=cuda-driver to exercise the driver path where CuPy exists.
    """
    import os

    from . import gpu_cupy, gpu_driver

    modules = {"cupy": gpu_cupy, "cuda-driver": gpu_driver}
    wanted = [p.strip() for p in os.environ.get("IMGPROC_GPU_PATHS", ",".join(GPU_PATHS)).split(",") if p.strip()]
    unknown = [p for p in wanted if p not in modules]
    if unknown or not wanted:
        raise ImgprocError(f"IMGPROC_GPU_PATHS: expected a comma-separated list of {', '.join(GPU_PATHS)}")
    reasons = []
    for path in wanted:
        try:
            return modules[path].open_backend()
        except NoGpuError as e:
            reasons.append(str(e))
    raise NoGpuError("no GPU path works: " + "; ".join(reasons))


def open_backend(device: str = "auto"):
    """A backend for ``device``: 'auto' (GPU if any works, else CPU), 'gpu'
    (CuPy, else the CUDA driver API; NoGpuError if neither works), 'cpu'.

    A backend has ``kind`` ('gpu' or 'cpu'), ``description`` (e.g. 'cuda-driver,
    NVIDIA H200'), ``label`` (e.g. 'gpu (cuda-driver, NVIDIA H200)'), ``process(rgb, sigma, scale)``
    returning the float32 result before quantization, and ``close()``.
    """
    from .cpu import CpuBackend

    if device == "cpu":
        return CpuBackend()
    if device == "gpu":
        return _open_gpu()
    if device == "auto":
        try:
            return _open_gpu()
        except NoGpuError:
            return CpuBackend()
    raise ValueError(f"unknown device {device!r}: expected one of {', '.join(DEVICES)}")
