//! Python in the image: the target interpreter (what the wheel step installs for), and wheels.
//!
//! - [`interpreter`]: the interpreter's version, ABI tag, platform and install scheme, known
//!   without running Python on the build host (from apt packages, an interpreter archive, or the
//!   base image's files).

pub mod interpreter;

pub use self::interpreter::{Interpreter, Scheme};
