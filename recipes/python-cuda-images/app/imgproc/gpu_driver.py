"""The GPU path without CuPy: the CUDA driver API (libcuda.so.1) through
ctypes, running hand-written PTX.

There is no nvcc or NVRTC in the image, so the kernels are PTX text (ISA 7.0,
target sm_52, the same header as ocibuild's own smoke-test kernel), which the
driver compiles for the actual GPU when the module is loaded.

The whole pipeline runs on the device: ``gray`` -> ``blur_rows`` ->
``blur_cols`` -> ``resize``. The Gaussian weights and the resize taps (source
indices and fractions) are computed on the host by :mod:`imgproc.cpu` and
uploaded, so every path uses bit-identical coefficients. ``gray`` and
``resize`` use explicitly rounded ``mul.rn``/``add.rn`` (which the compiler
does not fuse), so they match NumPy exactly; the blur accumulates with
``fma.rn.f32``, which rounds once where NumPy rounds twice, hence the
selftest's tolerance.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import ImgprocError, NoGpuError
from . import cpu

BLOCK = 256  # threads per block; every kernel is one thread per output pixel

# Kernel names, in the order they appear in PTX below.
KERNELS = ("gray", "blur_rows", "blur_cols", "resize")

PTX = r"""
.version 7.0
.target sm_52
.address_size 64

// gray(const float* rgb, float* out, u32 n): out[i] = 0.299 r + 0.587 g + 0.114 b,
// with rgb interleaved (r, g, b) per pixel. Rounded like NumPy: (r*wr + g*wg) + b*wb.
.visible .entry gray(
	.param .u64 gray_param_rgb,
	.param .u64 gray_param_out,
	.param .u32 gray_param_n
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<9>;
	.reg .b32 	%r<7>;
	.reg .b64 	%rd<9>;

	ld.param.u64 	%rd1, [gray_param_rgb];
	ld.param.u64 	%rd2, [gray_param_out];
	ld.param.u32 	%r2, [gray_param_n];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.u32 	%p1, %r1, %r2;
	@%p1 bra 	$L__gray_done;
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mul.lo.u32 	%r6, %r1, 3;
	mul.wide.u32 	%rd5, %r6, 4;
	add.s64 	%rd6, %rd3, %rd5;
	ld.global.f32 	%f1, [%rd6];
	ld.global.f32 	%f2, [%rd6+4];
	ld.global.f32 	%f3, [%rd6+8];
	mul.rn.f32 	%f4, %f1, 0f3E991687;
	mul.rn.f32 	%f5, %f2, 0f3F1645A2;
	mul.rn.f32 	%f6, %f3, 0f3DE978D5;
	add.rn.f32 	%f7, %f4, %f5;
	add.rn.f32 	%f8, %f7, %f6;
	mul.wide.u32 	%rd7, %r1, 4;
	add.s64 	%rd8, %rd4, %rd7;
	st.global.f32 	[%rd8], %f8;
$L__gray_done:
	ret;
}

// blur_rows(const float* in, float* out, const float* w, u32 width, u32 height, u32 radius):
// out[y][x] = sum over k in [0, 2 radius] of w[k] * in[y][clamp(x + k - radius, 0, width - 1)].
.visible .entry blur_rows(
	.param .u64 blur_rows_param_in,
	.param .u64 blur_rows_param_out,
	.param .u64 blur_rows_param_w,
	.param .u32 blur_rows_param_width,
	.param .u32 blur_rows_param_height,
	.param .u32 blur_rows_param_radius
)
{
	.reg .pred 	%p<3>;
	.reg .f32 	%f<4>;
	.reg .b32 	%r<19>;
	.reg .b64 	%rd<12>;

	ld.param.u64 	%rd1, [blur_rows_param_in];
	ld.param.u64 	%rd2, [blur_rows_param_out];
	ld.param.u64 	%rd3, [blur_rows_param_w];
	ld.param.u32 	%r2, [blur_rows_param_width];
	ld.param.u32 	%r3, [blur_rows_param_height];
	ld.param.u32 	%r4, [blur_rows_param_radius];
	mov.u32 	%r5, %ctaid.x;
	mov.u32 	%r6, %ntid.x;
	mov.u32 	%r7, %tid.x;
	mad.lo.s32 	%r1, %r5, %r6, %r7;
	mul.lo.u32 	%r8, %r2, %r3;
	setp.ge.u32 	%p1, %r1, %r8;
	@%p1 bra 	$L__rows_done;
	cvta.to.global.u64 	%rd4, %rd1;
	cvta.to.global.u64 	%rd5, %rd2;
	cvta.to.global.u64 	%rd6, %rd3;
	div.u32 	%r9, %r1, %r2;
	mul.lo.u32 	%r10, %r9, %r2;
	sub.s32 	%r11, %r1, %r10;
	sub.s32 	%r12, %r2, 1;
	sub.s32 	%r13, %r11, %r4;
	shl.b32 	%r14, %r4, 1;
	mov.u32 	%r15, 0;
	mov.f32 	%f1, 0f00000000;
	mov.u64 	%rd7, %rd6;
$L__rows_loop:
	add.s32 	%r16, %r13, %r15;
	max.s32 	%r17, %r16, 0;
	min.s32 	%r17, %r17, %r12;
	add.s32 	%r18, %r10, %r17;
	mul.wide.u32 	%rd8, %r18, 4;
	add.s64 	%rd9, %rd4, %rd8;
	ld.global.f32 	%f2, [%rd9];
	ld.global.f32 	%f3, [%rd7];
	fma.rn.f32 	%f1, %f3, %f2, %f1;
	add.s64 	%rd7, %rd7, 4;
	add.s32 	%r15, %r15, 1;
	setp.le.u32 	%p2, %r15, %r14;
	@%p2 bra 	$L__rows_loop;
	mul.wide.u32 	%rd10, %r1, 4;
	add.s64 	%rd11, %rd5, %rd10;
	st.global.f32 	[%rd11], %f1;
$L__rows_done:
	ret;
}

// blur_cols(const float* in, float* out, const float* w, u32 width, u32 height, u32 radius):
// out[y][x] = sum over k in [0, 2 radius] of w[k] * in[clamp(y + k - radius, 0, height - 1)][x].
.visible .entry blur_cols(
	.param .u64 blur_cols_param_in,
	.param .u64 blur_cols_param_out,
	.param .u64 blur_cols_param_w,
	.param .u32 blur_cols_param_width,
	.param .u32 blur_cols_param_height,
	.param .u32 blur_cols_param_radius
)
{
	.reg .pred 	%p<3>;
	.reg .f32 	%f<4>;
	.reg .b32 	%r<19>;
	.reg .b64 	%rd<12>;

	ld.param.u64 	%rd1, [blur_cols_param_in];
	ld.param.u64 	%rd2, [blur_cols_param_out];
	ld.param.u64 	%rd3, [blur_cols_param_w];
	ld.param.u32 	%r2, [blur_cols_param_width];
	ld.param.u32 	%r3, [blur_cols_param_height];
	ld.param.u32 	%r4, [blur_cols_param_radius];
	mov.u32 	%r5, %ctaid.x;
	mov.u32 	%r6, %ntid.x;
	mov.u32 	%r7, %tid.x;
	mad.lo.s32 	%r1, %r5, %r6, %r7;
	mul.lo.u32 	%r8, %r2, %r3;
	setp.ge.u32 	%p1, %r1, %r8;
	@%p1 bra 	$L__cols_done;
	cvta.to.global.u64 	%rd4, %rd1;
	cvta.to.global.u64 	%rd5, %rd2;
	cvta.to.global.u64 	%rd6, %rd3;
	div.u32 	%r9, %r1, %r2;
	mul.lo.u32 	%r10, %r9, %r2;
	sub.s32 	%r11, %r1, %r10;
	sub.s32 	%r12, %r3, 1;
	sub.s32 	%r13, %r9, %r4;
	shl.b32 	%r14, %r4, 1;
	mov.u32 	%r15, 0;
	mov.f32 	%f1, 0f00000000;
	mov.u64 	%rd7, %rd6;
$L__cols_loop:
	add.s32 	%r16, %r13, %r15;
	max.s32 	%r17, %r16, 0;
	min.s32 	%r17, %r17, %r12;
	mad.lo.s32 	%r18, %r17, %r2, %r11;
	mul.wide.u32 	%rd8, %r18, 4;
	add.s64 	%rd9, %rd4, %rd8;
	ld.global.f32 	%f2, [%rd9];
	ld.global.f32 	%f3, [%rd7];
	fma.rn.f32 	%f1, %f3, %f2, %f1;
	add.s64 	%rd7, %rd7, 4;
	add.s32 	%r15, %r15, 1;
	setp.le.u32 	%p2, %r15, %r14;
	@%p2 bra 	$L__cols_loop;
	mul.wide.u32 	%rd10, %r1, 4;
	add.s64 	%rd11, %rd5, %rd10;
	st.global.f32 	[%rd11], %f1;
$L__cols_done:
	ret;
}

// resize(const float* in, float* out, const s32* x0, const s32* x1, const float* fx,
//        const s32* y0, const s32* y1, const float* fy, u32 in_width, u32 out_width, u32 out_height):
// bilinear with host-computed taps; top = in[y0][x0] (1 - fx) + in[y0][x1] fx, bottom likewise
// on row y1, out = top (1 - fy) + bottom fy, each operation rounded like NumPy.
.visible .entry resize(
	.param .u64 resize_param_in,
	.param .u64 resize_param_out,
	.param .u64 resize_param_x0,
	.param .u64 resize_param_x1,
	.param .u64 resize_param_fx,
	.param .u64 resize_param_y0,
	.param .u64 resize_param_y1,
	.param .u64 resize_param_fy,
	.param .u32 resize_param_in_width,
	.param .u32 resize_param_out_width,
	.param .u32 resize_param_out_height
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<19>;
	.reg .b32 	%r<20>;
	.reg .b64 	%rd<27>;

	ld.param.u64 	%rd1, [resize_param_in];
	ld.param.u64 	%rd2, [resize_param_out];
	ld.param.u64 	%rd3, [resize_param_x0];
	ld.param.u64 	%rd4, [resize_param_x1];
	ld.param.u64 	%rd5, [resize_param_fx];
	ld.param.u64 	%rd6, [resize_param_y0];
	ld.param.u64 	%rd7, [resize_param_y1];
	ld.param.u64 	%rd8, [resize_param_fy];
	ld.param.u32 	%r2, [resize_param_in_width];
	ld.param.u32 	%r3, [resize_param_out_width];
	ld.param.u32 	%r4, [resize_param_out_height];
	mov.u32 	%r5, %ctaid.x;
	mov.u32 	%r6, %ntid.x;
	mov.u32 	%r7, %tid.x;
	mad.lo.s32 	%r1, %r5, %r6, %r7;
	mul.lo.u32 	%r8, %r3, %r4;
	setp.ge.u32 	%p1, %r1, %r8;
	@%p1 bra 	$L__resize_done;
	cvta.to.global.u64 	%rd9, %rd1;
	cvta.to.global.u64 	%rd10, %rd2;
	cvta.to.global.u64 	%rd11, %rd3;
	cvta.to.global.u64 	%rd12, %rd4;
	cvta.to.global.u64 	%rd13, %rd5;
	cvta.to.global.u64 	%rd14, %rd6;
	cvta.to.global.u64 	%rd15, %rd7;
	cvta.to.global.u64 	%rd16, %rd8;
	div.u32 	%r9, %r1, %r3;
	mul.lo.u32 	%r10, %r9, %r3;
	sub.s32 	%r11, %r1, %r10;
	mul.wide.u32 	%rd17, %r11, 4;
	mul.wide.u32 	%rd18, %r9, 4;
	add.s64 	%rd19, %rd11, %rd17;
	ld.global.u32 	%r12, [%rd19];
	add.s64 	%rd19, %rd12, %rd17;
	ld.global.u32 	%r13, [%rd19];
	add.s64 	%rd19, %rd13, %rd17;
	ld.global.f32 	%f1, [%rd19];
	add.s64 	%rd19, %rd14, %rd18;
	ld.global.u32 	%r14, [%rd19];
	add.s64 	%rd19, %rd15, %rd18;
	ld.global.u32 	%r15, [%rd19];
	add.s64 	%rd19, %rd16, %rd18;
	ld.global.f32 	%f2, [%rd19];
	mad.lo.s32 	%r16, %r14, %r2, %r12;
	mad.lo.s32 	%r17, %r14, %r2, %r13;
	mad.lo.s32 	%r18, %r15, %r2, %r12;
	mad.lo.s32 	%r19, %r15, %r2, %r13;
	mul.wide.u32 	%rd20, %r16, 4;
	add.s64 	%rd21, %rd9, %rd20;
	ld.global.f32 	%f3, [%rd21];
	mul.wide.u32 	%rd22, %r17, 4;
	add.s64 	%rd23, %rd9, %rd22;
	ld.global.f32 	%f4, [%rd23];
	mul.wide.u32 	%rd24, %r18, 4;
	add.s64 	%rd25, %rd9, %rd24;
	ld.global.f32 	%f5, [%rd25];
	mul.wide.u32 	%rd20, %r19, 4;
	add.s64 	%rd21, %rd9, %rd20;
	ld.global.f32 	%f6, [%rd21];
	mov.f32 	%f7, 0f3F800000;
	sub.rn.f32 	%f8, %f7, %f1;
	sub.rn.f32 	%f9, %f7, %f2;
	mul.rn.f32 	%f10, %f3, %f8;
	mul.rn.f32 	%f11, %f4, %f1;
	add.rn.f32 	%f12, %f10, %f11;
	mul.rn.f32 	%f13, %f5, %f8;
	mul.rn.f32 	%f14, %f6, %f1;
	add.rn.f32 	%f15, %f13, %f14;
	mul.rn.f32 	%f16, %f12, %f9;
	mul.rn.f32 	%f17, %f15, %f2;
	add.rn.f32 	%f18, %f16, %f17;
	mul.wide.u32 	%rd25, %r1, 4;
	add.s64 	%rd26, %rd10, %rd25;
	st.global.f32 	[%rd26], %f18;
$L__resize_done:
	ret;
}
"""

# ---------------------------------------------------------------------------
# ctypes bindings

CUresult = ctypes.c_int
CUdevice = ctypes.c_int
CUdeviceptr = ctypes.c_uint64
CUcontext = ctypes.c_void_p
CUmodule = ctypes.c_void_p
CUfunction = ctypes.c_void_p

CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6

# name -> argument types; every function returns CUresult.
_SIGNATURES = {
    "cuInit": [ctypes.c_uint],
    "cuGetErrorName": [CUresult, ctypes.POINTER(ctypes.c_char_p)],
    "cuDeviceGetCount": [ctypes.POINTER(ctypes.c_int)],
    "cuDeviceGet": [ctypes.POINTER(CUdevice), ctypes.c_int],
    "cuDeviceGetName": [ctypes.c_char_p, ctypes.c_int, CUdevice],
    "cuDevicePrimaryCtxRetain": [ctypes.POINTER(CUcontext), CUdevice],
    "cuDevicePrimaryCtxRelease_v2": [CUdevice],
    "cuCtxSetCurrent": [CUcontext],
    "cuCtxSynchronize": [],
    "cuModuleLoadDataEx": [ctypes.POINTER(CUmodule), ctypes.c_char_p, ctypes.c_uint,
                           ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_void_p)],
    "cuModuleUnload": [CUmodule],
    "cuModuleGetFunction": [ctypes.POINTER(CUfunction), CUmodule, ctypes.c_char_p],
    "cuMemAlloc_v2": [ctypes.POINTER(CUdeviceptr), ctypes.c_size_t],
    "cuMemFree_v2": [CUdeviceptr],
    "cuMemcpyHtoD_v2": [CUdeviceptr, ctypes.c_void_p, ctypes.c_size_t],
    "cuMemcpyDtoH_v2": [ctypes.c_void_p, CUdeviceptr, ctypes.c_size_t],
    "cuLaunchKernel": [CUfunction, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                       ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                       ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)],
}


class CudaError(ImgprocError):
    pass


class _Driver:
    """libcuda.so.1 with typed entry points and error checking."""

    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise NoGpuError(f"cuda-driver: cannot load libcuda.so.1 ({e})") from None
        for name, argtypes in _SIGNATURES.items():
            try:
                fn = getattr(self.lib, name)
            except AttributeError:
                raise NoGpuError(f"cuda-driver: libcuda.so.1 has no {name} (driver too old?)") from None
            fn.argtypes = argtypes
            fn.restype = CUresult

    def error_name(self, result: int) -> str:
        name = ctypes.c_char_p()
        if self.lib.cuGetErrorName(result, ctypes.byref(name)) == 0 and name.value:
            return name.value.decode()
        return f"CUDA error {result}"

    def check(self, result: int, what: str) -> None:
        if result != 0:
            raise CudaError(f"cuda-driver: {what}: {self.error_name(result)}")

    def __getattr__(self, name):
        # Convenience: self.cuFoo(...) calls the bound library function.
        if not name.startswith("cu"):
            raise AttributeError(name)
        return getattr(self.lib, name)


class DriverBackend:
    kind = "gpu"

    def __init__(self):
        self._cu = cu = _Driver()
        self._ctx = None
        self._module = None
        try:
            cu.check(cu.cuInit(0), "cuInit")
            count = ctypes.c_int()
            cu.check(cu.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
            if count.value < 1:
                raise CudaError("cuda-driver: no CUDA device")
            self._device = CUdevice()
            cu.check(cu.cuDeviceGet(ctypes.byref(self._device), 0), "cuDeviceGet")
            name = ctypes.create_string_buffer(256)
            cu.check(cu.cuDeviceGetName(name, len(name), self._device), "cuDeviceGetName")
            self.device_name = name.value.decode(errors="replace")
            ctx = CUcontext()
            cu.check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), self._device), "cuDevicePrimaryCtxRetain")
            self._ctx = ctx
            cu.check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
            self._module = self._load_module()
            self._functions = {}
            for kernel in KERNELS:
                fn = CUfunction()
                cu.check(cu.cuModuleGetFunction(ctypes.byref(fn), self._module, kernel.encode()),
                         f"cuModuleGetFunction({kernel})")
                self._functions[kernel] = fn
        except CudaError as e:
            self.close()
            raise NoGpuError(str(e)) from None
        self.description = f"cuda-driver, {self.device_name}"
        self.label = f"gpu ({self.description})"

    def _load_module(self):
        """JIT-compile the PTX; on failure, the error includes the JIT's log."""
        cu = self._cu
        log = ctypes.create_string_buffer(8192)
        options = (ctypes.c_int * 2)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        values = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p).value, len(log))
        module = CUmodule()
        result = cu.cuModuleLoadDataEx(ctypes.byref(module), PTX.encode() + b"\0", 2, options, values)
        if result != 0:
            detail = log.value.decode(errors="replace").strip()
            raise CudaError(f"cuda-driver: loading the PTX: {cu.error_name(result)}"
                            + (f": {detail}" if detail else ""))
        return module

    # -- device memory ------------------------------------------------------

    def _alloc(self, nbytes: int, owned: list) -> int:
        ptr = CUdeviceptr()
        self._cu.check(self._cu.cuMemAlloc_v2(ctypes.byref(ptr), max(nbytes, 4)), f"cuMemAlloc({nbytes})")
        owned.append(ptr.value)
        return ptr.value

    def _upload(self, array: np.ndarray, owned: list) -> int:
        array = np.ascontiguousarray(array)
        ptr = self._alloc(array.nbytes, owned)
        self._cu.check(self._cu.cuMemcpyHtoD_v2(ptr, array.ctypes.data, array.nbytes), "cuMemcpyHtoD")
        return ptr

    def _launch(self, kernel: str, n: int, *args) -> None:
        """Launch ``kernel`` with one thread per element of ``n``.

        ``args`` are ctypes values (c_uint64 for pointers, c_uint32 for u32),
        in the order of the kernel's parameters.
        """
        params = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])
        grid = (n + BLOCK - 1) // BLOCK
        self._cu.check(
            self._cu.cuLaunchKernel(self._functions[kernel], grid, 1, 1, BLOCK, 1, 1, 0, None, params, None),
            f"cuLaunchKernel({kernel})",
        )

    # -- the pipeline -----------------------------------------------------------

    def process(self, rgb: np.ndarray, sigma: float, scale: float) -> np.ndarray:
        rgb = np.ascontiguousarray(rgb, dtype=np.float32)
        if rgb.ndim != 3 or rgb.shape[2] != 3:
            raise ValueError(f"expected an (h, w, 3) RGB array, got shape {rgb.shape}")
        h, w = rgb.shape[:2]
        n = h * w
        if 3 * n >= 2**31:
            raise ImgprocError(f"cuda-driver: image too large ({w}x{h})")
        weights = cpu.gaussian_kernel(sigma)
        radius = (len(weights) - 1) // 2
        out_h, out_w = cpu.output_size(h, scale), cpu.output_size(w, scale)
        x0, x1, fx = cpu.resize_taps(w, out_w)
        y0, y1, fy = cpu.resize_taps(h, out_h)

        u64, u32 = ctypes.c_uint64, ctypes.c_uint32
        cu = self._cu
        owned = []
        try:
            cu.check(cu.cuCtxSetCurrent(self._ctx), "cuCtxSetCurrent")
            d_rgb = self._upload(rgb, owned)
            d_a = self._alloc(4 * n, owned)
            d_b = self._alloc(4 * n, owned)
            d_w = self._upload(weights, owned)
            taps = [self._upload(a, owned) for a in (x0, x1, fx, y0, y1, fy)]
            d_out = self._alloc(4 * out_h * out_w, owned)

            self._launch("gray", n, u64(d_rgb), u64(d_a), u32(n))
            self._launch("blur_rows", n, u64(d_a), u64(d_b), u64(d_w), u32(w), u32(h), u32(radius))
            self._launch("blur_cols", n, u64(d_b), u64(d_a), u64(d_w), u32(w), u32(h), u32(radius))
            self._launch("resize", out_h * out_w, u64(d_a), u64(d_out), *[u64(t) for t in taps],
                         u32(w), u32(out_w), u32(out_h))
            cu.check(cu.cuCtxSynchronize(), "cuCtxSynchronize")

            out = np.empty((out_h, out_w), dtype=np.float32)
            cu.check(cu.cuMemcpyDtoH_v2(out.ctypes.data, d_out, out.nbytes), "cuMemcpyDtoH")
            return out
        finally:
            for ptr in owned:
                cu.cuMemFree_v2(ptr)

    def close(self) -> None:
        cu = self._cu
        if self._module is not None:
            cu.cuModuleUnload(self._module)
            self._module = None
        if self._ctx is not None:
            cu.cuDevicePrimaryCtxRelease_v2(self._device)
            self._ctx = None


def open_backend() -> DriverBackend:
    """A working CUDA driver backend, or NoGpuError saying why not."""
    return DriverBackend()
