"""Unit and end-to-end tests for imgproc, CPU only (stdlib unittest).

Run from recipes/python-cuda-images/app:
    python3 -m unittest discover -s tests -v
"""

from __future__ import annotations

import os
import re
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
    env.pop("IMGPROC_GPU_PATHS", None)
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


class PtxLintTest(unittest.TestCase):
    """Static checks of the hand-written PTX in gpu_driver (no GPU needed).

    Not a PTX parser: it catches the slips that are easy to make by hand
    (undeclared or out-of-range registers, register classes that do not
    match the instruction's type, unknown params or labels, missing ret).
    """

    # Register class prefix for each PTX type suffix.
    REG_CLASS = {"f32": "f", "u32": "r", "s32": "r", "b32": "r", "u64": "rd", "s64": "rd", "b64": "rd", "pred": "p"}

    @classmethod
    def setUpClass(cls):
        from imgproc import gpu_driver

        cls.mod = gpu_driver
        # Drop // comments.
        cls.ptx = "\n".join(line.split("//", 1)[0].rstrip() for line in gpu_driver.PTX.splitlines())
        cls.entries = {}
        for m in re.finditer(r"\.visible\s+\.entry\s+(\w+)\s*\((.*?)\)\s*\{(.*?)\n\}", cls.ptx, re.S):
            cls.entries[m.group(1)] = (m.group(2), m.group(3))

    def test_header(self):
        lines = [l.strip() for l in self.ptx.splitlines() if l.strip()]
        self.assertEqual(lines[:3], [".version 7.0", ".target sm_52", ".address_size 64"])

    def test_balanced(self):
        for open_, close in ("{}", "()", "[]"):
            depth = 0
            for ch in self.ptx:
                depth += (ch == open_) - (ch == close)
                self.assertGreaterEqual(depth, 0, f"unbalanced {open_}{close}")
            self.assertEqual(depth, 0, f"unbalanced {open_}{close}")

    def test_entries(self):
        self.assertEqual(list(self.entries), list(self.mod.KERNELS))
        self.assertEqual(len(re.findall(r"\.entry\b", self.ptx)), len(self.mod.KERNELS))
        for name in self.mod.KERNELS:
            self.assertEqual(len(re.findall(r"\.visible\s+\.entry\s+%s\s*\(" % name, self.ptx)), 1, name)

    def instructions(self, body):
        """(line, guard-stripped instruction) for each statement of a body."""
        for line in body.splitlines():
            line = line.strip()
            if not line or line.startswith(".reg") or line.endswith(":"):
                continue
            self.assertTrue(line.endswith(";"), f"missing ';': {line}")
            yield line, re.sub(r"^@!?%p\d+\s+", "", line[:-1]).strip()

    def test_registers_declared_and_in_range(self):
        for name, (_, body) in self.entries.items():
            declared = {}
            for cls_, typ, count in re.findall(r"\.reg\s+\.(\w+)\s+%(\w+?)<(\d+)>;", body):
                self.assertNotIn(typ, declared, f"{name}: %{typ} declared twice")
                self.assertEqual(self.REG_CLASS[cls_], typ, f"{name}: .reg .{cls_} %{typ}")
                declared[typ] = int(count)
            for _, inst in self.instructions(body):
                for typ, idx in re.findall(r"%(rd|r|f|p)(\d+)\b", inst):
                    self.assertIn(typ, declared, f"{name}: %{typ}{idx} not declared: {inst}")
                    self.assertLess(int(idx), declared[typ], f"{name}: %{typ}{idx} out of range: {inst}")

    def test_register_classes_match_types(self):
        for name, (_, body) in self.entries.items():
            for line, inst in self.instructions(body):
                if inst == "ret":
                    continue
                opcode, _, rest = inst.partition(" ")
                parts = opcode.split(".")
                operands = [o.strip() for o in rest.split(",")] if rest else []
                if parts[0] == "bra":
                    continue
                want = self.REG_CLASS[parts[-1]]
                for i, op in enumerate(operands):
                    if op.startswith("["):  # an address: a 64-bit register or a param name
                        inner = op.strip("[]").split("+")[0]
                        if inner.startswith("%"):
                            self.assertRegex(inner, r"^%rd\d+$", f"{name}: {line}")
                        continue
                    m = re.match(r"^%(rd|r|f|p)\d+$", op)
                    if not m:
                        continue  # immediates, special registers (%tid.x), float literals
                    expect = want
                    if parts[0] == "setp" and i == 0:
                        expect = "p"
                    if opcode == "mul.wide.u32" and i == 0:
                        expect = "rd"
                    self.assertEqual(m.group(1), expect, f"{name}: operand {op} of {line}")

    def test_params(self):
        for name, (params, body) in self.entries.items():
            declared = re.findall(r"\.param\s+\.(?:u64|u32)\s+(\w+)", params)
            self.assertTrue(all(p.startswith(name + "_param_") for p in declared), declared)
            used = re.findall(r"ld\.param\.(u64|u32)\s+%\w+,\s*\[(\w+)\]", body)
            self.assertEqual(sorted(p for _, p in used), sorted(declared), f"{name}: each param loaded once")
            types = {p: t for t, p in re.findall(r"\.param\s+\.(u64|u32)\s+(\w+)", params)}
            for t, p in used:
                self.assertEqual(types[p], t, f"{name}: {p} loaded as .{t}")

    def test_labels_and_ret(self):
        defined = re.findall(r"^\s*(\$?\w+):\s*$", self.ptx, re.M)
        self.assertEqual(len(defined), len(set(defined)), f"duplicate labels: {defined}")
        for name, (_, body) in self.entries.items():
            local = set(re.findall(r"^\s*(\$?\w+):\s*$", body, re.M))
            for target in re.findall(r"\bbra(?:\.uni)?\s+(\$?\w+)\s*;", body):
                self.assertIn(target, local, f"{name}: branch to unknown label {target}")
            last = [l.strip() for l in body.splitlines() if l.strip()][-1]
            self.assertEqual(last, "ret;", f"{name} does not end with ret;")

    def test_gray_constants(self):
        body = self.entries["gray"][1]
        got = [struct.unpack(">f", bytes.fromhex(h))[0] for h in re.findall(r"0f([0-9A-F]{8})", body)]
        want = [float(np.float32(w)) for w in cpu.GRAY_WEIGHTS]
        self.assertEqual(got, want)

    def test_kernel_params_match_launches(self):
        """The number of params of each entry equals the arguments process() passes."""
        import inspect

        src = inspect.getsource(self.mod.DriverBackend.process)
        counts = {name: len(re.findall(r"\.param\s", params)) for name, (params, _) in self.entries.items()}
        self.assertEqual(counts, {"gray": 3, "blur_rows": 6, "blur_cols": 6, "resize": 11})
        for name in counts:
            self.assertIn(f'self._launch("{name}"', src)


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
