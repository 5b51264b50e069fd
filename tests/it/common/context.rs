//! The shared test context: one temporary directory per test, a content store of its own in
//! it, the `ocibuild` command with the test's environment, a local registry when asked, and
//! the insta settings whose filters make a snapshot the same on every machine.
//!
//! ```ignore
//! let cx = TestContext::new();
//! let out = run_ok(cx.ocibuild().args(["build", "--json"]).arg(&recipe));
//! cx.snapshot_settings().bind(|| insta::assert_snapshot!(stdout(&out)));
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

use super::registry::{auth_file, start_registry, Registry, PASS};

/// A test's surroundings: see the module's documentation.
pub struct TestContext {
    dir: tempfile::TempDir,
    registry: Option<(Registry, PathBuf)>,
}

impl Default for TestContext {
    fn default() -> Self {
        Self::new()
    }
}

impl TestContext {
    /// A fresh temporary directory (removed on drop) with an empty store at `store/`.
    pub fn new() -> Self {
        Self {
            dir: super::tempdir(),
            registry: None,
        }
    }

    /// [`TestContext::new`] with Debian's docker-registry on 127.0.0.1 (htpasswd login) and
    /// an auth.json for it that [`TestContext::ocibuild`] passes as `REGISTRY_AUTH_FILE`.
    /// The caller checks `require_tool("docker-registry")` first.
    pub fn with_registry() -> Self {
        let mut cx = Self::new();
        let reg = start_registry(None);
        let auth = auth_file(cx.dir.path(), &reg.addr, PASS);
        cx.registry = Some((reg, auth));
        cx
    }

    /// This context for a fixture that a file's tests share (kept in a `OnceLock`): a static is
    /// never dropped, so a watchdog process kills the registry and removes the directories
    /// once this test process has exited.
    pub fn shared(self) -> Self {
        let mut dirs = vec![self.path().to_path_buf()];
        let mut pids = Vec::new();
        if let Some((reg, _)) = &self.registry {
            pids.push(reg.pid().to_string());
            dirs.push(reg.dir().to_path_buf());
        }
        clean_up_after_exit(&pids, &dirs);
        self
    }

    /// The temporary directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `rel` under the temporary directory.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The content store every [`TestContext::ocibuild`] command uses (`OCIBUILD_CACHE`).
    pub fn store(&self) -> PathBuf {
        self.join("store")
    }

    /// The registry started by [`TestContext::with_registry`].
    pub fn registry(&self) -> &Registry {
        &self
            .registry
            .as_ref()
            .expect("TestContext::with_registry")
            .0
    }

    /// The auth.json holding the registry's login.
    pub fn auth_file(&self) -> &Path {
        &self
            .registry
            .as_ref()
            .expect("TestContext::with_registry")
            .1
    }

    /// `127.0.0.1:PORT` of the registry.
    pub fn registry_addr(&self) -> &str {
        &self.registry().addr
    }

    /// The `ocibuild` binary (see [`super::ocibuild`]) with this context's store, no user
    /// configuration (no registries file, an empty `XDG_CONFIG_HOME`), UTC, no colour, and
    /// the registry's login when there is one.
    pub fn ocibuild(&self) -> Command {
        self.ocibuild_with_store(&self.store())
    }

    /// [`TestContext::ocibuild`] with another store (a second machine).
    pub fn ocibuild_with_store(&self, store: &Path) -> Command {
        let mut c = super::ocibuild();
        c.env("OCIBUILD_CACHE", store)
            .env_remove("OCIBUILD_REGISTRIES")
            .env_remove("REGISTRY_AUTH_FILE")
            .env("XDG_CONFIG_HOME", self.join("no-config"))
            .env("TZ", "UTC")
            .env("NO_COLOR", "1")
            .env_remove("CLICOLOR_FORCE");
        if let Some((_, auth)) = &self.registry {
            c.env("REGISTRY_AUTH_FILE", auth);
        }
        c
    }

    /// [`snapshot_settings`] that also name this context's directory `[TEMP]` and its
    /// registry `[REGISTRY]`.
    pub fn snapshot_settings(&self) -> insta::Settings {
        let mut s = insta::Settings::clone_current();
        let mut own = vec![(regex_escape(&self.path().to_string_lossy()), "[TEMP]")];
        if let Some((reg, _)) = &self.registry {
            own.push((regex_escape(&reg.addr), "[REGISTRY]"));
        }
        for (re, to) in own {
            s.add_filter(&re, to);
        }
        for (re, to) in FILTERS {
            s.add_filter(re, *to);
        }
        s
    }
}

/// The filters every snapshot of the integration tests goes through, in order (the first that
/// matches a span wins, as insta applies them one after the other).
pub const FILTERS: &[(&str, &str)] = &[
    // Temporary directories and cargo's target directory, wherever they are.
    (r"/[^\s\x22']*/ocibuild-test-[A-Za-z0-9_]+", "[TEMP]"),
    (r"/[^\s\x22']*/tmp/it/[A-Za-z0-9_]+", "[TARGET_TMP]"),
    // Registries on loopback ports.
    (r"127\.0\.0\.1:[0-9]{2,5}", "[REGISTRY]"),
    // Digests: full, in tags (`sha256-<hex>.sig`), short (`sha256:0123456789ab`), bare.
    (r"sha256:[0-9a-f]{64}", "sha256:[digest]"),
    (r"sha256-[0-9a-f]{64}", "sha256-[digest]"),
    (r"sha256:[0-9a-f]{7,63}\b", "sha256:[short]"),
    (r"\b[0-9a-f]{64}\b", "[hex]"),
    (r"\b[0-9a-f]{128}\b", "[hex]"),
    // UUIDs (CycloneDX's serialNumber, derived from the image's digests).
    (
        r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
        "[uuid]",
    ),
    // A key's short id (`release.pub (0123456789ab)`): the tests' keys are made per run.
    (r"\b[0-9a-f]{12}\b", "[hex12]"),
    // Times: RFC 3339, durations in text (`1.2 s`, `350ms`, `0.01s`) and in JSON.
    (
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)",
        "[time]",
    ),
    (
        r#""durationSecs": [0-9.e-]+"#,
        r#""durationSecs": "[secs]""#,
    ),
    (r"\b\d+(\.\d+)? ?(ms|µs|s)\b", "[duration]"),
    // The binary's version (provenance, reports).
    (r"(ocibuild[ /@-]v?)\d+\.\d+\.\d+", "${1}[version]"),
    (r#"("ocibuild": ")\d+\.\d+\.\d+"#, "${1}[version]"),
    (
        r#"("name": "ocibuild",\s*"type": "application",\s*"version": ")\d+\.\d+\.\d+"#,
        "${1}[version]",
    ),
];

/// [`FILTERS`] as insta settings, for a test without a [`TestContext`].
pub fn snapshot_settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    for (re, to) in FILTERS {
        s.add_filter(re, *to);
    }
    s
}

/// `text` with every character a regex treats specially escaped.
pub fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Kills `pids` and removes `dirs` once this test process has exited (a watchdog `sh`, its
/// output discarded, polling every half second).
#[allow(clippy::zombie_processes)] // it outlives this process on purpose
pub fn clean_up_after_exit(pids: &[String], dirs: &[PathBuf]) {
    let script = r#"t=$1; shift; while kill -0 "$t" 2>/dev/null; do sleep 0.5; done
for a in "$@"; do case $a in /*) rm -rf -- "$a" ;; *) kill -9 "$a" 2>/dev/null ;; esac; done"#;
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script, "watchdog"])
        .arg(std::process::id().to_string())
        .args(pids)
        .args(dirs)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    cmd.spawn().expect("start the clean-up watchdog");
}
