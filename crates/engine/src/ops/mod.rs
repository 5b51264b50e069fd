//! The commands' engine: what `build` does from a parsed request to its outcome, and the one
//! platform loop `build`, `lock` and `verify` share (cargo's `ops`). The CLI parses flags into
//! a [`Session`](crate::session::Session) and a [`BuildRequest`], calls [`build()`], and
//! renders the [`BuildOutcome`](crate::outcome::BuildOutcome) it returns (or prints it as
//! `--json`); nothing here prints: what a person sees as it happens goes to [`BuildEvents`].

use crate::image::Platform;

mod attach;
pub mod build;
pub mod platforms;
pub mod stage;
#[cfg(test)]
mod tests;

pub use attach::{attach_built, Referrers};
pub use build::{build, BuildEvents, BuildRequest, BuildRun};
pub use platforms::{for_each, BaseIndex};
pub use stage::{check_podman_args, run_stage, StageOptions, TestedPlatform};

/// What a command's engine can fail with: each step's own error, whose message says it.
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    /// A step of one platform of a multi-platform recipe.
    #[error("platform {platform}")]
    Platform {
        platform: Platform,
        #[source]
        source: Box<OpsError>,
    },
    #[error(transparent)]
    Session(Box<crate::session::SessionError>),
    #[error(transparent)]
    Recipe(Box<crate::recipe::RecipeError>),
    #[error(transparent)]
    Attest(Box<crate::audit::attest::AttestError>),
    #[error(transparent)]
    Audit(Box<crate::audit::AuditError>),
    #[error(transparent)]
    Sign(Box<crate::sign::SignError>),
    #[error(transparent)]
    Push(Box<crate::push::PushError>),
    #[error(transparent)]
    Output(Box<crate::output::OutputError>),
    #[error(transparent)]
    Index(Box<crate::store::IndexError>),
    #[error(transparent)]
    Run(Box<crate::run::RunError>),
    /// A request the outputs cannot take (`--test` into an archive).
    #[error("{0}")]
    Request(String),
}

macro_rules! boxed_from {
    ($($variant:ident($t:ty)),*) => {$(
        impl From<$t> for OpsError {
            fn from(e: $t) -> Self {
                OpsError::$variant(Box::new(e))
            }
        }
    )*};
}
boxed_from!(
    Session(crate::session::SessionError),
    Recipe(crate::recipe::RecipeError),
    Attest(crate::audit::attest::AttestError),
    Audit(crate::audit::AuditError),
    Sign(crate::sign::SignError),
    Push(crate::push::PushError),
    Output(crate::output::OutputError),
    Index(crate::store::IndexError),
    Run(crate::run::RunError)
);
