"""Command line: python3 -m imgproc INPUT... -o OUTDIR [--sigma S] [--scale F] [--device D]"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import DEVICES, ImgprocError, load_rgb, open_backend, save_gray_png
from .cpu import kernel_radius, output_size


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python3 -m imgproc",
        description="Grayscale, Gaussian-blur and resize PNG/JPEG images; write 8-bit grayscale PNGs.",
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="PNG or JPEG files")
    p.add_argument("-o", "--outdir", required=True, help="directory for the outputs (created if missing)")
    p.add_argument("--sigma", type=float, default=1.5, help="Gaussian sigma in pixels, >= 0 (default 1.5)")
    p.add_argument("--scale", type=float, default=0.5, help="resize factor, > 0 (default 0.5)")
    p.add_argument("--device", choices=DEVICES, default="auto", help="where to compute (default auto)")
    return p.parse_args(argv)


def output_paths(inputs, outdir: Path):
    """OUTDIR/<input stem>.png for each input; refuse two inputs with one output."""
    seen = {}
    paths = []
    for src in inputs:
        dst = outdir / (Path(src).stem + ".png")
        if dst in seen:
            raise ImgprocError(f"{src} and {seen[dst]} would both be written to {dst}")
        if Path(src).resolve() == dst.resolve():
            raise ImgprocError(f"{src}: the output {dst} would overwrite the input")
        seen[dst] = src
        paths.append(dst)
    return paths


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    backend = None
    try:
        # Check the numbers before touching any device.
        kernel_radius(args.sigma)
        output_size(1, args.scale)
        outdir = Path(args.outdir)
        dsts = output_paths(args.inputs, outdir)
        backend = open_backend(args.device)
        outdir.mkdir(parents=True, exist_ok=True)
        for src, dst in zip(args.inputs, dsts):
            rgb = load_rgb(src)
            result = backend.process(rgb, args.sigma, args.scale)
            save_gray_png(result, dst)
            print(f"{src}: {backend.label} -> {dst}", flush=True)
    except (ImgprocError, ValueError) as e:
        print(f"imgproc: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"imgproc: error: {e}", file=sys.stderr)
        return 1
    finally:
        if backend is not None:
            backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
