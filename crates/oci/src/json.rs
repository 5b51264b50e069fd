//! Canonical JSON: object keys sorted by their UTF-8 bytes, no insignificant whitespace.
//!
//! Every JSON document ocibuild writes (image config, manifest, index, docker-archive manifest)
//! goes through [`to_canonical_vec`], so its bytes and therefore its digest depend only on its
//! content, never on map iteration order or on serde_json's features.

use serde::Serialize;
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    #[error("cannot encode {what} as JSON")]
    Encode {
        what: &'static str,
        source: serde_json::Error,
    },
}

/// Serialize `value` canonically.
pub fn to_canonical_vec<T: Serialize>(what: &'static str, value: &T) -> Result<Vec<u8>, JsonError> {
    let v = serde_json::to_value(value).map_err(|source| JsonError::Encode { what, source })?;
    let mut out = Vec::with_capacity(512);
    write_value(&v, &mut out).map_err(|source| JsonError::Encode { what, source })?;
    Ok(out)
}

fn write_value(v: &Value, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push(b'{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, k)?;
                out.push(b':');
                write_value(&map[k], out)?;
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out)?;
            }
            out.push(b']');
        }
        scalar => serde_json::to_writer(&mut *out, scalar)?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn keys_sorted_no_whitespace() {
        let mut m = HashMap::new();
        for k in ["zeta", "alpha", "Mid", "beta"] {
            m.insert(k.to_string(), vec![1, 2]);
        }
        let out = to_canonical_vec("test", &m).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"Mid":[1,2],"alpha":[1,2],"beta":[1,2],"zeta":[1,2]}"#
        );
    }

    #[test]
    fn nested_and_escapes() {
        let v = serde_json::json!({"b": {"y": "a\"b", "x": null}, "a": true});
        let out = to_canonical_vec("test", &v).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":true,"b":{"x":null,"y":"a\"b"}}"#
        );
    }
}
