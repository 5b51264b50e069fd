"""The reference pipeline, in NumPy.

Every function takes an optional array module ``xp`` (``numpy`` by default).
The CuPy path (:mod:`imgproc.gpu_cupy`) runs these same functions with
``xp=cupy``, so the arithmetic is written once and both paths agree up to the
rounding of the device's float32 operations.

All images are float32. A grayscale image is a 2-D array (height, width); an
RGB image is (height, width, 3). Values are in [0, 1].
"""

from __future__ import annotations

import math

import numpy as np

# ITU-R BT.601 luma weights.
GRAY_WEIGHTS = (0.299, 0.587, 0.114)


def to_gray(rgb, xp=np):
    """RGB (h, w, 3) float32 -> grayscale (h, w) float32, BT.601 weights."""
    if rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"expected an (h, w, 3) RGB array, got shape {rgb.shape}")
    rgb = rgb.astype(xp.float32, copy=False)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    wr, wg, wb = (xp.float32(w) for w in GRAY_WEIGHTS)
    return (r * wr + g * wg + b * wb).astype(xp.float32, copy=False)


def kernel_radius(sigma: float) -> int:
    """Radius of the Gaussian kernel: ceil(3 * sigma); 0 for sigma == 0."""
    if not (sigma >= 0.0) or math.isinf(sigma):
        raise ValueError(f"sigma must be a finite number >= 0, got {sigma}")
    return int(math.ceil(3.0 * sigma))


def gaussian_kernel(sigma: float) -> np.ndarray:
    """The normalized 1-D Gaussian weights, length 2 * radius + 1, float32.

    Always computed on the host with NumPy (it is tiny); the GPU paths upload
    it, so every path blurs with bit-identical weights. ``sigma == 0`` gives the
    identity kernel ``[1.0]``.
    """
    radius = kernel_radius(sigma)
    if radius == 0:
        return np.ones(1, dtype=np.float32)
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    w = np.exp(-(x * x) / (2.0 * sigma * sigma))
    w /= w.sum()
    return w.astype(np.float32)


def blur_rows(img, weights, xp=np):
    """Convolve each row of a 2-D image with ``weights`` (odd length).

    Borders clamp to the edge: a tap left of column 0 reads column 0, a tap
    right of the last column reads the last column. Taps are accumulated left
    to right in float32, as the GPU kernels do.
    """
    weights = np.asarray(weights, dtype=np.float32)
    radius = (len(weights) - 1) // 2
    h, w = img.shape
    # Edge padding is the clamp-to-edge rule; out[:, x] += w[k] * in[:, x + k - r].
    padded = xp.pad(img.astype(xp.float32, copy=False), ((0, 0), (radius, radius)), mode="edge")
    out = xp.zeros((h, w), dtype=xp.float32)
    for k in range(len(weights)):
        out += xp.float32(weights[k]) * padded[:, k : k + w]
    return out


def gaussian_blur(img, sigma: float, xp=np):
    """Separable Gaussian blur of a 2-D image: rows, then columns."""
    weights = gaussian_kernel(sigma)
    if len(weights) == 1:
        return img.astype(xp.float32, copy=True)
    horizontal = blur_rows(img, weights, xp)
    # The vertical pass is the row pass on the transposed image.
    return xp.ascontiguousarray(blur_rows(xp.ascontiguousarray(horizontal.T), weights, xp).T)


def output_size(size: int, scale: float) -> int:
    """Length of one side after scaling: round half up, at least 1."""
    if not (scale > 0.0) or math.isinf(scale):
        raise ValueError(f"scale must be a finite number > 0, got {scale}")
    return max(1, int(math.floor(size * scale + 0.5)))


def resize_taps(src_size: int, dst_size: int):
    """Source indices and weights for bilinear resampling along one axis.

    Half-pixel centers (align_corners=False, OpenCV's INTER_LINEAR without
    antialiasing): destination pixel ``d`` samples source coordinate
    ``(d + 0.5) * src_size / dst_size - 0.5``, clamped to [0, src_size - 1].
    Returns (i0, i1, frac) with ``value = src[i0] * (1 - frac) + src[i1] * frac``;
    i0/i1 are int32 and frac is float32, all computed on the host in float64.
    """
    ratio = src_size / dst_size
    pos = (np.arange(dst_size, dtype=np.float64) + 0.5) * ratio - 0.5
    pos = np.clip(pos, 0.0, src_size - 1)
    i0 = np.floor(pos).astype(np.int32)
    i1 = np.minimum(i0 + 1, src_size - 1).astype(np.int32)
    frac = (pos - i0).astype(np.float32)
    return i0, i1, frac


def resize_bilinear(img, scale: float, xp=np):
    """Bilinear resize of a 2-D image by ``scale`` (same factor on both axes).

    Interpolates along rows (x) first, then along columns (y).
    """
    h, w = img.shape
    out_h, out_w = output_size(h, scale), output_size(w, scale)
    x0, x1, fx = (xp.asarray(a) for a in resize_taps(w, out_w))
    y0, y1, fy = (xp.asarray(a) for a in resize_taps(h, out_h))
    img = img.astype(xp.float32, copy=False)
    one = xp.float32(1.0)
    # Horizontal: (h, out_w).
    rows = img[:, x0] * (one - fx)[None, :] + img[:, x1] * fx[None, :]
    # Vertical: (out_h, out_w).
    out = rows[y0, :] * (one - fy)[:, None] + rows[y1, :] * fy[:, None]
    return out.astype(xp.float32, copy=False)


def process(rgb, sigma: float, scale: float, xp=np):
    """The whole pipeline on an RGB float32 array: gray -> blur -> resize."""
    return resize_bilinear(gaussian_blur(to_gray(rgb, xp), sigma, xp), scale, xp)


class CpuBackend:
    """The NumPy path. Same interface as the GPU backends."""

    kind = "cpu"
    description = "numpy"
    label = "cpu (numpy)"

    def process(self, rgb: np.ndarray, sigma: float, scale: float) -> np.ndarray:
        return process(np.asarray(rgb, dtype=np.float32), sigma, scale)

    def close(self) -> None:
        pass
