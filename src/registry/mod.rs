//! Registry access: image references (more to come: authentication, the client).

pub mod reference;

pub use reference::{Reference, ReferenceError};
