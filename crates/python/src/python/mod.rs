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
