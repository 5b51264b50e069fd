//! The layer cache's keys. Every key (of a layer, or of a fingerprint that leads to one) is the
//! sha256 of canonical JSON that starts from the same header: what the key is of (`kind`, with
//! a version to bump when that layer's content changes for the same inputs), the determinism
//! contract's version, the compressor and the epoch. A key never reaches an image: changing
//! one only makes the cache miss.

use serde_json::{Map, Value};

use super::{Compression, CONTRACT_VERSION};
use crate::digest::Digest;
use crate::json::{to_canonical_vec, JsonError};

/// The key of `kind` for `fields` (names other than the header's). `what` names the key in
/// an error.
pub fn cache_key<'a>(
    what: &'static str,
    kind: &str,
    compression: Compression,
    epoch: u64,
    fields: impl IntoIterator<Item = (&'a str, Value)>,
) -> Result<Digest, JsonError> {
    let mut doc: Map<String, Value> = fields
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    doc.insert("kind".into(), kind.into());
    doc.insert("contract".into(), CONTRACT_VERSION.into());
    doc.insert("compression".into(), compression.describe().into());
    doc.insert("epoch".into(), epoch.into());
    Ok(Digest::of(&to_canonical_vec(what, &Value::Object(doc))?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The header merged into the fields is the document the keys were always the hash of
    /// (canonical JSON sorts the names), so no cache entry changes its key.
    #[test]
    fn same_bytes_as_the_whole_document() {
        let c = Compression::GZIP;
        let whole = json!({
            "kind": "layer/2",
            "contract": CONTRACT_VERSION,
            "compression": c.describe(),
            "epoch": 7,
            "entries": [["a", 1]],
        });
        let want = Digest::of(&to_canonical_vec("k", &whole).unwrap());
        let got = cache_key("k", "layer/2", c, 7, [("entries", json!([["a", 1]]))]).unwrap();
        assert_eq!(got, want);
        let other = cache_key("k", "layer/2", c, 8, [("entries", json!([["a", 1]]))]).unwrap();
        assert_ne!(got, other);
    }
}
