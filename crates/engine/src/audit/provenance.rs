//! Build provenance: an in-toto Statement v1 whose subject is the image (name, manifest sha256)
//! with a SLSA Provenance v1 predicate: the recipe and lock (file name, sha256) as external
//! parameters, every locked input as a resolved dependency (base manifest, each .deb, the
//! interpreter archive, each wheel), the determinism contract and the compressor as internal
//! parameters, and ocibuild (with its version) as the builder.
//!
//! Deterministic bytes: no timestamp is written (SLSA's `startedOn`/`finishedOn` are left out:
//! a wall-clock time would make every statement unique), arrays are sorted, JSON is canonical.

use serde_json::{json, Value};

use super::attest_types::{oci_purl, AttestError, Inputs, Subject, TOOL_VERSION};
use crate::digest::Digest;
use crate::image::annotations;
use crate::json as cjson;

pub const MEDIA_TYPE: &str = "application/vnd.in-toto+json";
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
pub const PREDICATE_TYPE: &str = "https://slsa.dev/provenance/v1";
/// What an ocibuild build is: a recipe and its lock, turned into an image without running
/// anything (<https://ocibuild.dev/build/v1>).
pub const BUILD_TYPE: &str = "https://ocibuild.dev/build/v1";

fn sha(d: &Digest) -> Value {
    json!({"sha256": d.hex()})
}

/// The statement for `subject`, built from `inputs`.
pub fn statement(subject: &Subject, inputs: &Inputs<'_>) -> Result<Vec<u8>, AttestError> {
    let mut deps: Vec<Value> = Vec::new();
    if let Some(lock) = inputs.lock {
        if let Some(b) = &lock.base {
            let mut d = json!({
                "uri": oci_purl(&b.reference, &b.manifest_digest),
                "name": b.reference,
                "digest": sha(&b.manifest_digest),
                "mediaType": crate::image::MEDIA_TYPE_MANIFEST,
                "annotations": {"ocibuild:input": "base", "platform": b.platform},
            });
            if let Some(i) = &b.index_digest {
                d["annotations"]["indexDigest"] = json!(i.to_string());
            }
            deps.push(d);
        }
        if let Some(apt) = &lock.apt {
            for p in &apt.packages {
                deps.push(json!({
                    "uri": format!("{}/{}", p.source_url.trim_end_matches('/'), p.filename.trim_start_matches('/')),
                    "name": format!("{}_{}_{}", p.name, p.version, p.architecture),
                    "digest": sha(&p.sha256),
                    "annotations": {"ocibuild:input": "deb", "size": p.size},
                }));
            }
        }
        if let Some(py) = &lock.python {
            deps.push(json!({
                "uri": py.url,
                "digest": sha(&py.sha256),
                "annotations": {"ocibuild:input": "python-archive"},
            }));
        }
        for w in &lock.wheels {
            match &w.built_from {
                // The material is the project's files (their digest as the step's input).
                Some(b) if b.step.starts_with("project:") => deps.push(json!({
                    "uri": w.url,
                    "digest": sha(&b.sha256),
                    "annotations": {
                        "ocibuild:input": "project", "ocibuild:step": b.step,
                        "ocibuild:wheel": w.filename, "ocibuild:wheelSha256": w.sha256.hex(),
                    },
                })),
                // The material is the sdist; the wheel is what its step made of it.
                Some(b) => deps.push(json!({
                    "uri": w.url,
                    "digest": sha(&b.sha256),
                    "annotations": {
                        "ocibuild:input": "sdist", "ocibuild:step": b.step,
                        "ocibuild:wheel": w.filename, "ocibuild:wheelSha256": w.sha256.hex(),
                    },
                })),
                None => deps.push(json!({
                    "uri": w.url,
                    "name": w.filename,
                    "digest": sha(&w.sha256),
                    "annotations": {"ocibuild:input": "wheel", "size": w.size},
                })),
            }
        }
    }
    deps.sort_by(|a, b| {
        (a["uri"].as_str(), a["name"].as_str()).cmp(&(b["uri"].as_str(), b["name"].as_str()))
    });
    let mut external = json!({
        "recipe": {
            "path": inputs.recipe_file,
            "digest": sha(&inputs.recipe_digest),
            "identity": inputs.recipe_identity.to_string(),
        },
        "image": {"name": subject.name, "tag": subject.tag},
    });
    if let (Some(_), Some(d)) = (inputs.lock, inputs.lock_digest) {
        external["lock"] = json!({"path": inputs.lock_file, "digest": sha(&d)});
        if let Some(p) = &inputs.lock_platform {
            // The digest is of this platform's section, written as a one-platform lock.
            external["lock"]["platform"] = json!(p);
        }
    }
    let note = |k: &str| subject.annotation(k).map(str::to_string);
    let doc = json!({
        "_type": STATEMENT_TYPE,
        "subject": [{"name": subject.name, "digest": sha(&subject.digest())}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": external,
                "internalParameters": {
                    "contract": crate::layer::CONTRACT_VERSION,
                    "compression": note(annotations::COMPRESSION),
                    "created": subject.created(),
                },
                "resolvedDependencies": deps,
            },
            "runDetails": {
                "builder": {
                    "id": format!("https://ocibuild.dev/builder/ocibuild@{TOOL_VERSION}"),
                    "version": {"ocibuild": TOOL_VERSION},
                },
                "metadata": {"invocationId": format!("ocibuild:{}", subject.digest())},
            },
        },
    });
    Ok(cjson::to_canonical_vec("provenance statement", &doc)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::sbom::tests::{inputs, sample};

    #[test]
    fn provenance_lists_every_locked_input() {
        let (s, lock) = sample();
        let bytes = statement(&s, &inputs(&lock)).unwrap();
        assert_eq!(bytes, statement(&s, &inputs(&lock)).unwrap());
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["_type"], STATEMENT_TYPE);
        assert_eq!(v["subject"][0]["digest"]["sha256"], s.digest().hex());
        let deps = v["predicate"]["buildDefinition"]["resolvedDependencies"]
            .as_array()
            .unwrap();
        let digests: Vec<&str> = deps
            .iter()
            .map(|d| d["digest"]["sha256"].as_str().unwrap())
            .collect();
        for x in [&b"base"[..], b"deb", b"py", b"whl"] {
            assert!(digests.contains(&Digest::of(x).hex().as_str()));
        }
        assert_eq!(
            v["predicate"]["buildDefinition"]["externalParameters"]["lock"]["path"],
            "app.lock"
        );
        assert_eq!(
            v["predicate"]["buildDefinition"]["internalParameters"]["contract"],
            crate::layer::CONTRACT_VERSION
        );
    }
}
