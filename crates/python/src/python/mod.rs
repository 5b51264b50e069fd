//! Python in the image: the target interpreter (what the wheel step installs for), and wheels.
//!
//! - [`interpreter`]: the interpreter's version, ABI tag, platform and install scheme, known
//!   without running Python on the build host (from apt packages, an interpreter archive, or the
//!   base image's files).
//! - [`tags`]: wheel file names and which wheel fits the interpreter best.
//! - [`markers`]: PEP 508 environment markers (and the PEP 440 versions they compare).
//! - [`pylock`], [`uvlock`] and [`requirements`]: the locked inputs (`pylock.toml`, uv's
//!   `uv.lock`, hashed `requirements.txt`).
//! - [`index`]: the simple repository API (PEP 691 / PEP 503) for `requirements.txt` pins.
//! - [`wheel`]: installing verified wheels into a layer, without pip ([`dist_info`]: the
//!   RECORD, WHEEL and entry point formats; [`plan`]: how many layers the wheels go into).

pub mod dist_info;
pub mod elfdeps;
pub mod index;
mod install;
pub mod interpreter;
pub mod markers;
pub mod overlap;
pub mod plan;
pub mod pylock;
pub mod requirements;
pub mod tags;
pub mod uvlock;
pub mod wheel;
pub mod wheel_types;

pub use self::interpreter::{Interpreter, Scheme};

/// A TOML syntax error in a lock (`pylock.toml`, `uv.lock`), as their errors report it: the
/// line and column (`diag::syntax_place`), and the parser's message on one line with any
/// URL's login redacted, clipped to 1000 bytes.
pub(crate) struct TomlError {
    pub(crate) line: usize,
    pub(crate) col: usize,
    pub(crate) message: String,
}

impl TomlError {
    pub(crate) fn of(text: &str, e: &toml::de::Error) -> TomlError {
        let (line, col) = crate::diag::syntax_place(text, e.span(), e.message());
        let message = crate::bounded::clip_to(
            &crate::http::redact_urls(&crate::diag::one_line(e.message())),
            1000,
        )
        .into_owned();
        TomlError { line, col, message }
    }
}
