//! Shared harness for the integration tests (`use crate::common;` in each `tests/it/*.rs`).
//!
//! Tests drive the `ocibuild` binary and real, independent readers of its output (skopeo, umoci,
//! oci-image-tool, podman); nothing here uses the library's internals. See docs/testing.md.
//!
//! Environment (set by scripts/test.sh):
//! - `OCIBUILD_REQUIRE_TOOLS=1`: a missing tool fails the test instead of skipping it.
//! - `OCIBUILD_PODMAN_ARGS`: `podman run` flags, whitespace-separated; unset: [`DEFAULT_PODMAN_ARGS`].
//! - `OCIBUILD_ONLINE=1`: tests that reach PyPI / Debian run; otherwise they skip.

// Each test crate uses a different part of the harness.
#![allow(dead_code)]

pub mod context;
pub mod fake_registry;
pub mod registry;

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// `podman run` flags that work on a host without cgroup v2 delegation and without
/// CAP_SYS_RESOURCE (this sandbox, CI): see docs/testing.md.
pub const DEFAULT_PODMAN_ARGS: &[&str] = &[
    "--runtime",
    "runc",
    "--network",
    "none",
    "--ulimit",
    "nofile=1024:1024",
    "--ulimit",
    "nproc=1000:1000",
];

/// Longest any one external tool may run before the test fails (instead of hanging CI).
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(600);

// ---------------------------------------------------------------------------------------------
// Test identity, scratch directories

/// The running test's name (libtest names each test's thread after it).
pub fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("unnamed-test")
        .to_string()
}

/// A fresh temporary directory, removed when dropped. Its name may contain upper-case letters:
/// fine for every tool here; [`podman_run`] takes care of podman's naming rules itself.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("ocibuild-test-")
        .tempdir()
        .expect("create a temporary directory")
}

/// A directory of this test's own under cargo's target tmp dir, emptied the first time this
/// process asks for it and kept after the test (to look at after a failure).
pub fn test_dir(what: &str) -> PathBuf {
    static WIPED: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
    let name: String = test_name()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(env!("CARGO_CRATE_NAME"))
        .join(name)
        .join(what);
    let mut wiped = WIPED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if wiped.get_or_insert_with(HashSet::new).insert(dir.clone()) && dir.exists() {
        fs_err::remove_dir_all(&dir).unwrap_or_else(|e| panic!("empty {}: {e}", dir.display()));
    }
    fs_err::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    dir
}

// ---------------------------------------------------------------------------------------------
// Running commands

/// The `ocibuild` binary under test, with SOURCE_DATE_EPOCH cleared and `OCIBUILD_CACHE` set to
/// a cache dir of this test's own (shared by the calls in one test; `.env(...)` overrides it).
pub fn ocibuild() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ocibuild"));
    cmd.env_remove("SOURCE_DATE_EPOCH");
    // The test stage gets the same podman flags as the harness's own podman runs, also under a
    // plain `cargo test` where OCIBUILD_PODMAN_ARGS is unset.
    cmd.env("OCIBUILD_PODMAN_ARGS", podman_args().join(" "));
    cmd.env("OCIBUILD_CACHE", test_dir("cache"));
    cmd
}

/// `program arg arg ...`, for messages.
pub fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        s.push(' ');
        s.push_str(&arg.to_string_lossy());
    }
    s
}

/// Runs `cmd` with no stdin, capturing its output; panics if it can't start or runs longer
/// than [`TOOL_TIMEOUT`]. The exit status is the caller's to check (see [`assert_success`]).
pub fn run(cmd: &mut Command) -> Output {
    run_timeout(cmd, TOOL_TIMEOUT)
}

/// [`run`] with a time limit of the caller's.
pub fn run_timeout(cmd: &mut Command, timeout: Duration) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start `{}`: {e}", describe(cmd)));
    fn drain(mut pipe: impl Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            let _ = tx.send(buf);
        });
        rx
    }
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for child") {
            break status;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`{}` still running after {timeout:?}: killed",
                describe(cmd)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // A daemonised grandchild could keep a pipe open: don't wait on it for ever.
    let collect = |rx: mpsc::Receiver<Vec<u8>>| {
        rx.recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| {
                panic!("`{}` exited but its output pipe stayed open", describe(cmd))
            })
    };
    Output {
        status,
        stdout: collect(stdout),
        stderr: collect(stderr),
    }
}

/// Panics, showing the command's output, unless it exited 0.
pub fn assert_success(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({})\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// [`run`] and [`assert_success`].
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = run(cmd);
    assert_success(&out, &format!("`{}`", describe(cmd)));
    out
}

/// Stdout as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

// ---------------------------------------------------------------------------------------------
// Tools and skipping

fn require_tools() -> bool {
    std::env::var("OCIBUILD_REQUIRE_TOOLS").as_deref() == Ok("1")
}

/// A missing prerequisite: panics under `OCIBUILD_REQUIRE_TOOLS=1`, else says SKIPPED; false.
fn missing(what: &str) -> bool {
    assert!(
        !require_tools(),
        "missing tool {what}: run ./scripts/test.sh (OCIBUILD_REQUIRE_TOOLS=1)"
    );
    notice(&format!("SKIPPED: {} needs {what}", test_name()));
    false
}

/// `ok`, or a missing prerequisite `what` of this machine's setup (a user, a file that
/// scripts/test.sh provides): panics under `OCIBUILD_REQUIRE_TOOLS=1`, else says SKIPPED.
pub fn require_setup(ok: bool, what: &str) -> bool {
    ok || missing(what)
}

/// A line on stderr that libtest's output capture does not swallow (eprintln! would be hidden
/// for a passing test): skips must show in CI's log.
pub fn notice(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Where `name` is on PATH, if it is an executable file there.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0)
        })
}

/// True if `name` is on PATH. Otherwise panics under `OCIBUILD_REQUIRE_TOOLS=1`, or prints
/// `SKIPPED: <test> needs <name>` and returns false: `if !require_tool("skopeo") { return; }`.
pub fn require_tool(name: &str) -> bool {
    which(name).is_some() || missing(name)
}

/// Debian 13's skopeo (`skopeo-sigstore`) and cosign, which scripts/test.sh downloads from the
/// Debian archive. When that download failed (it sets `OCIBUILD_SIGSTORE_TOOLS_MISSING=1` and
/// says so), the tests that need them print `SKIPPED` even under `OCIBUILD_REQUIRE_TOOLS=1`:
/// an archive without Debian 13 is not a missing package of this machine's.
pub fn require_sigstore_tools(names: &[&str]) -> bool {
    let have = names.iter().all(|n| which(n).is_some());
    if !have && std::env::var_os("OCIBUILD_SIGSTORE_TOOLS_MISSING").is_some() {
        notice(&format!(
            "SKIPPED: {} needs {names:?}, which scripts/test.sh could not download",
            test_name()
        ));
        return false;
    }
    require_tools_all(names)
}

/// [`require_tool`] for several tools.
pub fn require_tools_all(names: &[&str]) -> bool {
    names.iter().all(|n| require_tool(n))
}

/// True when the online tests may run (`OCIBUILD_ONLINE=1`); otherwise prints
/// `SKIPPED (offline): <test>: <why>` and returns false.
pub fn online(why: &str) -> bool {
    if std::env::var("OCIBUILD_ONLINE").as_deref() == Ok("1") {
        return true;
    }
    notice(&format!("SKIPPED (offline): {}: {why}", test_name()));
    false
}

/// True when this process runs as root.
pub fn is_root() -> bool {
    fs_err::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// True if the ELF file at `path` has no program interpreter (is statically linked).
pub fn is_static_elf(path: &Path) -> bool {
    let Ok(bytes) = fs_err::read(path) else {
        return false;
    };
    // ELF64 little-endian only (every host we test on); PT_INTERP marks a dynamic executable.
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 || bytes[5] != 1 {
        return false;
    }
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(bytes[0x20..0x28].try_into().unwrap()) as usize;
    let (phentsize, phnum) = (u16_at(0x36), u16_at(0x38));
    (0..phnum).all(|i| {
        let at = phoff + i * phentsize;
        bytes
            .get(at..at + 4)
            .is_some_and(|t| u32::from_le_bytes(t.try_into().unwrap()) != 3)
    })
}

/// A statically linked busybox (Debian's busybox-static) to put into hand-made images, or
/// None after [`require_tool`]'s panic-or-skip.
pub fn require_static_busybox() -> Option<PathBuf> {
    match which("busybox") {
        Some(p) if is_static_elf(&p) => Some(p),
        Some(p) => {
            missing(&format!("busybox-static ({} is dynamic)", p.display()));
            None
        }
        None => {
            missing("busybox (busybox-static)");
            None
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Fixtures

/// Builds, with umoci, an OCI image layout at `dir/layout` holding one image tagged `tag`: a
/// single layer with a static busybox at /bin/busybox and /bin/sh, /bin/echo links to it.
/// Needs umoci and busybox-static: call [`require_busybox_layout_tools`] first.
pub fn busybox_layout(dir: &Path, tag: &str) -> PathBuf {
    let busybox = which("busybox").expect("busybox on PATH");
    let layout = dir.join("layout");
    let bundle = dir.join("bundle");
    let image = format!("{}:{tag}", layout.display());
    run_ok(
        Command::new("umoci")
            .arg("init")
            .arg("--layout")
            .arg(&layout),
    );
    run_ok(Command::new("umoci").args(["new", "--image", &image]));
    umoci_unpack(&layout, tag, &bundle);
    let bin = bundle.join("rootfs/bin");
    fs_err::create_dir_all(&bin).expect("mkdir rootfs/bin");
    fs_err::copy(&busybox, bin.join("busybox")).expect("copy busybox");
    for link in ["sh", "echo"] {
        fs_err::os::unix::fs::symlink("busybox", bin.join(link)).expect("symlink");
    }
    run_ok(
        Command::new("umoci")
            .args(["repack", "--image", &image])
            .arg(&bundle),
    );
    layout
}

/// The tools [`busybox_layout`] needs: true, or panic / SKIPPED and false.
pub fn require_busybox_layout_tools() -> bool {
    require_tool("umoci") && require_static_busybox().is_some()
}

// ---------------------------------------------------------------------------------------------
// Readers: skopeo, umoci, oci-image-tool

/// `skopeo ARGS...` that must succeed, its stdout parsed as JSON.
pub fn skopeo_json<I, S>(args: I) -> serde_json::Value
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let out = run_ok(Command::new("skopeo").args(args));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("skopeo printed no JSON ({e}):\n{}", stdout(&out)))
}

/// `skopeo inspect REF` (e.g. `oci:/path/layout:tag`, `docker-archive:/path/x.tar`).
pub fn skopeo_inspect(transport_ref: &str) -> serde_json::Value {
    skopeo_json(["inspect", transport_ref])
}

/// `skopeo inspect --raw REF`: the manifest (or index) as stored.
pub fn skopeo_inspect_raw(transport_ref: &str) -> serde_json::Value {
    skopeo_json(["inspect", "--raw", transport_ref])
}

/// `skopeo inspect --config REF`: the image config.
pub fn skopeo_inspect_config(transport_ref: &str) -> serde_json::Value {
    skopeo_json(["inspect", "--config", transport_ref])
}

/// `skopeo copy SRC DST`, which must succeed.
pub fn skopeo_copy(src: &str, dst: &str) {
    run_ok(Command::new("skopeo").args(["copy", "--quiet", src, dst]));
}

/// `umoci unpack --image LAYOUT:TAG DEST` (with `--rootless` when not root); must succeed.
/// umoci 0.4.7 reads gzip (and uncompressed) layers only, not zstd.
pub fn umoci_unpack(layout: &Path, tag: &str, dest: &Path) {
    let mut cmd = Command::new("umoci");
    cmd.arg("unpack");
    if !is_root() {
        cmd.arg("--rootless");
    }
    cmd.arg("--image")
        .arg(format!("{}:{tag}", layout.display()))
        .arg(dest);
    run_ok(&mut cmd);
}

/// `oci-image-tool validate --type image LAYOUT`, whatever its outcome.
pub fn oci_image_tool_validate_output(layout: &Path) -> Output {
    run(Command::new("oci-image-tool")
        .args(["validate", "--type", "image"])
        .arg(layout))
}

/// Validates an image layout directory with oci-image-tool (1.0.0-rc1): every ref in
/// index.json, digests and sizes of manifests, configs and layers. Panics on failure.
/// Beware: it skips (with a warning) a nested image index, so a multi-platform layout needs its
/// manifests checked too (`oci-image-tool validate --type manifest|config FILE`).
pub fn oci_image_tool_validate(layout: &Path) -> String {
    let out = oci_image_tool_validate_output(layout);
    assert_success(
        &out,
        &format!("oci-image-tool validate {}", layout.display()),
    );
    let text = stdout(&out);
    assert!(text.contains("Validation succeeded"), "{text}");
    text
}

// ---------------------------------------------------------------------------------------------
// podman

/// `podman run` flags: `OCIBUILD_PODMAN_ARGS` split on whitespace when set (even empty),
/// else [`DEFAULT_PODMAN_ARGS`].
pub fn podman_args() -> Vec<String> {
    match std::env::var("OCIBUILD_PODMAN_ARGS") {
        Ok(s) => s.split_whitespace().map(String::from).collect(),
        Err(_) => DEFAULT_PODMAN_ARGS
            .iter()
            .map(std::string::ToString::to_string)
            .collect(),
    }
}

/// True if every `/`-separated component of `path` is a valid repository path component of a
/// container image reference (lower case; `.`, `_`, `__`, `-`+ only between alphanumerics).
/// podman names an image pulled from `oci:PATH` `localhost/PATH`, so PATH must pass this.
pub fn podman_nameable(path: &str) -> bool {
    use ocibuild::registry::reference::component_ok;
    path.len() < 200 && path.starts_with('/') && path[1..].split('/').all(component_ok)
}

/// A symlink to a layout at a path podman can name an image after; removes the image podman
/// made from it, and the link, when dropped.
pub struct PodmanAlias {
    dir: PathBuf,
    link: PathBuf,
}

/// A name podman takes for the layout at `layout` (`oci:LINK`), valid while it lives: the
/// image podman makes of it is removed, and the link, when it is dropped.
pub fn podman_alias(layout: &Path) -> PodmanAlias {
    PodmanAlias::new(layout)
}

impl PodmanAlias {
    fn new(layout: &Path) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let layout = fs_err::canonicalize(layout)
            .unwrap_or_else(|e| panic!("layout {}: {e}", layout.display()));
        let tmp = std::env::temp_dir();
        let base = match tmp.to_str() {
            Some(t) if podman_nameable(t) => tmp.clone(),
            _ => PathBuf::from("/tmp"),
        };
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = base.join(format!("ocibuild-podman-{}-{n}", std::process::id()));
            match fs_err::create_dir(&dir) {
                Ok(()) => {
                    let link = dir.join("layout");
                    fs_err::os::unix::fs::symlink(&layout, &link).expect("symlink layout");
                    return PodmanAlias { dir, link };
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => panic!("create {}: {e}", dir.display()),
            }
        }
    }

    pub fn image_ref(&self, tag: &str) -> String {
        format!("oci:{}:{tag}", self.link.display())
    }
}

impl Drop for PodmanAlias {
    fn drop(&mut self) {
        // podman names the image localhost/<path>:latest, whatever the tag was.
        podman_rmi(&format!("localhost{}", self.link.display()));
        let _ = fs_err::remove_dir_all(&self.dir);
    }
}

/// `podman run --rm --quiet <podman_args()> oci:LAYOUT:TAG ARGS...`, whatever its outcome.
/// The layout may live at any path: it is linked from one podman accepts (a path component
/// that starts with a dot or has upper case is refused as an image name), and the image that
/// podman copies into its storage is removed afterwards.
pub fn podman_run(layout_dir: &Path, tag: &str, args: &[&str]) -> Output {
    let alias = PodmanAlias::new(layout_dir);
    podman_run_image(&alias.image_ref(tag), &[], args)
}

/// [`podman_run`] with extra `podman run` flags before the image (e.g. `--entrypoint=...`).
pub fn podman_run_flags(layout_dir: &Path, tag: &str, flags: &[&str], args: &[&str]) -> Output {
    let alias = PodmanAlias::new(layout_dir);
    podman_run_image(&alias.image_ref(tag), flags, args)
}

/// `podman run --rm --quiet <podman_args()> FLAGS... IMAGE ARGS...`, whatever its outcome;
/// IMAGE is a name in podman's storage (from [`podman_load`]: pass `--pull=never`) or a
/// transport reference.
pub fn podman_run_image(image: &str, flags: &[&str], args: &[&str]) -> Output {
    run(Command::new("podman")
        .args(["run", "--rm", "--quiet"])
        .args(podman_args())
        .args(flags)
        .arg(image)
        .args(args))
}

/// `podman load -i ARCHIVE` (docker-archive or oci-archive); returns the loaded image's name
/// as podman printed it (e.g. `docker.io/library/x:t`). Remove it with [`podman_rmi`].
pub fn podman_load(archive: &Path) -> String {
    let out = run_ok(
        Command::new("podman")
            .args(["load", "--quiet", "--input"])
            .arg(archive),
    );
    let text = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    // "Loaded image: NAME" or "Loaded image(s): NAME,NAME"
    text.lines()
        .filter_map(|l| l.strip_prefix("Loaded image"))
        .filter_map(|rest| rest.split_once(':').map(|(_, names)| names))
        .filter_map(|names| names.split(',').next())
        .map(|name| name.trim().to_string())
        .find(|name| !name.is_empty())
        .unwrap_or_else(|| panic!("no image name in podman load's output:\n{text}"))
}

/// `podman rmi --force NAME...`, ignoring failures (cleanup).
pub fn podman_rmi(name: &str) {
    let _ = run(Command::new("podman").args(["rmi", "--force", name]));
}

/// True if podman's storage has an image of that name.
pub fn podman_image_exists(name: &str) -> bool {
    run(Command::new("podman").args(["image", "exists", name]))
        .status
        .success()
}

/// `podman ARGS...`, which must succeed; returns its stdout.
pub fn podman(args: &[&str]) -> String {
    stdout(&run_ok(Command::new("podman").args(args)))
}

// ---------------------------------------------------------------------------------------------
// Reading what ocibuild wrote

/// The OCI architecture name of this host (`amd64`, `arm64`, ...).
pub fn host_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// One line per member of a (gzip or plain) tar, read by Python's tarfile, an independent
/// reader: `TYPE MODE UID:GID PATH[ -> TARGET]`, TYPE one of d f l h.
pub fn tar_listing(path: &Path) -> Vec<String> {
    const SCRIPT: &str = r#"
import sys, tarfile
with tarfile.open(sys.argv[1], "r:*") as t:
    for m in t.getmembers():
        kind = "d" if m.isdir() else "l" if m.issym() else "h" if m.islnk() else "f" if m.isfile() else "?"
        name = m.name + ("/" if m.isdir() and not m.name.endswith("/") else "")
        line = "%s %04o %d:%d %s" % (kind, m.mode, m.uid, m.gid, name)
        if m.issym() or m.islnk():
            line += " -> " + m.linkname
        print(line)
"#;
    let out = run_ok(Command::new("python3").args(["-c", SCRIPT]).arg(path));
    stdout(&out).lines().map(String::from).collect()
}

/// The layer named `name` in a `build --json` document of an image written to the layout
/// `out`: (its digest, its blob's path).
pub fn layer_named(out: &Path, v: &serde_json::Value, name: &str) -> (String, PathBuf) {
    let l = v["layers"]
        .as_array()
        .expect("a layers array")
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("no layer {name} in {v:#}"));
    let d = l["digest"].as_str().expect("a digest").to_string();
    let p = out
        .join("blobs/sha256")
        .join(d.trim_start_matches("sha256:"));
    (d, p)
}

/// sha256 of bytes, as `sha256:<hex>`, computed here (the sha2 crate), not by ocibuild.
pub fn sha256_bytes(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    let h = sha2::Sha256::digest(bytes);
    format!(
        "sha256:{}",
        h.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// sha256 of a file, as `sha256:<hex>`, computed here (the sha2 crate), not by ocibuild.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    use sha2::Digest as _;
    let mut f = fs_err::File::open(path)?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(format!("sha256:{:x}", h.finalize()))
}

/// Checks the invariant an OCI image layout written by ocibuild must keep at every instant,
/// also right after the writer was killed: `index.json` parses and names each tag at most once;
/// every manifest it names is a blob of the stated size and sha256, parses as an image manifest,
/// and its config and layers are blobs of the stated sizes (and sha256, for those of at most
/// `hash_limit` bytes); nothing names a `.ocibuild-tmp-*` temporary file. Stray temporary files
/// may exist (an interrupted write leaves them; they are never referenced).
///
/// Returns tag → manifest digest, or a description of every violation found.
pub fn check_layout(
    layout: &Path,
    hash_limit: u64,
) -> Result<std::collections::BTreeMap<String, String>, String> {
    let mut errors = Vec::new();
    let raw = fs_err::read(layout.join("index.json"))
        .map_err(|e| format!("{}/index.json: {e}", layout.display()))?;
    if String::from_utf8_lossy(&raw).contains(".ocibuild-tmp") {
        errors.push("index.json mentions a .ocibuild-tmp file".to_string());
    }
    let index: serde_json::Value = serde_json::from_slice(&raw).map_err(|e| {
        format!(
            "index.json does not parse ({e}): {}",
            String::from_utf8_lossy(&raw)
        )
    })?;
    let Some(manifests) = index["manifests"].as_array() else {
        return Err(format!("index.json has no manifests array: {index}"));
    };
    // Checks one descriptor's blob; returns its bytes when it was small enough to read whole.
    let check_blob = |what: &str, desc: &serde_json::Value, errors: &mut Vec<String>| {
        let (Some(digest), Some(size)) = (desc["digest"].as_str(), desc["size"].as_u64()) else {
            errors.push(format!("{what}: descriptor without digest or size: {desc}"));
            return None;
        };
        let Some(hex) = digest.strip_prefix("sha256:") else {
            errors.push(format!("{what}: not a sha256 digest: {digest}"));
            return None;
        };
        let path = layout.join("blobs/sha256").join(hex);
        let len = match fs_err::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) => {
                errors.push(format!("{what} {digest}: blob missing ({e})"));
                return None;
            }
        };
        if len != size {
            errors.push(format!(
                "{what} {digest}: blob has {len} bytes, descriptor says {size}"
            ));
            return None;
        }
        if size > hash_limit {
            return None;
        }
        match sha256_file(&path) {
            Ok(found) if found == digest => fs_err::read(&path).ok(),
            Ok(found) => {
                errors.push(format!("{what} {digest}: blob content hashes to {found}"));
                None
            }
            Err(e) => {
                errors.push(format!("{what} {digest}: reading the blob: {e}"));
                None
            }
        }
    };
    let mut tags = std::collections::BTreeMap::new();
    for m in manifests {
        let tag = m["annotations"]["org.opencontainers.image.ref.name"]
            .as_str()
            .unwrap_or("<untagged>")
            .to_string();
        let digest = m["digest"].as_str().unwrap_or("").to_string();
        if tags.insert(tag.clone(), digest).is_some() {
            errors.push(format!("tag {tag} is named more than once in index.json"));
        }
        let what = format!("manifest of {tag}");
        if m["size"].as_u64().is_some_and(|s| s > hash_limit) {
            errors.push(format!("{what}: implausibly large ({m})"));
            continue;
        }
        let Some(bytes) = check_blob(&what, m, &mut errors) else {
            continue;
        };
        if String::from_utf8_lossy(&bytes).contains(".ocibuild-tmp") {
            errors.push(format!("{what} mentions a .ocibuild-tmp file"));
        }
        let manifest: serde_json::Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                errors.push(format!("{what}: does not parse: {e}"));
                continue;
            }
        };
        if manifest["mediaType"] != "application/vnd.oci.image.manifest.v1+json" {
            errors.push(format!(
                "{what}: unexpected mediaType {}",
                manifest["mediaType"]
            ));
        }
        check_blob(
            &format!("config of {tag}"),
            &manifest["config"],
            &mut errors,
        );
        match manifest["layers"].as_array() {
            Some(layers) => {
                for (i, l) in layers.iter().enumerate() {
                    check_blob(&format!("layer {i} of {tag}"), l, &mut errors);
                }
            }
            None => errors.push(format!("{what}: no layers array")),
        }
    }
    if errors.is_empty() {
        Ok(tags)
    } else {
        Err(errors.join("\n"))
    }
}

/// The names of the `.ocibuild-tmp-*` files directly in a layout directory.
pub fn layout_temp_files(layout: &Path) -> Vec<String> {
    fs_err::read_dir(layout)
        .map(|it| {
            it.filter_map(std::result::Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".ocibuild-tmp-"))
                .collect()
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Generated data

/// Deterministic pseudo-random bytes: a splitmix64 stream seeded with `seed`. Incompressible
/// for deflate and zstd alike; the same seed gives the same bytes on every host.
pub struct PseudoRandom(u64);

impl PseudoRandom {
    pub fn new(seed: u64) -> Self {
        PseudoRandom(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        let last = self.next_u64().to_le_bytes();
        let n = rest.len();
        rest.copy_from_slice(&last[..n]);
    }
}

/// Writes `len` pseudo-random bytes from `seed` to `path`.
pub fn write_pseudo_random(path: &Path, seed: u64, len: u64) {
    use std::io::Write;
    let mut rng = PseudoRandom::new(seed);
    let mut f = std::io::BufWriter::new(
        fs_err::File::create(path).unwrap_or_else(|e| panic!("create {}: {e}", path.display())),
    );
    let mut buf = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        rng.fill(&mut buf[..n]);
        f.write_all(&buf[..n])
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        left -= n as u64;
    }
    f.flush()
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Writes about `len` bytes of text-like, compressible data (lines of words and numbers, like
/// source code or logs) from `seed` to `path`.
pub fn write_text_like(path: &Path, seed: u64, len: u64) {
    use std::io::Write;
    const WORDS: &[&str] = &[
        "import", "def", "return", "self", "value", "layer", "tar", "digest", "config", "error",
        "for", "in", "range", "print", "class", "None", "True", "False", "lambda", "yield",
        "alpha", "beta", "gamma", "delta", "numpy", "torch", "cuda", "tensor", "shape", "dtype",
    ];
    let mut rng = PseudoRandom::new(seed);
    let mut f = std::io::BufWriter::new(
        fs_err::File::create(path).unwrap_or_else(|e| panic!("create {}: {e}", path.display())),
    );
    let mut line = String::with_capacity(256);
    let mut written = 0u64;
    while written < len {
        line.clear();
        let r = rng.next_u64();
        for _ in 0..(r % 4) {
            line.push_str("    ");
        }
        let words = 3 + (r >> 8) % 10;
        for i in 0..words {
            if i > 0 {
                line.push(' ');
            }
            line.push_str(WORDS[(rng.next_u64() % WORDS.len() as u64) as usize]);
        }
        line.push_str(&format!(" = {}\n", (r >> 16) % 100_000));
        f.write_all(line.as_bytes())
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        written += line.len() as u64;
    }
    f.flush()
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}
