//! Raw value shapes the recipe's checks read: a map of spanned strings, an argv, an exposed
//! port as written (the serde types of [`super::raw`] hold them).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use toml::Spanned;

pub(super) type SpannedMap = BTreeMap<Spanned<String>, Spanned<String>>;

/// An argv: an array of strings. Its own type so that `run = "make test"` (a shell string) fails
/// with a message that shows the array form.
#[derive(Debug)]
pub(super) struct Argv(pub Vec<String>);

impl<'de> Deserialize<'de> for Argv {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Argv;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"an array of strings (argv), like ["/bin/sh", "-c", "echo hi"]"#)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Argv, A::Error> {
                let mut v = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    v.push(s);
                }
                Ok(Argv(v))
            }
        }
        d.deserialize_seq(V)
    }
}

/// An exposed port as written: `"8080"`, `"53/udp"` or the integer `8080`.
#[derive(Debug)]
pub(super) enum PortValue {
    Int(i64),
    Str(String),
}

impl<'de> Deserialize<'de> for PortValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = PortValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"a port like 8080, "8080" or "53/udp""#)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<PortValue, E> {
                Ok(PortValue::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<PortValue, E> {
                Ok(PortValue::Int(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PortValue, E> {
                Ok(PortValue::Str(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}
