"""Unit and end-to-end tests for imgproc, CPU only (stdlib unittest).

Run from recipes/python-cuda-images/app:
    python3 -m unittest discover -s tests -v
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

APP = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(APP))

from imgproc import cpu, load_rgb, quantize  # noqa: E402


def run_module(*args, env=None):
    """Run ``python -m <args>`` in the app directory; return CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=APP,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def no_gpu_env():
    """An environment in which neither CuPy nor the CUDA driver sees a device,
    even on a host with GPUs."""
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def png_chunk_types(data: bytes):
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, types = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        types.append(data[pos + 4 : pos + 8].decode("ascii"))
        pos += 12 + length
    return types


class GrayTest(unittest.TestCase):
    def test_weights(self):
        rgb = np.zeros((1, 4, 3), dtype=np.float32)
        rgb[0, 0] = (1, 0, 0)
        rgb[0, 1] = (0, 1, 0)
        rgb[0, 2] = (0, 0, 1)
        rgb[0, 3] = (1, 1, 1)
        gray = cpu.to_gray(rgb)
        self.assertEqual(gray.dtype, np.float32)
        np.testing.assert_allclose(gray[0], [0.299, 0.587, 0.114, 1.0], rtol=0, atol=1e-6)

    def test_rejects_non_rgb(self):
        with self.assertRaises(ValueError):
            cpu.to_gray(np.zeros((4, 4), dtype=np.float32))


class BlurTest(unittest.TestCase):
    def test_kernel(self):
        self.assertEqual(cpu.kernel_radius(1.5), 5)
        self.assertEqual(cpu.kernel_radius(1.0), 3)
        self.assertEqual(cpu.kernel_radius(0.0), 0)
        w = cpu.gaussian_kernel(1.5)
        self.assertEqual(w.dtype, np.float32)
        self.assertEqual(len(w), 11)
        self.assertAlmostEqual(float(w.sum(dtype=np.float64)), 1.0, places=6)
        np.testing.assert_array_equal(w, w[::-1])  # symmetric
        self.assertEqual(int(np.argmax(w)), 5)
        np.testing.assert_array_equal(cpu.gaussian_kernel(0.0), [1.0])
        for bad in (-1.0, float("nan"), float("inf")):
            with self.assertRaises(ValueError):
                cpu.kernel_radius(bad)

    def test_constant_stays_constant(self):
        img = np.full((17, 23), 0.37, dtype=np.float32)
        out = cpu.gaussian_blur(img, 2.0)
        self.assertEqual(out.shape, img.shape)
        np.testing.assert_allclose(out, 0.37, rtol=0, atol=1e-6)

    def test_impulse(self):
        sigma, n = 2.0, 31
        img = np.zeros((n, n), dtype=np.float32)
        img[n // 2, n // 2] = 1.0
        out = cpu.gaussian_blur(img, sigma)
        self.assertAlmostEqual(float(out.sum(dtype=np.float64)), 1.0, places=5)
        w = cpu.gaussian_kernel(sigma).astype(np.float64)
        r = (len(w) - 1) // 2
        expected = np.zeros((n, n))
        c = n // 2
        expected[c - r : c + r + 1, c - r : c + r + 1] = np.outer(w, w)
        np.testing.assert_allclose(out, expected, rtol=0, atol=1e-7)

    def test_clamp_to_edge(self):
        w = np.array([0.25, 0.5, 0.25], dtype=np.float32)
        left = np.array([[1, 0, 0, 0, 0]], dtype=np.float32)
        np.testing.assert_allclose(cpu.blur_rows(left, w)[0], [0.75, 0.25, 0, 0, 0], atol=0)
        right = left[:, ::-1].copy()
        np.testing.assert_allclose(cpu.blur_rows(right, w)[0], [0, 0, 0, 0.25, 0.75], atol=0)
        # Vertical pass: the same on a column.
        col = np.zeros((5, 3), dtype=np.float32)
        col[0, :] = 1.0
        out = cpu.gaussian_blur(col, 10.0)  # radius 30 > size: every tap clamps
        self.assertTrue(np.all(np.isfinite(out)))
        self.assertTrue(np.all(out[0] > out[4]))

    def test_sigma_zero_is_identity(self):
        img = np.random.default_rng(1).random((5, 7), dtype=np.float32)
        np.testing.assert_array_equal(cpu.gaussian_blur(img, 0.0), img)


class ResizeTest(unittest.TestCase):
    def test_output_size(self):
        self.assertEqual(cpu.output_size(480, 0.5), 240)
        self.assertEqual(cpu.output_size(5, 0.5), 3)  # 2.5 rounds half up
        self.assertEqual(cpu.output_size(3, 0.1), 1)  # at least one pixel
        with self.assertRaises(ValueError):
            cpu.output_size(4, 0.0)

    def test_constant(self):
        img = np.full((9, 13), 0.25, dtype=np.float32)
        for scale in (0.5, 0.3, 1.0, 1.7, 3.0):
            out = cpu.resize_bilinear(img, scale)
            self.assertEqual(out.shape, (cpu.output_size(9, scale), cpu.output_size(13, scale)))
            np.testing.assert_allclose(out, 0.25, rtol=0, atol=1e-7)

    def test_4x4_half(self):
        # Half-pixel centers: output pixel (i, j) samples source (2i + 0.5, 2j + 0.5),
        # the mean of each 2x2 block.
        img = np.array(
            [[0, 4, 8, 0],
             [4, 0, 0, 8],
             [2, 2, 6, 6],
             [0, 10, 2, 2]], dtype=np.float32)
        out = cpu.resize_bilinear(img, 0.5)
        np.testing.assert_allclose(out, [[2.0, 4.0], [3.5, 4.0]], rtol=0, atol=1e-6)

    def test_upscale_clamps(self):
        # 2 -> 4 pixels: source positions -0.25, 0.25, 0.75, 1.25 clamp to 0 and 1.
        img = np.array([[0.0, 1.0]], dtype=np.float32)
        out = cpu.resize_bilinear(img, 2.0)
        self.assertEqual(out.shape, (2, 4))
        np.testing.assert_allclose(out, [[0, 0.25, 0.75, 1], [0, 0.25, 0.75, 1]], rtol=0, atol=1e-7)

    def test_identity(self):
        img = np.random.default_rng(2).random((6, 8), dtype=np.float32)
        np.testing.assert_array_equal(cpu.resize_bilinear(img, 1.0), img)


class QuantizeTest(unittest.TestCase):
    def test_round_and_clip(self):
        got = quantize(np.array([-0.5, 0.0, 0.5 / 255, 1.5 / 255, 1.0, 2.0], dtype=np.float32))
        np.testing.assert_array_equal(got, [0, 0, 0, 2, 255, 255])  # rint: half to even


class CliTest(unittest.TestCase):
    def setUp(self):
        from imgproc.selftest import test_image
        from PIL import Image

        self.tmp = tempfile.TemporaryDirectory(prefix="imgproc-test-")
        self.dir = Path(self.tmp.name)
        self.rgb8 = test_image(64, 48)
        Image.fromarray(self.rgb8, mode="RGB").save(self.dir / "a.png", format="PNG")
        Image.fromarray(self.rgb8, mode="RGB").save(self.dir / "b.jpg", format="JPEG", quality=95)

    def tearDown(self):
        self.tmp.cleanup()

    def test_png_and_jpeg_round_trip(self):
        from PIL import Image

        out = self.dir / "out"
        r = run_module("imgproc", str(self.dir / "a.png"), str(self.dir / "b.jpg"),
                       "-o", str(out), "--device", "cpu", "--sigma", "1.0", "--scale", "0.5")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.strip().splitlines()
        self.assertEqual(len(lines), 2, r.stdout)
        self.assertIn("cpu (numpy)", lines[0])
        self.assertTrue(lines[0].endswith(str(out / "a.png")), lines[0])
        self.assertTrue(lines[1].endswith(str(out / "b.png")), lines[1])
        expected = quantize(cpu.process(self.rgb8.astype(np.float32) / np.float32(255), 1.0, 0.5))
        for name, atol in (("a.png", 0), ("b.png", 12)):  # JPEG is lossy
            with Image.open(out / name) as im:
                self.assertEqual(im.format, "PNG")
                self.assertEqual(im.mode, "L")
                self.assertEqual(im.size, (32, 24))
                got = np.asarray(im)
            diff = np.abs(got.astype(int) - expected.astype(int)).max()
            self.assertLessEqual(diff, atol, name)
        # Each output equals the in-process pipeline on the decoded input exactly.
        for src, name in (("a.png", "a.png"), ("b.jpg", "b.png")):
            with Image.open(out / name) as im:
                np.testing.assert_array_equal(
                    np.asarray(im), quantize(cpu.process(load_rgb(self.dir / src), 1.0, 0.5)))

    def test_deterministic_and_no_metadata(self):
        outs = []
        for i in range(2):
            out = self.dir / f"out{i}"
            r = run_module("imgproc", str(self.dir / "a.png"), "-o", str(out), "--device", "cpu")
            self.assertEqual(r.returncode, 0, r.stderr)
            outs.append((out / "a.png").read_bytes())
        self.assertEqual(outs[0], outs[1])
        self.assertEqual(set(png_chunk_types(outs[0])), {"IHDR", "IDAT", "IEND"})

    def test_gpu_without_gpu_fails_clearly(self):
        r = run_module("imgproc", str(self.dir / "a.png"), "-o", str(self.dir / "out"),
                       "--device", "gpu", env=no_gpu_env())
        self.assertEqual(r.returncode, 1)
        self.assertIn("imgproc: error: no GPU path works: cupy:", r.stderr)
        self.assertIn("; cuda-driver:", r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertFalse((self.dir / "out" / "a.png").exists())

    def test_auto_without_gpu_uses_cpu(self):
        r = run_module("imgproc", str(self.dir / "a.png"), "-o", str(self.dir / "out"), env=no_gpu_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("cpu (numpy)", r.stdout)

    def test_errors(self):
        out = str(self.dir / "out")
        (self.dir / "notes.txt").write_text("not an image")
        cases = [
            ([str(self.dir / "missing.png")], "missing.png"),
            ([str(self.dir / "notes.txt")], "not an image"),
            ([str(self.dir / "a.png"), "--sigma", "-1"], "sigma"),
            ([str(self.dir / "a.png"), "--scale", "0"], "scale"),
            ([str(self.dir / "a.png"), str(self.dir / "a.png")], "would both be written"),
        ]
        for args, needle in cases:
            with self.subTest(args=args):
                r = run_module("imgproc", *args, "-o", out, "--device", "cpu")
                self.assertEqual(r.returncode, 1, r.stdout)
                self.assertIn("imgproc: error:", r.stderr)
                self.assertIn(needle, r.stderr)


class SelftestTest(unittest.TestCase):
    def test_cpu_vs_cpu(self):
        r = run_module("imgproc.selftest", "--device", "cpu")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("over 76800 pixels: ok", r.stdout)
        self.assertTrue(r.stdout.strip().endswith(": ok"), r.stdout)

    def test_gpu_without_gpu_fails(self):
        r = run_module("imgproc.selftest", "--device", "gpu", env=no_gpu_env())
        self.assertEqual(r.returncode, 1)
        self.assertIn("no GPU path works", r.stderr)


if __name__ == "__main__":
    unittest.main()
