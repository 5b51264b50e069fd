"""Self-test: python3 -m imgproc.selftest [--device gpu|auto]

Generates a deterministic 640x480 test image, writes it as PNG and JPEG into
a temporary directory, runs the pipeline on the chosen GPU path and on the
CPU, and compares the float results (before quantization) with a tolerance:
GPUs contract multiply-adds into fma and round differently in the last bit.

Exit 0 when every comparison is within tolerance; 1 on a mismatch, or with
``--device gpu`` when no GPU path works. ``--device auto`` falls back to CPU
vs CPU when there is no GPU. The hidden ``--device cpu`` compares the CPU path
with itself (what CI runs on GPU-less hosts).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from . import ImgprocError, load_rgb, open_backend
from .cpu import CpuBackend

TOLERANCE = 1e-4

# (sigma, scale) pairs: the CLI's defaults, and an upscale with a wider kernel.
CASES = ((1.5, 0.5), (2.5, 1.25))


def test_image(width: int = 640, height: int = 480) -> np.ndarray:
    """A deterministic uint8 RGB image: gradients, a disc, a box, a checkerboard."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    r = x / (width - 1)
    g = y / (height - 1)
    b = 0.5 + 0.5 * np.sin(x / 23.0) * np.cos(y / 17.0)
    img = np.stack([r, g, b], axis=-1)
    # A disc of pure red.
    disc = (x - width * 0.3) ** 2 + (y - height * 0.4) ** 2 < (height * 0.2) ** 2
    img[disc] = (1.0, 0.0, 0.0)
    # A white box with a black border.
    box = (x >= width * 0.55) & (x < width * 0.85) & (y >= height * 0.2) & (y < height * 0.5)
    inner = (x >= width * 0.56) & (x < width * 0.84) & (y >= height * 0.22) & (y < height * 0.48)
    img[box] = (0.0, 0.0, 0.0)
    img[inner] = (1.0, 1.0, 1.0)
    # A fine checkerboard in the lower right (high frequencies for the blur).
    checker = (x >= width * 0.6) & (y >= height * 0.65) & (((x // 4) + (y // 4)) % 2 == 0)
    img[checker] = (0.1, 0.2, 0.9)
    return np.clip(np.rint(img * 255.0), 0, 255).astype(np.uint8)


def write_inputs(directory: Path):
    """The test image as selftest.png and selftest.jpg in ``directory``."""
    from PIL import Image

    im = Image.fromarray(test_image(), mode="RGB")
    png, jpg = directory / "selftest.png", directory / "selftest.jpg"
    im.save(png, format="PNG")
    im.save(jpg, format="JPEG", quality=90)
    return [png, jpg]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m imgproc.selftest", description=__doc__.splitlines()[0])
    # 'cpu' is accepted but not advertised: it compares the CPU path with itself.
    p.add_argument("--device", choices=("gpu", "auto", "cpu"), default="auto", help="gpu or auto (default auto)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)

    backend = None
    try:
        backend = open_backend(args.device)
        reference = CpuBackend()
        worst = 0.0
        ok = True
        with tempfile.TemporaryDirectory(prefix="imgproc-selftest-") as tmp:
            for path in write_inputs(Path(tmp)):
                rgb = load_rgb(path)
                for sigma, scale in CASES:
                    got = backend.process(rgb, sigma, scale)
                    want = reference.process(rgb, sigma, scale)
                    if got.shape != want.shape:
                        print(f"selftest: {path.name} sigma {sigma} scale {scale}: "
                              f"{backend.label} gave shape {got.shape}, cpu {want.shape}: FAILED")
                        ok = False
                        continue
                    diff = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
                    good = bool(np.isfinite(diff)) and diff <= TOLERANCE
                    ok &= good
                    worst = max(worst, diff) if np.isfinite(diff) else float("inf")
                    print(f"selftest: {path.name} sigma {sigma} scale {scale}: {backend.label} vs cpu: "
                          f"max |diff| {diff:.2g} over {want.size} pixels: {'ok' if good else 'FAILED'}")
        verdict = "ok" if ok else f"FAILED (tolerance {TOLERANCE:g})"
        print(f"selftest: {backend.label} vs cpu: max |diff| {worst:.2g}: {verdict}")
        return 0 if ok else 1
    except ImgprocError as e:
        print(f"selftest: error: {e}", file=sys.stderr)
        return 1
    finally:
        if backend is not None:
            backend.close()


if __name__ == "__main__":
    sys.exit(main())
