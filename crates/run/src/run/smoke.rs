//! The built-in `cuda-smoke` check: a vector add on the GPU through the CUDA driver API
//! (cudarc, libcuda loaded at run time), with a hand-written PTX kernel and a known answer.
//!
//! It runs inside the container as the ocibuild binary itself (`ocibuild cuda-smoke`, a hidden
//! subcommand), so it needs nothing from the image but glibc, and the driver's libraries that the
//! test stage bind-mounts.
// FFI: dlopen/dlerror for libcuda, and the CUDA driver API through cudarc.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use serde::Serialize;

/// Elements in the vector add: 2^20.
pub const ELEMENTS: usize = 1 << 20;

/// Threads per block (any GPU since sm_20 allows 1024; 256 is the safe, ordinary choice).
const BLOCK: u32 = 256;

/// `c[i] = a[i] + b[i]` for `i < n`. PTX ISA 7.0 for sm_52 with 64-bit addresses: old on
/// purpose, so that any driver from CUDA 11.0 on JIT-compiles it for whatever GPU it finds
/// (a newer ISA fails on older drivers with CUDA_ERROR_UNSUPPORTED_PTX_VERSION).
pub const VADD_PTX: &str = r"
.version 7.0
.target sm_52
.address_size 64

.visible .entry vadd(
	.param .u64 vadd_param_a,
	.param .u64 vadd_param_b,
	.param .u64 vadd_param_c,
	.param .u32 vadd_param_n
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<4>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<11>;

	ld.param.u64 	%rd1, [vadd_param_a];
	ld.param.u64 	%rd2, [vadd_param_b];
	ld.param.u64 	%rd3, [vadd_param_c];
	ld.param.u32 	%r2, [vadd_param_n];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.u32 	%p1, %r1, %r2;
	@%p1 bra 	$L__done;
	cvta.to.global.u64 	%rd4, %rd1;
	cvta.to.global.u64 	%rd5, %rd2;
	cvta.to.global.u64 	%rd6, %rd3;
	mul.wide.u32 	%rd7, %r1, 4;
	add.s64 	%rd8, %rd4, %rd7;
	add.s64 	%rd9, %rd5, %rd7;
	add.s64 	%rd10, %rd6, %rd7;
	ld.global.f32 	%f1, [%rd8];
	ld.global.f32 	%f2, [%rd9];
	add.rn.f32 	%f3, %f1, %f2;
	st.global.f32 	[%rd10], %f3;
$L__done:
	ret;
}
";

/// What the check found. `mismatches == 0` is a pass.
#[derive(Debug, Clone, Serialize)]
pub struct SmokeReport {
    pub device_count: i32,
    /// Device 0's name, e.g. "NVIDIA H200".
    pub device: String,
    pub compute_capability: (i32, i32),
    /// `cuDriverGetVersion`: 1000 * major + 10 * minor, e.g. 13000.
    pub driver_version: i32,
    pub elements: usize,
    pub mismatches: usize,
    pub first_mismatch: Option<Mismatch>,
    /// Upload, kernel, download.
    pub elapsed_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Mismatch {
    pub index: usize,
    pub expected: f32,
    pub got: f32,
}

impl SmokeReport {
    pub fn passed(&self) -> bool {
        self.mismatches == 0
    }
}

/// `13000` → `"13.0"`.
pub fn driver_version_text(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

impl fmt::Display for SmokeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "device 0 of {}: {} (sm_{}{}), driver API {} ({})",
            self.device_count,
            self.device,
            self.compute_capability.0,
            self.compute_capability.1,
            driver_version_text(self.driver_version),
            self.driver_version
        )?;
        write!(
            f,
            "vadd over {} floats: {} mismatches in {:.1} ms",
            self.elements, self.mismatches, self.elapsed_ms
        )?;
        if let Some(m) = &self.first_mismatch {
            write!(
                f,
                " (first at {}: expected {}, got {})",
                m.index, m.expected, m.got
            )?;
        }
        write!(
            f,
            "\ncuda-smoke: {}",
            if self.passed() { "PASSED" } else { "FAILED" }
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SmokeError {
    #[error(
        "libcuda.so.1 not found: no NVIDIA driver on this host or not passed into the container \
         ({detail})"
    )]
    NoDriver { detail: String },
    #[error(
        "libcuda.so.1 was found but cannot be loaded: {detail} (the image lacks a library the \
         NVIDIA driver links against, such as libdl.so.2, libpthread.so.0 or librt.so.1)"
    )]
    DriverUnloadable { detail: String },
    #[error("the NVIDIA driver reports no CUDA device")]
    NoDevice,
    #[error("CUDA error while {step}: {message}")]
    Cuda { step: &'static str, message: String },
    #[error("the CUDA bindings panicked while {step}: {message}")]
    Panicked { step: &'static str, message: String },
}

/// The process exit status the `cuda-smoke` subcommand should use for a result.
pub fn exit_code(result: &Result<SmokeReport, SmokeError>) -> u8 {
    match result {
        Ok(r) if r.passed() => 0,
        Ok(_) => 1,
        Err(
            SmokeError::NoDriver { .. }
            | SmokeError::DriverUnloadable { .. }
            | SmokeError::NoDevice,
        ) => 3,
        Err(_) => 2,
    }
}

/// Tells "libcuda.so.1 is not there" from "it is there but a library it needs is missing":
/// glibc's dlerror names the file it could not open first.
fn dlopen_error(msg: &str, ld_library_path: &str) -> SmokeError {
    let detail = format!("{msg}; LD_LIBRARY_PATH={ld_library_path:?}");
    let missing_self =
        msg.starts_with("libcuda.so.1:") || !msg.contains("cannot open shared object file");
    if missing_self {
        SmokeError::NoDriver { detail }
    } else {
        SmokeError::DriverUnloadable { detail }
    }
}

/// Checks that libcuda can be loaded, the way cudarc will load it, without panicking.
pub fn check_driver() -> Result<(), SmokeError> {
    const NAME: &CStr = c"libcuda.so.1";
    // SAFETY: dlopen with a valid NUL-terminated name; the handle is closed right away. Loading
    // libcuda runs only its constructors, which is what cudarc would do anyway.
    let handle = unsafe { libc::dlopen(NAME.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        // SAFETY: dlerror returns a thread-local C string or NULL.
        let err = unsafe { libc::dlerror() };
        let msg = if err.is_null() {
            "dlopen failed".to_string()
        } else {
            // SAFETY: non-null dlerror result is a valid C string until the next dl* call.
            unsafe { CStr::from_ptr(err) }
                .to_string_lossy()
                .into_owned()
        };
        let ld = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
        return Err(dlopen_error(&msg, &ld));
    }
    // SAFETY: handle is a live handle from dlopen above.
    unsafe { libc::dlclose(handle) };
    // cudarc tries other names first (libcuda.so, …); it must find one of them, or it panics.
    // SAFETY: only tries to load the candidate libraries.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(SmokeError::NoDriver {
            detail: "cudarc found none of its candidate names".into(),
        });
    }
    Ok(())
}

/// Runs the check over [`ELEMENTS`] floats.
pub fn run() -> Result<SmokeReport, SmokeError> {
    run_with(ELEMENTS)
}

/// Runs the check over `elements` floats (at most 2^24, so that every `3i` is exact in f32).
pub fn run_with(elements: usize) -> Result<SmokeReport, SmokeError> {
    check_driver()?;
    let elements = elements.min(1 << 24);
    let step = std::cell::Cell::new("loading the CUDA driver");
    // cudarc panics on a missing symbol (a libcuda too old or not NVIDIA's): catch it, and keep
    // the default hook from printing a panic message and backtrace meanwhile (the caller prints
    // the error). The hook is process-wide; the check runs once, in its own process.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let caught = catch_unwind(AssertUnwindSafe(|| cuda_vadd(elements, &step)));
    std::panic::set_hook(previous);
    match caught {
        Ok(r) => r,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| {
                    payload
                        .downcast_ref::<&str>()
                        .map(std::string::ToString::to_string)
                })
                .unwrap_or_else(|| "unknown panic".into());
            Err(SmokeError::Panicked {
                step: step.get(),
                message,
            })
        }
    }
}

fn cuda_vadd(n: usize, step: &std::cell::Cell<&'static str>) -> Result<SmokeReport, SmokeError> {
    use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};

    let cuda = |s: &'static str| {
        move |e: cudarc::driver::DriverError| SmokeError::Cuda {
            step: s,
            message: e.to_string(),
        }
    };
    step.set("reading the driver version");
    let mut driver_version: std::ffi::c_int = 0;
    // SAFETY: cuDriverGetVersion writes one int through a valid pointer.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&raw mut driver_version) }
        .result()
        .map_err(cuda("reading the driver version"))?;

    step.set("counting devices");
    // A driver library with no GPU behind it (no device nodes passed in, or none on the host)
    // fails cuInit itself with CUDA_ERROR_NO_DEVICE: the same finding as a count of zero.
    let device_count = CudaContext::device_count().map_err(|e| {
        if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_NO_DEVICE {
            SmokeError::NoDevice
        } else {
            cuda("initialising CUDA")(e)
        }
    })?;
    if device_count < 1 {
        return Err(SmokeError::NoDevice);
    }
    step.set("creating a context on device 0");
    let ctx = CudaContext::new(0).map_err(cuda("creating a context on device 0"))?;
    let device = ctx.name().map_err(cuda("reading the device name"))?;
    let compute_capability = ctx
        .compute_capability()
        .map_err(cuda("reading the compute capability"))?;

    let start = Instant::now();
    step.set("loading the PTX module");
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_src(VADD_PTX))
        .map_err(cuda("loading the PTX module (JIT)"))?;
    let f = module
        .load_function("vadd")
        .map_err(cuda("finding the vadd kernel"))?;
    let stream = ctx.default_stream();

    step.set("copying the inputs to the device");
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (2 * i) as f32).collect();
    let a_dev = stream
        .clone_htod(&a)
        .map_err(cuda("copying a to the device"))?;
    let b_dev = stream
        .clone_htod(&b)
        .map_err(cuda("copying b to the device"))?;
    let mut c_dev = stream.alloc_zeros::<f32>(n).map_err(cuda("allocating c"))?;

    step.set("launching the kernel");
    let n32 = n as u32;
    let cfg = LaunchConfig {
        grid_dim: (n32.div_ceil(BLOCK), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut launch = stream.launch_builder(&f);
    launch.arg(&a_dev).arg(&b_dev).arg(&mut c_dev).arg(&n32);
    // SAFETY: the kernel's parameters are (f32*, f32*, f32*, u32) as pushed above; it reads a and
    // b and writes c at indices < n, and all three hold n floats.
    unsafe { launch.launch(cfg) }.map_err(cuda("launching the kernel"))?;

    step.set("copying the result back");
    let c = stream.clone_dtoh(&c_dev).map_err(cuda("copying c back"))?;
    stream.synchronize().map_err(cuda("synchronizing"))?;
    let elapsed_ms = start.elapsed().as_secs_f64() * 1000.0;

    let (mismatches, first_mismatch) = compare(&c, n);
    Ok(SmokeReport {
        device_count,
        device,
        compute_capability,
        driver_version,
        elements: n,
        mismatches,
        first_mismatch,
        elapsed_ms,
    })
}

/// Counts elements where `c[i] != 3i` (exactly: every value is an integer below 2^24); a short
/// result counts its missing elements as mismatches.
// Exact on purpose: small integers are exact in f32, and the kernel's sums of them are too.
fn compare(c: &[f32], n: usize) -> (usize, Option<Mismatch>) {
    let mut count = n.saturating_sub(c.len());
    let mut first = None;
    for (i, &got) in c.iter().enumerate().take(n) {
        let expected = (3 * i) as f32;
        if got != expected {
            count += 1;
            first.get_or_insert(Mismatch {
                index: i,
                expected,
                got,
            });
        }
    }
    (count, first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_driver_is_an_error_not_a_panic() {
        // This host has no NVIDIA driver, or its library without a GPU (Debian's libcuda1 comes
        // with nvidia-cuda-toolkit); on a GPU host the check should pass instead.
        match run_with(1024) {
            Err(SmokeError::NoDevice) => {
                assert_eq!(exit_code(&Err(SmokeError::NoDevice)), 3);
            }
            Err(SmokeError::NoDriver { detail }) => {
                let e = SmokeError::NoDriver { detail };
                let msg = e.to_string();
                assert!(msg.contains("libcuda.so.1 not found"), "{msg}");
                assert_eq!(exit_code(&Err(e)), 3);
            }
            Ok(r) => assert!(r.passed(), "{r}"),
            Err(e) => panic!("unexpected error: {e}"),
        }
    }

    #[test]
    fn compare_counts_mismatches() {
        let mut c: Vec<f32> = (0..10).map(|i| (3 * i) as f32).collect();
        assert_eq!(compare(&c, 10).0, 0);
        c[4] = 0.0;
        c[7] = 1.0;
        let (n, first) = compare(&c, 10);
        assert_eq!(n, 2);
        let first = first.unwrap();
        assert_eq!((first.index, first.expected, first.got), (4, 12.0, 0.0));
        assert_eq!(compare(&c[..5], 10).0, 6);
        // 3 * (2^20 - 1) is exact in f32
        let i = (1usize << 20) - 1;
        assert_eq!((i as f32) + ((2 * i) as f32), (3 * i) as f32);
    }

    #[test]
    fn report_text_and_version() {
        assert_eq!(driver_version_text(13000), "13.0");
        assert_eq!(driver_version_text(12080), "12.8");
        let r = SmokeReport {
            device_count: 1,
            device: "NVIDIA H200".into(),
            compute_capability: (9, 0),
            driver_version: 13000,
            elements: ELEMENTS,
            mismatches: 0,
            first_mismatch: None,
            elapsed_ms: 3.25,
        };
        let t = r.to_string();
        assert!(t.contains("NVIDIA H200 (sm_90), driver API 13.0"), "{t}");
        assert!(t.ends_with("PASSED"));
        assert_eq!(exit_code(&Ok(r)), 0);
        let j = serde_json::to_value(SmokeReport {
            mismatches: 3,
            ..r_clone()
        })
        .unwrap();
        assert_eq!(j["mismatches"], 3);
    }

    fn r_clone() -> SmokeReport {
        SmokeReport {
            device_count: 1,
            device: "x".into(),
            compute_capability: (5, 2),
            driver_version: 11000,
            elements: 1,
            mismatches: 0,
            first_mismatch: None,
            elapsed_ms: 0.0,
        }
    }

    #[test]
    fn dlopen_errors_tell_missing_driver_from_missing_dependency() {
        let none = dlopen_error(
            "libcuda.so.1: cannot open shared object file: No such file or directory",
            "",
        );
        assert!(matches!(none, SmokeError::NoDriver { .. }), "{none}");
        let dep = dlopen_error(
            "libdl.so.2: cannot open shared object file: No such file or directory",
            "/usr/lib",
        );
        assert!(matches!(dep, SmokeError::DriverUnloadable { .. }), "{dep}");
        assert!(dep.to_string().contains("libdl.so.2"), "{dep}");
        assert_eq!(exit_code(&Err(dep)), 3);
    }
}
