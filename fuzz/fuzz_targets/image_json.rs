//! Image JSON, the documents read from registries, layouts and archives (the first byte picks
//! the reader): the lenient readers of `image::read` (`ManifestHead`, `AnyManifest`,
//! `ReadIndex` and its tag and image queries, `ReadManifest`), and the strict documents this
//! builder writes (`Manifest`, `Index`, `ImageConfig`): those, when they parse, are written
//! canonically (`json::to_canonical_vec`), parse back equal, and canonical bytes are a fixed
//! point. Platforms in descriptors go through `Platform::parse` as `os/arch[/variant]`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ocibuild::image::read::{ReadIndex, ReadManifest};
use ocibuild::image::{AnyManifest, ImageConfig, Index, ManifestHead, Platform};
use ocibuild::json::to_canonical_vec;
use serde::de::DeserializeOwned;
use serde::Serialize;

fn strict<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(data: &[u8]) {
    let Ok(doc) = serde_json::from_slice::<T>(data) else {
        return;
    };
    let bytes = to_canonical_vec("fuzz document", &doc).expect("a parsed document encodes");
    let back: T = serde_json::from_slice(&bytes).expect("canonical JSON parses");
    assert_eq!(back, doc, "canonical JSON does not round-trip");
    let again = to_canonical_vec("fuzz document", &back).expect("encodes");
    assert_eq!(again, bytes, "canonical JSON is not a fixed point");
}

fn platform(p: &Platform) {
    let mut s = format!("{}/{}", p.os, p.architecture);
    if let Some(v) = &p.variant {
        s.push('/');
        s.push_str(v);
    }
    if let Ok(n) = Platform::parse(&s) {
        let mut again = format!("{}/{}", n.os, n.architecture);
        if let Some(v) = &n.variant {
            again.push('/');
            again.push_str(v);
        }
        assert_eq!(
            Platform::parse(&again).as_ref(),
            Ok(&n),
            "Platform::parse is not idempotent"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, doc)) = data.split_first() else {
        return;
    };
    match which % 7 {
        0 => {
            if let Ok(m) = serde_json::from_slice::<ManifestHead>(doc) {
                for d in m.layers.iter().chain([&m.config]) {
                    if let Some(p) = &d.platform {
                        platform(p);
                    }
                }
            }
        }
        1 => {
            let _ = serde_json::from_slice::<AnyManifest>(doc);
        }
        2 => {
            if let Ok(i) = serde_json::from_slice::<ReadIndex>(doc) {
                for tag in i.tags() {
                    assert!(i.tagged(&tag).is_some(), "tag {tag} listed but not found");
                }
                for d in i.images() {
                    assert!(d.artifact_type.is_none());
                    if let Some(p) = &d.platform {
                        platform(p);
                    }
                }
            }
        }
        3 => {
            let _ = serde_json::from_slice::<ReadManifest>(doc);
        }
        4 => strict::<ocibuild::image::Manifest>(doc),
        5 => strict::<Index>(doc),
        _ => strict::<ImageConfig>(doc),
    }
});
