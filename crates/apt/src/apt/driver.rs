//! The NVIDIA driver's user-space part (`libcuda1`, `libnvidia-*`, … from Debian's
//! `nvidia-graphics-drivers` source): it belongs to the host, not the image (the test stage
//! binds the host's, `run::gpu`), so a dependency on it that nothing in the recipe answers is
//! an error that says so and names the `[apt] host-provides` entry that answers it.
//!
//! Told by name (the indices' `Source` field is not kept): the names that source's binary
//! packages have in Debian and Ubuntu, and any package providing `libcuda.so.1`.

use super::control::Dep;
use super::index::Package;

/// Prefixes of the driver's package and virtual names. The CUDA toolkit's `libnvidia-*-dev`
/// headers (`libnvidia-ml-dev`) are not the driver.
const PREFIXES: &[&str] = &[
    "libcuda.so",
    "libnvidia-",
    "nvidia-driver",
    "nvidia-tesla-",
    "libgl1-nvidia",
    "libegl-nvidia",
    "libgles-nvidia",
    "libglx-nvidia",
    "xserver-xorg-video-nvidia",
];

/// Whole names of the driver's packages not covered by [`PREFIXES`].
const NAMES: &[&str] = &[
    "libcuda1",
    "libcudadebugger1",
    "libnvcuvid1",
    "libnvoptix1",
    "nvidia-alternative",
    "nvidia-kernel-dkms",
    "nvidia-kernel-support",
    "nvidia-smi",
    "nvidia-opencl-icd",
    "nvidia-egl-icd",
    "nvidia-vulkan-icd",
    "nvidia-persistenced",
];

/// Whether a package or virtual name is the NVIDIA driver's.
pub fn is_driver_name(name: &str) -> bool {
    !name.ends_with("-dev")
        && (NAMES.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p)))
}

/// Whether a package is the NVIDIA driver's (by its name, or providing `libcuda.so.1`).
pub fn is_driver(p: &Package) -> bool {
    is_driver_name(&p.name)
        || p.provides
            .iter()
            .any(|pr| pr.name.starts_with("libcuda.so"))
}

/// The `host-provides` name to suggest for a dependency group on the driver: the first
/// alternative that is a library soname (`libcuda.so.1`), else the first driver name, else
/// the first alternative.
pub fn suggested_name(group: &[Dep]) -> String {
    group
        .iter()
        .find(|d| is_soname(&d.name))
        .or_else(|| group.iter().find(|d| is_driver_name(&d.name)))
        .or(group.first())
        .map(|d| d.name.clone())
        .unwrap_or_default()
}

/// Whether a name looks like a library soname: `libX.so.N` (`libcuda.so.1`).
pub fn is_soname(name: &str) -> bool {
    name.split_once(".so.").is_some_and(|(stem, n)| {
        stem.starts_with("lib")
            && stem.len() > 3
            && !n.is_empty()
            && n.split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_names() {
        for n in [
            "libcuda1",
            "libcuda.so.1",
            "libnvidia-ptxjitcompiler1",
            "libnvidia-ml1",
            "nvidia-driver",
            "nvidia-tesla-535-driver",
            "nvidia-alternative",
        ] {
            assert!(is_driver_name(n), "{n}");
        }
        for n in [
            "libcudart12",
            "libnvrtc12",
            "nvidia-cuda-toolkit",
            "nvidia-cuda-dev",
            "libnvidia-ml-dev",
            "python3-pycuda",
            "nvidia-support",
        ] {
            assert!(!is_driver_name(n), "{n}");
        }
    }

    #[test]
    fn sonames_and_suggestions() {
        assert!(is_soname("libcuda.so.1"));
        assert!(is_soname("libfoo.so.1.2"));
        for n in [
            "libcuda1",
            "libcuda.so",
            "lib.so.1",
            "libcuda.so.x",
            "cuda.so.1",
        ] {
            assert!(!is_soname(n), "{n}");
        }
        let g = super::super::control::parse_depends("libcuda1 (>= 450) | libcuda.so.1 (>= 450)")
            .unwrap();
        assert_eq!(suggested_name(&g[0]), "libcuda.so.1");
        let g = super::super::control::parse_depends("libcuda1").unwrap();
        assert_eq!(suggested_name(&g[0]), "libcuda1");
    }
}
