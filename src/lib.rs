//! ocibuild: a daemonless, reproducible OCI image builder.
//!
//! Modules, foundations first; a module uses only those above it:
//! - [`defaults`]: default index, archive and registry locations.
//! - [`digest`], [`json`]: sha256 digests, hashing streams, canonical JSON.
//! - [`bounded`]: small input files read as regular files with a bound; long values clipped in
//!   messages.
//! - [`diag`]: where in a TOML file a problem is, and did-you-mean for misspelt names.
//! - [`fsat`]: trees read through directory handles, never through a symlink below the root.
//! - [`progress`]: the one trait progress events go through.
//! - [`http`]: the one HTTP layer: the client, bounded waits, retries, redaction, [`http::Fetcher`].
//! - [`cuda`]: GPU code for other GPUs pruned from CUDA libraries' fatbins, in place.
//! - [`layer`]: the deterministic tar writer (the determinism contract) and compressors.
//! - [`store`]: the content-addressed blob store and the layer cache.
//! - [`unpack`]: unpacking an untrusted tar beneath a root, never following a link.
//! - [`image`]: OCI config, manifest and index documents.
//! - [`recipe`]: the recipe TOML schema and its validation.
//! - [`lock`]: the lock file, every input pinned by digest.
//! - [`registry`]: image references, registry auth and the OCI Distribution client.
//! - [`imageref`]: the one parser of images named on the command line (`[oci:]DIR[:TAG]`,
//!   archives, `docker://REF`, digests, `vendor:DIR`), with what each command takes.
//! - [`apt`]: Debian/Ubuntu packages: signed indices, a resolver, and .debs rewritten into a
//!   layer (driven by [`system`] for the recipe's `[apt]`).
//! - [`python`]: the target Python interpreter and wheels.
//! - [`rootfs`]: what maintainer scripts and a Debian base would have made (the baseline
//!   directories, accounts, alternatives), planned without running anything.
//! - [`output`]: OCI layout, oci-archive and docker-archive writers.
//! - [`base`]: the base image, resolved through the lock and fetched into the store.
//! - [`system`]: the `[apt]` packages layer, the `[python]` archive layer, the interpreter.
//! - [`build`]: the planner: recipe → layers → image → output.
//! - [`run`]: the test stage (podman, GPU discovery) and the built-in cuda-smoke check; the
//!   sandbox a build step runs in.
//! - [`airgap`]: vendor directories (every locked input, content-addressed).
//! - [`push`]: pushing a built image to a registry.
//! - [`cache_repo`]: the registry as a shared layer cache (entries as small OCI artifacts).
//! - [`mirror`]: copying images into a registry, digests unchanged.
//! - [`audit`]: `diff` and `verify`: comparing images down to files, checking a rebuild.
//! - [`steps`]: `[[step]]`, commands run at build time in a podman sandbox whose inputs are
//!   declared; their outputs read back as layers, cached by key and pinned in the lock.
//! - [`sign`]: sigstore signatures and DSSE attestations (ECDSA P-256), signing and checking.
//! - [`outcome`]: what a build did, per platform: the `build --json` document.
//! - [`session`]: a command's inputs and one lock policy: the base, the system layers and the
//!   vendored inputs through the lock, then [`build`]; what [`ops`] calls per platform.
//! - [`ops`]: the commands' engine: `build`'s pipeline (every platform, attach, write, test,
//!   push, sign) from a request to its outcome, and the one platform loop.
//! - [`import`]: `ocibuild import`: a Dockerfile read into a recipe, with a table of what
//!   each instruction became.
//! - [`cli`]: clap types and subcommands; the only module that prints.

pub mod airgap;
pub mod apt;
pub mod audit;
pub mod base;
pub mod bounded;
pub mod build;
pub mod cache_repo;
pub mod cli;
pub mod cuda;
pub mod defaults;
pub mod diag;
pub mod digest;
pub mod fsat;
pub mod http;
pub mod image;
pub mod imageref;
pub mod import;
pub mod json;
pub mod layer;
pub mod lock;
pub mod mirror;
pub mod ops;
pub mod outcome;
pub mod output;
pub mod partial;
pub mod paths;
pub mod progress;
pub mod push;
pub mod python;
pub mod recipe;
pub mod registry;
pub mod report;
pub mod rootfs;
pub mod run;
pub mod session;
pub mod sign;
pub mod steps;
pub mod store;
pub mod system;
pub mod tarbound;
pub mod unpack;
