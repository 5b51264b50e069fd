//! A command's inputs and policy in one place: the store, the command's one registry client,
//! the vendor directory, the threads, the reporter, `SOURCE_DATE_EPOCH`, and one
//! [`LockPolicy`] for every input the lock pins. The CLI parses its flags into a [`Session`];
//! [`crate::ops`] calls it per platform; the session resolves the base and the system layers
//! through the lock, stages vendored inputs, and calls [`build::build`]. Nothing here prints: notes go to the reporter's
//! [`Reporter::message`].

use std::io;
use std::path::{Path, PathBuf};

use crate::airgap::{self, VendorError};
use crate::apt::AptError;
use crate::base::{BaseError, BaseImage, LockChange};
use crate::build::{self, BuildError, BuildOptions, Built};
use crate::digest::Digest;
use crate::http::{HttpError, HttpFetcher};
use crate::lock::{Lock, LockError, LockFile, LockPolicy};
use crate::progress::Reporter;
use crate::recipe::{self, Recipe};
use crate::registry::settings::{self, SettingsError};
use crate::registry::{Client, Reference};
use crate::store::Store;
use crate::system::{System, SystemError};

mod exclude;
mod lockcheck;
mod resolve;
mod sdists;
mod shell;
mod steps;

pub use self::lockcheck::{check_lock, load_checked_lock, lock_changes};
pub use self::resolve::LockFiles;

/// Everything a session's steps can fail with: the module's own error, whose message says it.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Vendor(Box<VendorError>),
    #[error(transparent)]
    Base(Box<BaseError>),
    #[error(transparent)]
    System(Box<SystemError>),
    #[error(transparent)]
    Build(Box<BuildError>),
    #[error(transparent)]
    Apt(Box<AptError>),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error("reading {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("writing {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Step(Box<crate::steps::StepError>),
    #[error("step `{step}`: its builder")]
    StepBuilder {
        step: String,
        #[source]
        source: Box<SessionError>,
    },
    #[error("step `{step}`: its builder recipe builds itself: {}", chain.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" → "))]
    BuilderCycle { step: String, chain: Vec<PathBuf> },
    #[error("step `{step}`: its builder's config is not valid JSON")]
    BuilderConfig {
        step: String,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Recipe(Box<crate::recipe::RecipeError>),
    #[error(transparent)]
    Store(Box<crate::store::StoreError>),
    #[error("SOURCE_DATE_EPOCH={value:?} is not a non-negative integer of seconds")]
    EpochNotANumber {
        value: String,
        #[source]
        source: std::num::ParseIntError,
    },
    #[error("SOURCE_DATE_EPOCH={value} is after 9999-12-31T23:59:59Z ({max}), which an image's `created` cannot say", max = crate::layer::MAX_EPOCH)]
    EpochTooLate { value: u64 },
    #[error("source-date-epoch = \"git\": no commit time for {}: {reason} (commit the recipe, or set a number or SOURCE_DATE_EPOCH)", dir.display())]
    GitEpoch { dir: PathBuf, reason: String },
}

/// The committer time of the last commit of `dir`'s git repository (`git log -1
/// --format=%ct`), for `source-date-epoch = "git"`.
fn git_epoch(dir: &Path) -> Result<u64, SessionError> {
    let failed = |reason: String| SessionError::GitEpoch {
        dir: dir.to_path_buf(),
        reason,
    };
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["log", "-1", "--format=%ct"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| failed(format!("cannot run git: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(failed(crate::diag::one_line(err.trim())));
    }
    let e: u64 = text
        .trim()
        .parse()
        .map_err(|_| failed(format!("git printed {:?}, not a time", text.trim())))?;
    if e > crate::layer::MAX_EPOCH {
        return Err(SessionError::EpochTooLate { value: e });
    }
    Ok(e)
}

/// `SOURCE_DATE_EPOCH` from the environment, if set (empty is unset): the one place it is
/// read. [`Session::epoch`] then resolves it against the recipe's.
pub fn env_epoch() -> Result<Option<u64>, SessionError> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if !v.trim().is_empty() => {
            let e: u64 = v
                .trim()
                .parse()
                .map_err(|source| SessionError::EpochNotANumber {
                    value: v.clone(),
                    source,
                })?;
            if e > crate::layer::MAX_EPOCH {
                return Err(SessionError::EpochTooLate { value: e });
            }
            Ok(Some(e))
        }
        _ => Ok(None),
    }
}

macro_rules! boxed_from {
    ($($variant:ident($t:ty)),*) => {$(
        impl From<$t> for SessionError {
            fn from(e: $t) -> Self {
                SessionError::$variant(Box::new(e))
            }
        }
    )*};
}
boxed_from!(
    Store(crate::store::StoreError),
    Vendor(VendorError),
    Base(BaseError),
    System(SystemError),
    Build(BuildError),
    Apt(AptError)
);

/// The registry client, with the registries file's settings (mirrors, TLS; `None`: the
/// default locations) and the command line's `flags` over them (`--tls-verify`, `--authfile`,
/// `--creds`, `--cert-dir`); offline, one that refuses every request.
pub fn registry_client(
    registries: Option<&Path>,
    offline: bool,
    flags: crate::registry::RegistryFlags,
) -> Result<Client, SessionError> {
    let mut config = settings::load(settings::locate(registries).as_deref())?;
    config.offline = offline;
    flags.apply(&mut config);
    Ok(Client::new(config))
}

/// The fetcher of `[apt]` archives, index pages, wheels and interpreter archives for
/// `recipe`: https (system CA store), http, file, with the logins of [`credentials`];
/// offline, file only.
pub fn fetcher(recipe: &Recipe, offline: bool) -> Result<HttpFetcher<'static>, SessionError> {
    let f = if offline {
        HttpFetcher::offline()?
    } else {
        HttpFetcher::new()?
    };
    Ok(f.with_credentials(credentials(recipe)))
}

/// The logins `recipe`'s fetches may use: its URLs' `user:password@`, then those of its
/// pylock.toml's URLs, then netrc (`$NETRC`, else `~/.netrc`). None of them is ever written.
pub fn credentials(recipe: &Recipe) -> crate::http::Credentials {
    let mut c = recipe.credentials.clone();
    // The platform's pylock.toml, and with `[python.locks]` every platform's.
    let pylocks = recipe
        .python
        .iter()
        .flat_map(|p| p.packages.iter().chain(p.locks.values()));
    for packages in pylocks {
        if let recipe::PythonPackages::Pylock { path, .. } = packages {
            if let Ok(text) = fs_err::read_to_string(path) {
                c.extend(&crate::python::pylock::credentials(&text));
            }
        }
    }
    c.with_netrc()
}

/// A command's inputs and policy.
pub struct Session<'a> {
    pub store: &'a Store,
    /// The command's one registry client ([`registry_client`]): its logins and the schemes
    /// it found are kept for every step (the base, the cache repository, the push).
    pub client: &'a Client,
    pub threads: usize,
    pub policy: LockPolicy,
    /// `lock --allow-downgrade`: an `[apt]` resolution may lower a version the lock pins.
    pub allow_downgrade: bool,
    /// The flag that asked for [`LockPolicy::Locked`] (`--locked`, `--offline`), for messages.
    pub locked_by: &'static str,
    /// No network: every input must be in the store or the vendor directory.
    pub offline: bool,
    /// `--vendor DIR`: the lock's inputs are taken from there, each verified before use.
    pub vendor: Option<PathBuf>,
    /// `--push-only`: the registry pushed to (no local output is written).
    pub push_only_to: Option<String>,
    /// Rebuild every layer instead of taking it from the layer cache.
    pub no_cache: bool,
    /// `SOURCE_DATE_EPOCH`, overriding the recipe's.
    pub epoch_override: Option<u64>,
    /// Where the build's output goes (and other paths no layer may take in besides the lock,
    /// the default output and the store, which are always left out).
    pub outputs: Vec<PathBuf>,
    /// A multi-platform build's base index, as the first platform pinned it: a base tag the
    /// lock does not pin yet is resolved through it, so that every platform takes its manifest
    /// from one index even if the tag moves meanwhile ([`Session::base_index_of`]).
    pub base_index: Option<Digest>,
    /// Nothing is written or pushed (`plan`): the base's layers stay in the registry unless a
    /// step reads them and their facts are not cached.
    pub no_output: bool,
    pub reporter: &'a dyn Reporter,
    /// The podman `[[step]]`s run with, and the command line's flags for it.
    pub sandbox: crate::run::SandboxOptions,
    /// `--allow-network`: a step that asks for the network gets it.
    pub allow_network: bool,
    /// The lock files this command has read, each read once and written at most once per
    /// resolution (shared with the sessions of builder recipes).
    pub locks: std::sync::Arc<LockFiles>,
    /// The builder recipes being built (a step's `image = { recipe = … }`), outermost first:
    /// a recipe that needs itself is refused.
    pub building: Vec<PathBuf>,
}

/// What [`Session::lock`] pinned.
pub struct Locked {
    pub base: Option<(BaseImage, LockChange)>,
    /// `None` when the recipe has no `[apt]` and no `[python]`.
    pub system: Option<System>,
    pub lock_path: PathBuf,
}

impl<'a> Session<'a> {
    /// A session over `store` and `client` with the defaults a command starts from: one
    /// thread, [`LockPolicy::Resolve`], the network allowed, nothing overridden, podman from
    /// `PATH` with no extra flags. The CLI sets what its flags say on top; tests use it as
    /// it is.
    pub fn new(store: &'a Store, client: &'a Client, reporter: &'a dyn Reporter) -> Self {
        Session {
            store,
            client,
            threads: 1,
            policy: LockPolicy::Resolve,
            allow_downgrade: false,
            locked_by: "--locked",
            offline: false,
            vendor: None,
            push_only_to: None,
            no_cache: false,
            epoch_override: None,
            outputs: Vec::new(),
            base_index: None,
            no_output: false,
            reporter,
            sandbox: crate::run::SandboxOptions {
                podman: PathBuf::from("podman"),
                podman_args: Vec::new(),
                copies: Default::default(),
            },
            allow_network: false,
            locks: Default::default(),
            building: Vec::new(),
        }
    }

    /// Whether the lock may be written.
    pub(super) fn writes_lock(&self) -> bool {
        matches!(
            self.policy,
            LockPolicy::Resolve | LockPolicy::Update | LockPolicy::UpdateBase
        ) && !self.offline
    }

    /// The fetcher of this session for `recipe` ([`fetcher`]).
    pub fn fetcher(&self, recipe: &Recipe) -> Result<HttpFetcher<'a>, SessionError> {
        Ok(fetcher(recipe, self.offline)?.with_reporter(self.reporter))
    }

    fn note_logins_removed(&self, lock: &Lock, path: &Path) {
        if lock.had_logins {
            self.reporter.message(&format!(
                "{}: URLs with a login (user:password@) written again without it",
                path.display()
            ));
        }
    }

    /// The epoch of the recipe's layers and config: `SOURCE_DATE_EPOCH`, else the recipe's
    /// (seconds, or with `source-date-epoch = "git"` the time of the last commit of the
    /// recipe's directory), else 0. The one place it is resolved: the system layers, the steps
    /// and [`build::build`] take it.
    pub fn epoch(&self, recipe: &Recipe) -> Result<u64, SessionError> {
        if let Some(e) = self.epoch_override.or(recipe.image.source_date_epoch) {
            return Ok(e);
        }
        if recipe.image.epoch_from_git {
            return git_epoch(&recipe.dir);
        }
        Ok(0)
    }

    /// The lock as the policy asks for it: checked against the recipe (`Locked`), required as
    /// it is (`Frozen`), or `None` (resolve what it lacks).
    fn checked_lock(
        &self,
        file: &LockFile,
        recipe_path: &Path,
        recipe: &Recipe,
    ) -> Result<Option<Lock>, SessionError> {
        let mode = self.locked_by;
        let loaded = file.view(recipe.lock_view().as_deref());
        match self.policy {
            LockPolicy::Frozen => match loaded {
                Some(l) => {
                    // Used as it is; what no longer matches is said, not acted on.
                    let changes = lock_changes(&l, recipe);
                    if !changes.is_empty() {
                        self.reporter.message(&format!(
                            "warning: {} no longer matches the recipe ({}); --frozen ignores \
                             this and builds from the lock as it is",
                            file.path().display(),
                            changes.join("; ")
                        ));
                    }
                    Ok(Some(l))
                }
                None if lock_changes(&Lock::new(), recipe).is_empty() => Ok(Some(Lock::new())),
                None => Err(LockError::Missing {
                    mode: "--frozen",
                    path: file.path().to_path_buf(),
                    recipe: recipe_path.to_path_buf(),
                }
                .into()),
            },
            LockPolicy::Locked => Ok(Some(check_lock(loaded, recipe, recipe_path, mode)?)),
            LockPolicy::Resolve | LockPolicy::Update | LockPolicy::UpdateBase => Ok(None),
        }
    }

    /// Whether the base's layers may stay where they are: nothing is written locally
    /// (`--push-only`) and the push goes to the base's own registry, which mounts them. They
    /// are still downloaded when a step reads the base's files ([`Session::reads_base`]) and
    /// its facts are not cached.
    fn shallow_base(&self, recipe: &Recipe) -> bool {
        let recipe::Base::Image { reference } = &recipe.base else {
            return false;
        };
        // The `paths` layer is written against the layers below it: they must be here.
        if !recipe.paths.is_empty() {
            return false;
        }
        if self.no_output {
            return true;
        }
        let Some(registry) = self.push_only_to.as_deref() else {
            return false;
        };
        reference
            .parse::<Reference>()
            .is_ok_and(|r| r.registry() == registry)
    }

    /// Whether a step reads the base's files: `[apt]` (its dpkg status, merged /usr), a
    /// `[python]` interpreter found in the base, the rootfs step (its account files).
    fn reads_base(recipe: &Recipe) -> bool {
        recipe.apt.is_some()
            || recipe.has_rootfs_step()
            || recipe
                .python
                .as_ref()
                .is_some_and(|p| !matches!(p.source, recipe::PythonSource::Archive(_)))
    }

    /// Copies the lock's inputs the store lacks from the vendor directory (verified); offline,
    /// an input in neither is an error. Nothing to do without `--vendor` or `--offline`.
    fn stage_vendored(&self, lock: &Lock) -> Result<(), SessionError> {
        if self.vendor.is_none() && !self.offline {
            return Ok(());
        }
        let dir = self
            .vendor
            .as_deref()
            .map(|d| airgap::VendorDir::open(d, false).map_err(SessionError::from))
            .transpose()?;
        let staged = airgap::stage(
            &airgap::inputs(lock, None),
            dir.as_ref(),
            self.store,
            self.offline,
        )?;
        if let Some(d) = &dir {
            self.reporter.message(&format!(
                "vendor {}: {} blobs ({} bytes) copied into the store, verified",
                d.root().display(),
                staged.blobs,
                staged.bytes
            ));
        }
        Ok(())
    }

    /// Builds `recipe` (loaded from `recipe_path`) into the store, writing no output: the
    /// lock checked as the policy says, vendored inputs staged, the base and the system layers
    /// resolved through the lock, then [`build::build`]. `build` uses the user's store,
    /// `verify` an empty temporary one.
    pub fn build(&self, recipe_path: &Path, recipe: &Recipe) -> Result<Built, SessionError> {
        let identity = recipe
            .identity()
            .map_err(|e| SessionError::Build(Box::new(BuildError::from(e))))?;
        let mut own: Vec<PathBuf> = self.outputs.iter().map(|p| exclude::absolute(p)).collect();
        own.push(exclude::absolute(&Lock::path_for(recipe_path)));
        own.push(exclude::absolute(&crate::output::default_output(
            recipe_path,
        )));
        own.push(exclude::absolute(self.store.root()));
        let recipe = &exclude::without_own_files(recipe, &own);
        let file = self.lock_file(&Lock::path_for(recipe_path))?;
        let checked = self.checked_lock(&file, recipe_path, recipe)?;
        let staged = checked
            .or_else(|| file.view(recipe.lock_view().as_deref()))
            .unwrap_or_else(Lock::new);
        self.stage_vendored(&staged)?;
        let r = self.resolve(recipe, recipe_path, true)?;
        let opts = BuildOptions {
            threads: self.threads,
            epoch: r.epoch,
            no_cache: self.no_cache,
            // What defines the image, not the file's bytes: a comment or a changed [[test]]
            // leaves the manifest as it is.
            recipe_digest: Some(identity),
            // The lock as this build leaves it (written by the first build).
            lock_digest: r.lock_digest,
        };
        let base = r.base.as_ref().map(|(b, _)| b);
        let mut sys = r.system;
        sys.layers.extend(r.step_layers);
        let step_reports = r.steps;
        let mut built = build::build(recipe, base, &sys.layers, &opts, self.store, self.reporter)?;
        built.interpreter = sys.interpreter;
        built.wheels = sys.wheel_report;
        built.rootfs = sys.rootfs;
        built.host_provides = sys.host_provides;
        built.warnings = sys.warnings;
        if let Some(t) = &recipe.image.cuda {
            // A recipe of steps alone has no system part to start the report.
            let c = built
                .wheels
                .cuda
                .get_or_insert_with(|| crate::cuda::CudaReport {
                    archs: t.names(),
                    ptx: t.ptx.as_str().to_string(),
                    libraries: Vec::new(),
                });
            c.libraries
                .extend(step_reports.iter().flat_map(|r| r.cuda.iter().cloned()));
            c.libraries.sort_by(|a, b| a.path.cmp(&b.path));
        }
        built.steps = step_reports;
        built.shell = shell::image_has_shell(self.store, recipe, &built)
            .map_err(|e| SessionError::System(Box::new(e)))?;
        if built.shell == Some(false) && shell::expects_shell(recipe) {
            built.warnings.push(format!(
                "the image has no {}: `podman run IMAGE /bin/sh …` and a [config.healthcheck] \
                 `CMD-SHELL` will fail; add `[apt] essential = true` (Debian's essential set) \
                 or a package or layer with a shell",
                shell::SHELL
            ));
        }

        for d in self.store.repaired() {
            self.reporter.message(&format!(
                "store blob {d} had changed since it was written (edited in place through a \
                 layout's hard link?): removed, and built or fetched again"
            ));
        }
        Ok(built)
    }
}
