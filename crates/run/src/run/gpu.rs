//! GPU access for the test stage: a CDI spec when there is one, otherwise the NVIDIA device
//! nodes and the driver's user-space libraries, found through `ldconfig -p`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Serialize;

/// Where CDI specs live (the CDI spec's default directories).
pub const CDI_DIRS: [&str; 2] = ["/etc/cdi", "/var/run/cdi"];

/// The CDI device podman is given when a spec for NVIDIA GPUs exists.
pub const CDI_DEVICE: &str = "nvidia.com/gpu=all";

/// The driver library that must exist for a GPU to be usable.
pub const LIBCUDA: &str = "libcuda.so.1";

/// Driver libraries passed along with libcuda when the host has them: the PTX JIT (loading PTX,
/// which the cuda-smoke check and most CUDA applications do) and NVML (nvidia-smi, pynvml, and
/// PyTorch's device queries). libnvidia-nvvm (LTO/NVVM IR JIT) is not needed for PTX.
pub const EXTRA_LIBRARIES: [&str; 2] = ["libnvidia-ptxjitcompiler.so.1", "libnvidia-ml.so.1"];

/// How a container gets the GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GpuAccess {
    /// A CDI spec for `nvidia.com/gpu` exists: `--device nvidia.com/gpu=all`, and the
    /// recipe's `host-provides` libraries the spec does not name, bind-mounted read-only as
    /// (host path, path in the container).
    Cdi {
        spec: PathBuf,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        libraries: Vec<(PathBuf, PathBuf)>,
    },
    /// Device nodes, and driver libraries as (host path, path in the container), bind-mounted
    /// read-only.
    Devices {
        devices: Vec<PathBuf>,
        libraries: Vec<(PathBuf, PathBuf)>,
    },
    /// No usable GPU, and why.
    None { why: String },
}

impl GpuAccess {
    pub fn is_available(&self) -> bool {
        !matches!(self, GpuAccess::None { .. })
    }

    /// The podman `run` flags that give a container this access. `LD_LIBRARY_PATH` is not among
    /// them: see [`library_dir`] and the caller, which merges it with the image's.
    pub fn podman_flags(&self) -> Vec<String> {
        match self {
            GpuAccess::Cdi { libraries, .. } => {
                let mut v = vec!["--device".into(), CDI_DEVICE.into()];
                v.extend(mounts(libraries));
                v
            }
            GpuAccess::Devices { devices, libraries } => {
                let mut v = Vec::new();
                for d in devices {
                    v.push("--device".into());
                    v.push(d.display().to_string());
                }
                v.extend(mounts(libraries));
                v
            }
            GpuAccess::None { .. } => Vec::new(),
        }
    }

    /// The directory in the container that holds the bind-mounted libraries, if any.
    pub fn library_dir(&self) -> Option<PathBuf> {
        match self {
            GpuAccess::Devices { libraries, .. } | GpuAccess::Cdi { libraries, .. } => libraries
                .first()
                .and_then(|(_, c)| c.parent())
                .map(Path::to_path_buf),
            GpuAccess::None { .. } => None,
        }
    }
}

/// `-v HOST:CONTAINER:ro` for each library.
fn mounts(libraries: &[(PathBuf, PathBuf)]) -> Vec<String> {
    let mut v = Vec::new();
    for (host, ctr) in libraries {
        v.push("-v".into());
        v.push(format!("{}:{}:ro", host.display(), ctr.display()));
    }
    v
}

/// What discovery looks at; [`HostProbe::system`] is the real host, tests make their own.
#[derive(Debug, Clone)]
pub struct HostProbe {
    pub cdi_dirs: Vec<PathBuf>,
    /// Where device nodes are (`/dev`).
    pub dev_dir: PathBuf,
    /// The text of `ldconfig -p`, or why it could not be had.
    pub ldconfig: Result<String, String>,
    /// `std::env::consts::ARCH` of the binary that will use the libraries.
    pub arch: String,
}

impl HostProbe {
    pub fn system() -> Self {
        HostProbe {
            cdi_dirs: CDI_DIRS.iter().map(PathBuf::from).collect(),
            dev_dir: PathBuf::from("/dev"),
            ldconfig: ldconfig_output(),
            arch: std::env::consts::ARCH.to_string(),
        }
    }
}

/// Discovers GPU access on this host.
pub fn discover_gpu() -> GpuAccess {
    discover_gpu_for(&HostProbe::system(), &[])
}

/// Discovery against an explicit probe (CDI dirs, /dev, ldconfig text).
pub fn discover_gpu_with(probe: &HostProbe) -> GpuAccess {
    discover_gpu_for(probe, &[])
}

/// Discovery for an image whose recipe says the host provides `host_libraries` (the
/// `[apt] host-provides` names that are sonames, `libcuda.so.1`): each is bound from the host
/// as the driver's libraries are (found through `ldconfig -p`), and a host that lacks one has
/// no usable GPU for the image, the reason naming it.
pub fn discover_gpu_for(probe: &HostProbe, host_libraries: &[String]) -> GpuAccess {
    match discover(probe, host_libraries) {
        GpuAccess::None { why }
            if !host_libraries.is_empty() && !why.starts_with("host-provides") =>
        {
            GpuAccess::None {
                why: format!(
                    "{why} (the recipe's host-provides {} needs a GPU host with the NVIDIA driver)",
                    host_libraries.join(", ")
                ),
            }
        }
        other => other,
    }
}

/// Why the image cannot run here: a `host-provides` library this host lacks.
fn host_lacks(name: &str, arch: &str) -> GpuAccess {
    GpuAccess::None {
        why: format!(
            "host-provides {name} but this host has no {name} (`ldconfig -p` lists none for \
             {arch}): a GPU host with the NVIDIA driver is needed"
        ),
    }
}

fn discover(probe: &HostProbe, host_libraries: &[String]) -> GpuAccess {
    if let Some(spec) = find_cdi_spec(&probe.cdi_dirs) {
        if host_libraries.is_empty() {
            return GpuAccess::Cdi {
                spec,
                libraries: Vec::new(),
            };
        }
        // The spec mounts the driver's libraries; each host-provides library must be on the
        // host too, and is bound here unless the spec names it.
        let text = match &probe.ldconfig {
            Ok(t) => t,
            Err(why) => {
                return GpuAccess::None {
                    why: format!(
                        "the recipe's host-provides {} must be found on the host, but the \
                         libraries could not be listed: {why}",
                        host_libraries.join(", ")
                    ),
                }
            }
        };
        let entries = parse_ldconfig(text);
        let spec_text = fs_err::read_to_string(&spec).unwrap_or_default();
        let libdir = container_lib_dir(&probe.arch);
        let mut libraries = Vec::new();
        for name in host_libraries {
            let Some(p) = find_library(&entries, name, &probe.arch) else {
                return host_lacks(name, &probe.arch);
            };
            if let (false, Some(dir)) = (spec_text.contains(name.as_str()), libdir) {
                let host = fs_err::canonicalize(&p).unwrap_or(p);
                libraries.push((host, Path::new(dir).join(name)));
            }
        }
        return GpuAccess::Cdi { spec, libraries };
    }
    let devices = nvidia_device_nodes(&probe.dev_dir);
    let has_gpu_node = devices.iter().any(|d| {
        d.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("nvidia"))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    });
    if !has_gpu_node {
        return GpuAccess::None {
            why: format!(
                "no CDI spec for nvidia.com/gpu in {} and no /dev/nvidia<N> device node in {}",
                join_paths(&probe.cdi_dirs),
                probe.dev_dir.display()
            ),
        };
    }
    let text = match &probe.ldconfig {
        Ok(t) => t,
        Err(why) => {
            return GpuAccess::None {
                why: format!("found NVIDIA device nodes but could not list libraries: {why}"),
            }
        }
    };
    let entries = parse_ldconfig(text);
    let Some(libdir) = container_lib_dir(&probe.arch) else {
        return GpuAccess::None {
            why: format!(
                "GPU passthrough without CDI is not supported on {}",
                probe.arch
            ),
        };
    };
    let mut libraries = Vec::new();
    // libcuda, then the extras the host has, then each host-provides library (required).
    let mut names: Vec<&str> = std::iter::once(LIBCUDA).chain(EXTRA_LIBRARIES).collect();
    for h in host_libraries {
        if !names.contains(&h.as_str()) {
            names.push(h);
        }
    }
    for (i, name) in names.into_iter().enumerate() {
        match find_library(&entries, name, &probe.arch) {
            Some(p) => {
                // Bind-mount the file itself, not the symlink ldconfig lists.
                let host = fs_err::canonicalize(&p).unwrap_or(p);
                libraries.push((host, Path::new(libdir).join(name)));
            }
            None if host_libraries.iter().any(|h| h == name) => {
                return host_lacks(name, &probe.arch);
            }
            None if i == 0 => {
                return GpuAccess::None {
                    why: format!(
                        "found NVIDIA device nodes but `ldconfig -p` lists no {LIBCUDA} for {} \
                         (is the NVIDIA driver's user-space part installed?)",
                        probe.arch
                    ),
                }
            }
            None => {}
        }
    }
    GpuAccess::Devices { devices, libraries }
}

fn join_paths(p: &[PathBuf]) -> String {
    p.iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The multiarch directory the libraries are mounted at in the container.
pub fn container_lib_dir(arch: &str) -> Option<&'static str> {
    match arch {
        "x86_64" => Some("/usr/lib/x86_64-linux-gnu"),
        "aarch64" => Some("/usr/lib/aarch64-linux-gnu"),
        _ => None,
    }
}

/// The first `*.json` / `*.yaml` / `*.yml` file in `dirs` (sorted by name) that mentions
/// `nvidia.com/gpu`.
pub fn find_cdi_spec(dirs: &[PathBuf]) -> Option<PathBuf> {
    for dir in dirs {
        let Ok(rd) = fs_err::read_dir(dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                matches!(
                    p.extension().and_then(|e| e.to_str()),
                    Some("json" | "yaml" | "yml")
                )
            })
            .collect();
        files.sort();
        for f in files {
            if fs_err::read_to_string(&f).is_ok_and(|t| t.contains("nvidia.com/gpu")) {
                return Some(f);
            }
        }
    }
    None
}

/// Existing NVIDIA device nodes: `nvidia<N>` (sorted by N), `nvidiactl`, `nvidia-uvm`,
/// `nvidia-uvm-tools`.
pub fn nvidia_device_nodes(dev: &Path) -> Vec<PathBuf> {
    let mut numbered: Vec<(u32, PathBuf)> = fs_err::read_dir(dev)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let n: u32 = name.strip_prefix("nvidia")?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    numbered.sort();
    let mut out: Vec<PathBuf> = numbered.into_iter().map(|(_, p)| p).collect();
    for name in ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"] {
        let p = dev.join(name);
        if p.exists() {
            out.push(p);
        }
    }
    out
}

/// One library line of `ldconfig -p`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdEntry {
    pub soname: String,
    /// The text in parentheses, e.g. `libc6,x86-64` or `libc6,AArch64, OS ABI: Linux 3.7.0`.
    pub flags: String,
    pub path: PathBuf,
}

/// Parses `ldconfig -p` output; lines that are not library entries are skipped.
pub fn parse_ldconfig(text: &str) -> Vec<LdEntry> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let (left, path) = line.split_once(" => ")?;
            let open = left.find(" (")?;
            let soname = left[..open].trim();
            let flags = left[open + 2..].strip_suffix(')')?;
            if soname.is_empty() || path.trim().is_empty() {
                return None;
            }
            Some(LdEntry {
                soname: soname.to_string(),
                flags: flags.to_string(),
                path: PathBuf::from(path.trim()),
            })
        })
        .collect()
}

/// The ldconfig flag that marks a library of `arch` (`std::env::consts::ARCH` spelling).
fn arch_flag(arch: &str) -> Option<&'static str> {
    match arch {
        "x86_64" => Some("x86-64"),
        "aarch64" => Some("AArch64"),
        "powerpc64" => Some("64bit"),
        "riscv64" => Some("64bit"),
        _ => None,
    }
}

/// The path of `soname` for `arch` in parsed `ldconfig -p` output.
pub fn find_library(entries: &[LdEntry], soname: &str, arch: &str) -> Option<PathBuf> {
    let flag = arch_flag(arch);
    entries
        .iter()
        .filter(|e| e.soname == soname)
        .find(|e| match flag {
            Some(f) => e.flags.split(',').any(|part| part.trim() == f),
            None => true,
        })
        .map(|e| e.path.clone())
}

/// Runs `ldconfig -p` (trying /sbin and /usr/sbin too: it is often not on a user's PATH).
fn ldconfig_output() -> Result<String, String> {
    let mut last = String::from("ldconfig not found");
    for exe in ["ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"] {
        match Command::new(exe)
            .arg("-p")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
        {
            Ok(o) if o.status.success() => {
                return Ok(String::from_utf8_lossy(&o.stdout).into_owned())
            }
            Ok(o) => last = format!("`{exe} -p` exited with {}", o.status),
            Err(e) => last = format!("`{exe} -p`: {e}"),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
1520 libs found in cache `/etc/ld.so.cache'
\tlibnvidia-ptxjitcompiler.so.1 (libc6,x86-64) => /usr/local/nvidia/lib64/libnvidia-ptxjitcompiler.so.1
\tlibnvidia-ml.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1
\tlibcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1
\tlibcuda.so.1 (libc6,x86-64) => /usr/local/nvidia/lib64/libcuda.so.1
\tlibcuda.so (libc6,x86-64) => /usr/local/nvidia/lib64/libcuda.so
\tlibcuda.so.1 (libc6,AArch64, OS ABI: Linux 3.7.0) => /usr/lib/aarch64-linux-gnu/libcuda.so.1
\tld-linux-x86-64.so.2 (libc6,x86-64) => /lib64/ld-linux-x86-64.so.2
Cache generated by: ldconfig (GLIBC) 2.39
";

    #[test]
    fn parses_ldconfig_and_picks_the_arch() {
        let e = parse_ldconfig(SAMPLE);
        assert_eq!(e.len(), 7);
        assert_eq!(e[0].soname, "libnvidia-ptxjitcompiler.so.1");
        assert_eq!(e[5].flags, "libc6,AArch64, OS ABI: Linux 3.7.0");
        assert_eq!(
            find_library(&e, "libcuda.so.1", "x86_64"),
            Some(PathBuf::from("/usr/local/nvidia/lib64/libcuda.so.1"))
        );
        assert_eq!(
            find_library(&e, "libcuda.so.1", "aarch64"),
            Some(PathBuf::from("/usr/lib/aarch64-linux-gnu/libcuda.so.1"))
        );
        assert_eq!(find_library(&e, "libnvidia-nvvm.so.4", "x86_64"), None);
        assert!(parse_ldconfig("garbage\n\n => x\n").is_empty());
    }

    fn probe(dir: &Path, ldconfig: &str) -> HostProbe {
        HostProbe {
            cdi_dirs: vec![dir.join("etc-cdi"), dir.join("run-cdi")],
            dev_dir: dir.join("dev"),
            ldconfig: Ok(ldconfig.to_string()),
            arch: "x86_64".into(),
        }
    }

    #[test]
    fn cdi_spec_wins_when_it_mentions_nvidia_gpu() {
        let t = tempfile::tempdir().unwrap();
        let p = probe(t.path(), SAMPLE);
        assert!(matches!(discover_gpu_with(&p), GpuAccess::None { .. }));
        fs_err::create_dir_all(t.path().join("run-cdi")).unwrap();
        fs_err::write(
            t.path().join("run-cdi/other.yaml"),
            "kind: vendor.com/fpga\n",
        )
        .unwrap();
        fs_err::write(
            t.path().join("run-cdi/nvidia.txt"),
            "kind: nvidia.com/gpu\n",
        )
        .unwrap();
        assert!(matches!(discover_gpu_with(&p), GpuAccess::None { .. }));
        fs_err::write(
            t.path().join("run-cdi/nvidia.yaml"),
            "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\n",
        )
        .unwrap();
        let g = discover_gpu_with(&p);
        assert_eq!(
            g,
            GpuAccess::Cdi {
                spec: t.path().join("run-cdi/nvidia.yaml"),
                libraries: Vec::new(),
            }
        );
        assert_eq!(g.podman_flags(), vec!["--device", "nvidia.com/gpu=all"]);
        // With host-provides: each must be on the host; one the spec does not name is bound.
        let with_ld = format!("{SAMPLE}\tlibfoo.so.1 (libc6,x86-64) => /opt/host/libfoo.so.1\n");
        let g = discover_gpu_for(
            &probe(t.path(), &with_ld),
            &["libcuda.so.1".into(), "libfoo.so.1".into()],
        );
        assert_eq!(
            g.podman_flags(),
            vec![
                "--device",
                "nvidia.com/gpu=all",
                // This spec names neither: both are bound.
                "-v",
                "/usr/local/nvidia/lib64/libcuda.so.1:/usr/lib/x86_64-linux-gnu/libcuda.so.1:ro",
                "-v",
                "/opt/host/libfoo.so.1:/usr/lib/x86_64-linux-gnu/libfoo.so.1:ro"
            ]
        );
        let g = discover_gpu_for(&probe(t.path(), SAMPLE), &["libfoo.so.1".into()]);
        let GpuAccess::None { why } = g else { panic!() };
        assert!(why.starts_with("host-provides libfoo.so.1 but"), "{why}");
        // No GPU at all: the reason says what the recipe's host-provides needs.
        let none = tempfile::tempdir().unwrap();
        let g = discover_gpu_for(&probe(none.path(), SAMPLE), &["libcuda.so.1".into()]);
        let GpuAccess::None { why } = g else { panic!() };
        assert!(
            why.ends_with(
                "(the recipe's host-provides libcuda.so.1 needs a GPU host with the NVIDIA driver)"
            ),
            "{why}"
        );
    }

    #[test]
    fn device_nodes_and_ldconfig_libraries() {
        let t = tempfile::tempdir().unwrap();
        let dev = t.path().join("dev");
        fs_err::create_dir_all(&dev).unwrap();
        for n in [
            "nvidia10",
            "nvidia2",
            "nvidiactl",
            "nvidia-uvm",
            "nvidia-modeset",
            "null",
        ] {
            fs_err::write(dev.join(n), "").unwrap();
        }
        let g = discover_gpu_with(&probe(t.path(), SAMPLE));
        let GpuAccess::Devices { devices, libraries } = &g else {
            panic!("{g:?}")
        };
        let names: Vec<_> = devices
            .iter()
            .map(|d| d.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(names, ["nvidia2", "nvidia10", "nvidiactl", "nvidia-uvm"]);
        assert_eq!(libraries.len(), 3);
        assert_eq!(
            libraries[0].0,
            PathBuf::from("/usr/local/nvidia/lib64/libcuda.so.1")
        );
        assert_eq!(
            libraries[0].1,
            PathBuf::from("/usr/lib/x86_64-linux-gnu/libcuda.so.1")
        );
        assert_eq!(
            libraries[1].1,
            PathBuf::from("/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.1")
        );
        let flags = g.podman_flags();
        assert!(flags.contains(&format!("{}", dev.join("nvidia2").display())));
        assert!(flags.contains(
            &"/usr/local/nvidia/lib64/libcuda.so.1:/usr/lib/x86_64-linux-gnu/libcuda.so.1:ro"
                .to_string()
        ));
        assert_eq!(
            g.library_dir(),
            Some(PathBuf::from("/usr/lib/x86_64-linux-gnu"))
        );

        // Device nodes without libcuda: no GPU, and the reason says so.
        let g = discover_gpu_with(&probe(t.path(), "0 libs found\n"));
        let GpuAccess::None { why } = g else { panic!() };
        assert!(why.contains("libcuda.so.1"), "{why}");

        // The recipe's host-provides sonames: bound as the driver's are; one the host lacks
        // makes the GPU unusable for the image, the reason naming it.
        let g = discover_gpu_for(&probe(t.path(), SAMPLE), &["libcuda.so.1".into()]);
        let GpuAccess::Devices { libraries, .. } = &g else {
            panic!("{g:?}")
        };
        assert_eq!(libraries.len(), 3, "libcuda.so.1 once: {libraries:?}");
        let with_ld = format!("{SAMPLE}\tlibfoo.so.1 (libc6,x86-64) => /opt/host/libfoo.so.1\n");
        let g = discover_gpu_for(&probe(t.path(), &with_ld), &["libfoo.so.1".into()]);
        let GpuAccess::Devices { libraries, .. } = &g else {
            panic!("{g:?}")
        };
        assert_eq!(
            libraries[3],
            (
                PathBuf::from("/opt/host/libfoo.so.1"),
                PathBuf::from("/usr/lib/x86_64-linux-gnu/libfoo.so.1")
            )
        );
        let g = discover_gpu_for(&probe(t.path(), SAMPLE), &["libfoo.so.1".into()]);
        let GpuAccess::None { why } = g else { panic!() };
        assert!(
            why.starts_with(
                "host-provides libfoo.so.1 but this host has no libfoo.so.1 (`ldconfig -p` lists \
                 none for x86_64): a GPU host with the NVIDIA driver is needed"
            ),
            "{why}"
        );
        let g = discover_gpu_for(&probe(t.path(), "0 libs found\n"), &["libcuda.so.1".into()]);
        let GpuAccess::None { why } = g else { panic!() };
        assert!(
            why.starts_with("host-provides libcuda.so.1 but this host has no libcuda.so.1"),
            "{why}"
        );

        // Only nvidiactl (no numbered node): no GPU.
        fs_err::remove_file(dev.join("nvidia10")).unwrap();
        fs_err::remove_file(dev.join("nvidia2")).unwrap();
        let g = discover_gpu_with(&probe(t.path(), SAMPLE));
        assert!(matches!(g, GpuAccess::None { .. }), "{g:?}");
    }
}
