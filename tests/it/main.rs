//! The integration tests, one binary: each `tests/it/*.rs` is a module, so the crate and the
//! harness are compiled and linked once (as uv and cargo do). Run one file's tests with
//! `cargo test --test it wheels::`, one test by its name.
//!
//! - `common`: the harness (the `ocibuild` binary, the readers, the registry).
//! - `aptfix`, `wheelfix`: .debs, signed Debian archives and wheels built by the tests.

// Tests print what they skip and measure.
#![allow(clippy::print_stdout, clippy::print_stderr)]
// A test binary has no public API: its helpers are `pub` across its modules.
#![allow(unreachable_pub)]

mod aptfix;
mod common;
mod wheelfix;

mod airgap;
mod apt_indices;
mod apt_recipe;
mod apt_repo;
mod apt_stream;
mod atomicity;
mod audit;
mod base_image;
mod build_core;
mod build_output;
mod cache_repo;
mod cli_progress;
mod cli_reference;
mod cli_registry_flags;
mod cli_text;
mod command_output;
mod concurrency;
mod cosign_attest;
mod credentials;
mod cuda;
mod cuda_steps;
mod docker_keys;
mod epoch;
mod features;
mod host_provides;
mod import;
mod import_build;
mod import_corpus;
mod import_e2e;
mod input_limits;
mod layer_contract;
mod lock_apt;
mod merged_usr;
mod network_errors;
mod online_debian;
mod online_frontend;
mod online_partial_pull;
mod online_platforms;
mod online_sbom_peers;
mod online_sdists;
mod online_seed_recipe;
mod online_steps;
mod online_uvlock;
mod online_wheels;
mod output_layout;
mod partial_pull;
mod partial_pull_base;
mod paths;
mod platforms;
mod platforms_audit;
mod podman_args;
mod readers;
mod recipe_errors;
mod registry_behaviours;
mod registry_fake;
mod registry_real;
mod report;
mod report_page;
mod report_trust;
mod rootfs;
mod run_stage;
mod sbom;
mod script_effects;
mod sdists;
mod shell_essential;
mod signing;
mod signing_faults;
mod signing_mirror;
mod steps;
mod store;
mod test_stage_cli;
mod test_stage_rootless;
mod thread_independence;
mod tools_smoke;
mod tree_walk;
mod two_registries;
mod uv_project;
mod vendor;
mod wheel_recipe;
mod wheels;
