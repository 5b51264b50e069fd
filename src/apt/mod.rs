//! Debian/Ubuntu packages without running anything: a library for the `[apt]` recipe section
//! (not wired into recipes or the CLI yet).
//!
//! - [`version`]: Debian versions and relations, compared exactly as dpkg does.
//! - [`control`]: deb822 paragraphs and dependency fields.

pub mod control;
pub mod version;

pub use self::version::{Constraint, Relation, Version};
