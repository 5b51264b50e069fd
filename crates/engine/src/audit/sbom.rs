//! SBOMs (SPDX 2.3 JSON, CycloneDX 1.6 JSON) of a built image, made from its lock, not from a
//! scan: the base image (by manifest digest), every .deb, the interpreter archive and every
//! wheel the lock pins, each with its sha256, where it was downloaded from, and the digest of
//! the layer that holds it.
//!
//! The bytes are a function of the image and the lock alone: the creation time is the image's
//! (SOURCE_DATE_EPOCH), the SPDX namespace and the CycloneDX serial number derive from the
//! manifest digest, arrays are sorted and the JSON is canonical.

use serde_json::{json, Value};

use super::attest::{
    id_safe, oci_purl, purl_encode, uuid_from, AttestError, Inputs, Subject, APT_LAYER,
    PYTHON_LAYER, TOOL_VERSION,
};
use super::license;
use crate::digest::Digest;
use crate::image::annotations;
use crate::json as cjson;
use crate::python::plan::{group_name, is_wheel_layer, plan_layers, LayerLimits};

pub const SPDX_MEDIA_TYPE: &str = "application/spdx+json";
pub const CYCLONEDX_MEDIA_TYPE: &str = "application/vnd.cyclonedx+json";

/// An SBOM format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Spdx,
    CycloneDx,
}

impl Format {
    pub fn media_type(self) -> &'static str {
        match self {
            Format::Spdx => SPDX_MEDIA_TYPE,
            Format::CycloneDx => CYCLONEDX_MEDIA_TYPE,
        }
    }
}

/// The SBOM of `subject` built from `inputs`, in `format`.
pub fn generate(
    format: Format,
    subject: &Subject,
    inputs: &Inputs<'_>,
) -> Result<Vec<u8>, AttestError> {
    match format {
        Format::Spdx => spdx(subject, inputs),
        Format::CycloneDx => cyclonedx(subject, inputs),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Base,
    Deb,
    Interpreter,
    Wheel,
}

/// A layer of the image: 1-based position, digest, name (`dev.ocibuild.layer`), base or ours.
#[derive(Clone, Debug)]
struct Layer {
    position: usize,
    digest: Digest,
    name: Option<String>,
    base: bool,
}

impl Layer {
    fn spdx_id(&self) -> String {
        format!("SPDXRef-Layer-{}", self.position)
    }
    fn label(&self) -> String {
        match (&self.name, self.base) {
            (_, true) => format!("layer {} (base)", self.position),
            (Some(n), false) => format!("layer {} ({n})", self.position),
            (None, false) => format!("layer {}", self.position),
        }
    }
}

/// One locked input.
#[derive(Clone, Debug)]
struct Item {
    kind: Kind,
    spdx_id: String,
    name: String,
    version: Option<String>,
    purl: Option<String>,
    url: Option<String>,
    sha256: Digest,
    /// The layers that hold it (the base: all of its layers).
    layers: Vec<Layer>,
    /// Its declared licence (an SPDX expression), if its files say one.
    license: Option<String>,
    /// Its supplier (SPDX form: `Person: …` / `Organization: …`), if its files name one.
    supplier: Option<String>,
    /// A wheel built from an sdist: the sdist's sha256 and the step (`url` is the sdist's).
    built_from: Option<crate::lock::BuiltFrom>,
}

fn layers_of(subject: &Subject, inputs: &Inputs<'_>) -> Vec<Layer> {
    let base = subject.base_layer_count(inputs.recipe_layers);
    subject
        .manifest
        .layers
        .iter()
        .enumerate()
        .map(|(i, d)| Layer {
            position: i + 1,
            digest: d.digest,
            name: d.annotations.get(annotations::LAYER_NAME).cloned(),
            base: i < base,
        })
        .collect()
}

/// The lock's Debian-like distribution for a source URL (`ubuntu` when it says so).
fn deb_namespace(source_url: &str) -> &'static str {
    if source_url.contains("ubuntu") {
        "ubuntu"
    } else {
        "debian"
    }
}

fn items(inputs: &Inputs<'_>, layers: &[Layer]) -> Vec<Item> {
    let named = |name: &str| -> Vec<Layer> {
        layers
            .iter()
            .filter(|l| !l.base && l.name.as_deref() == Some(name))
            .take(1)
            .cloned()
            .collect()
    };
    let mut out = Vec::new();
    let Some(lock) = inputs.lock else {
        return out;
    };
    if let Some(b) = &lock.base {
        out.push(Item {
            kind: Kind::Base,
            spdx_id: "SPDXRef-Base".into(),
            name: b.reference.clone(),
            version: Some(b.manifest_digest.to_string()),
            purl: Some(oci_purl(&b.reference, &b.manifest_digest)),
            url: None,
            sha256: b.manifest_digest,
            layers: layers.iter().filter(|l| l.base).cloned().collect(),
            license: None,
            supplier: None,
            built_from: None,
        });
    }
    if let Some(apt) = &lock.apt {
        let in_layer = named(APT_LAYER);
        for p in &apt.packages {
            out.push(Item {
                kind: Kind::Deb,
                spdx_id: format!(
                    "SPDXRef-deb-{}-{}-{}",
                    id_safe(&p.name),
                    id_safe(&p.architecture),
                    &p.sha256.hex()[..12]
                ),
                name: p.name.clone(),
                version: Some(p.version.clone()),
                purl: Some(format!(
                    "pkg:deb/{}/{}@{}?arch={}",
                    deb_namespace(&p.source_url),
                    purl_encode(&p.name, false),
                    purl_encode(&p.version, true),
                    purl_encode(&p.architecture, false)
                )),
                url: Some(format!(
                    "{}/{}",
                    p.source_url.trim_end_matches('/'),
                    p.filename.trim_start_matches('/')
                )),
                sha256: p.sha256,
                layers: in_layer.clone(),
                license: inputs.licenses.get(&p.sha256).map(str::to_string),
                supplier: inputs.licenses.supplier(&p.sha256).map(str::to_string),
                built_from: None,
            });
        }
    }
    if let Some(py) = &lock.python {
        let file = py.url.rsplit('/').next().unwrap_or(&py.url).to_string();
        out.push(Item {
            kind: Kind::Interpreter,
            spdx_id: format!("SPDXRef-python-{}", &py.sha256.hex()[..12]),
            name: file,
            version: None,
            purl: None,
            url: Some(py.url.clone()),
            sha256: py.sha256,
            layers: named(PYTHON_LAYER),
            license: None,
            supplier: None,
            built_from: None,
        });
    }
    // The wheel layers' grouping is a pure function of the locked wheels (names and sizes) and
    // of how many other layers the image has: plan it again to find each wheel's layer by
    // name. (The size bound only ever refuses a plan, so it is not needed here.)
    let sizes: Vec<(&str, u64)> = lock
        .wheels
        .iter()
        .map(|w| (w.name.as_str(), w.size))
        .collect();
    let wheel_layers = layers
        .iter()
        .filter(|l| !l.base && l.name.as_deref().is_some_and(is_wheel_layer))
        .count();
    let plan = LayerLimits::for_image(layers.len() - wheel_layers, u64::MAX)
        .and_then(|limits| plan_layers(&sizes, &limits).ok())
        .unwrap_or_default();
    let mut wheel_layer = vec![Vec::new(); lock.wheels.len()];
    for group in plan {
        let names: Vec<&str> = group
            .iter()
            .map(|&i| lock.wheels[i].name.as_str())
            .collect();
        let layer = named(&group_name(&names));
        for &i in &group {
            wheel_layer[i] = layer.clone();
        }
    }
    for (wi, w) in lock.wheels.iter().enumerate() {
        out.push(Item {
            kind: Kind::Wheel,
            spdx_id: format!(
                "SPDXRef-wheel-{}-{}",
                id_safe(&w.name),
                &w.sha256.hex()[..12]
            ),
            name: w.name.clone(),
            version: Some(w.version.clone()),
            purl: Some(format!(
                "pkg:pypi/{}@{}",
                purl_encode(&w.name, false),
                purl_encode(&w.version, true)
            )),
            url: Some(w.url.clone()),
            sha256: w.sha256,
            layers: wheel_layer[wi].clone(),
            license: inputs.licenses.get(&w.sha256).map(str::to_string),
            supplier: inputs.licenses.supplier(&w.sha256).map(str::to_string),
            built_from: w.built_from.clone(),
        });
    }
    out
}

/// One `[apt] host-provides` name of the lock: provided by the host at run time.
struct HostProvided {
    spdx_id: String,
    name: String,
    /// The packages whose dependency it answers.
    dependents: Vec<String>,
    comment: String,
}

fn host_provided(inputs: &Inputs<'_>) -> Vec<HostProvided> {
    let Some(apt) = inputs.lock.and_then(|l| l.apt.as_ref()) else {
        return Vec::new();
    };
    apt.host_provides
        .iter()
        .map(|h| {
            let mut dependents: Vec<String> = h
                .satisfies
                .iter()
                .map(|s| s.split_once(':').map_or(s.as_str(), |(p, _)| p).to_string())
                .collect();
            dependents.dedup();
            let comment = if h.satisfies.is_empty() {
                "provided by the host at run time, not in the image ([apt] host-provides); no \
                 package of the image depends on it"
                    .to_string()
            } else {
                format!(
                    "provided by the host at run time, not in the image ([apt] host-provides); \
                     it satisfies {}",
                    h.satisfies.join("; ")
                )
            };
            HostProvided {
                spdx_id: format!("SPDXRef-host-{}", id_safe(&h.name)),
                name: h.name.clone(),
                dependents,
                comment,
            }
        })
        .collect()
}

/// `url` as an SPDX `downloadLocation` when it has the form SPDX 2.3 accepts (scheme, a host
/// name with a 2-5 letter top-level domain, optional port, path); else `NOASSERTION` (a
/// loopback address, a relative path), the URL then being kept in `sourceInfo`.
fn spdx_download_location(url: &str) -> String {
    let lower = url.to_ascii_lowercase();
    let rest = [
        "http://", "https://", "ftp://", "sftp://", "git://", "ssh://", "svn://",
    ]
    .iter()
    .find_map(|s| lower.strip_prefix(s));
    let ok = rest.is_some_and(|rest| {
        let authority = rest.split('/').next().unwrap_or("");
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        let port_ok = port
            .is_none_or(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()));
        let labels: Vec<&str> = host.split(['.', '-']).collect();
        let tld = host.rsplit('.').next().unwrap_or("");
        port_ok
            && host.contains('.')
            && labels
                .iter()
                .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric()))
            && (2..=5).contains(&tld.len())
            && tld.bytes().all(|b| b.is_ascii_alphabetic())
    });
    if ok {
        url.to_string()
    } else {
        "NOASSERTION".to_string()
    }
}

fn image_purl(subject: &Subject) -> String {
    oci_purl(
        &format!("{}:{}", subject.name, subject.tag),
        &subject.digest(),
    )
}

/// The image's supplier: its `org.opencontainers.image.vendor` annotation ("the distributing
/// entity", set with `[config] annotations`), as an SPDX organization; None without one.
fn image_supplier(subject: &Subject) -> Option<String> {
    let v = subject
        .manifest
        .annotations
        .get("org.opencontainers.image.vendor")?;
    let v: String = v
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, '(' | ')'))
        .collect();
    let v = v.split_whitespace().collect::<Vec<_>>().join(" ");
    (!v.is_empty()).then(|| format!("Organization: {v}"))
}

/// The name in an SPDX supplier (`Person: NAME (EMAIL)`), for CycloneDX's `supplier.name`.
fn cyclonedx_supplier(spdx: &str) -> Option<&str> {
    let (_, rest) = spdx.split_once(": ")?;
    Some(rest.split(" (").next().unwrap_or(rest))
}

fn tool() -> String {
    format!("ocibuild-{TOOL_VERSION}")
}

/// What the SPDX document was made from (its `creationInfo.comment`).
fn creation_comment(inputs: &Inputs<'_>) -> String {
    format!(
        "Generated by ocibuild from {} and {} (not from a scan of the image)",
        inputs.recipe_file,
        match (&inputs.lock, &inputs.lock_platform) {
            (Some(_), Some(p)) => format!("{} (its {p} section)", inputs.lock_file),
            (Some(_), None) => inputs.lock_file.clone(),
            (None, _) => "no lock".into(),
        }
    )
}

/// SPDX 2.3 JSON.
pub fn spdx(subject: &Subject, inputs: &Inputs<'_>) -> Result<Vec<u8>, AttestError> {
    let layers = layers_of(subject, inputs);
    let items = items(inputs, &layers);
    let digest = subject.digest();
    let purl_ref = |p: &str| json!([{"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl", "referenceLocator": p}]);
    let vendor = image_supplier(subject);
    let mut packages = vec![json!({
        "SPDXID": "SPDXRef-Image",
        "name": subject.name,
        "versionInfo": subject.tag,
        "downloadLocation": "NOASSERTION",
        "supplier": vendor.as_deref().unwrap_or("NOASSERTION"),
        "filesAnalyzed": false,
        "licenseConcluded": "NOASSERTION",
        "licenseDeclared": "NOASSERTION",
        "copyrightText": "NOASSERTION",
        "primaryPackagePurpose": "CONTAINER",
        "checksums": [{"algorithm": "SHA256", "checksumValue": digest.hex()}],
        "externalRefs": purl_ref(&image_purl(subject)),
        "comment": format!("OCI image manifest {digest}"),
    })];
    let mut rels: Vec<(String, &str, String)> = vec![(
        "SPDXRef-DOCUMENT".into(),
        "DESCRIBES",
        "SPDXRef-Image".into(),
    )];
    for l in &layers {
        packages.push(json!({
            "SPDXID": l.spdx_id(),
            "name": format!("{}: {}", subject.name, l.label()),
            "versionInfo": l.digest.to_string(),
            "downloadLocation": "NOASSERTION",
            // Ours: the image's supplier; the base's: not known.
            "supplier": if l.base { None } else { vendor.as_deref() }.unwrap_or("NOASSERTION"),
            "filesAnalyzed": false,
            "licenseConcluded": "NOASSERTION",
            "licenseDeclared": "NOASSERTION",
            "copyrightText": "NOASSERTION",
            "primaryPackagePurpose": "ARCHIVE",
            "checksums": [{"algorithm": "SHA256", "checksumValue": l.digest.hex()}],
            "comment": format!("{} of the image (blob {})", l.label(), l.digest),
        }));
        rels.push(("SPDXRef-Image".into(), "CONTAINS", l.spdx_id()));
    }
    for it in &items {
        let mut p = json!({
            "SPDXID": it.spdx_id,
            "name": it.name,
            "downloadLocation": it.url.as_deref().map(spdx_download_location).unwrap_or_else(|| "NOASSERTION".into()),
            "supplier": it.supplier.as_deref().unwrap_or("NOASSERTION"),
            "filesAnalyzed": false,
            // Declared (what the package's files say), never concluded.
            "licenseConcluded": "NOASSERTION",
            "licenseDeclared": it.license.as_deref().unwrap_or("NOASSERTION"),
            "copyrightText": "NOASSERTION",
            "checksums": [{"algorithm": "SHA256", "checksumValue": it.sha256.hex()}],
            "primaryPackagePurpose": match it.kind {
                Kind::Base => "CONTAINER",
                Kind::Deb | Kind::Wheel => "LIBRARY",
                Kind::Interpreter => "ARCHIVE",
            },
            "comment": match (it.kind, it.layers.as_slice()) {
                (Kind::Base, _) => format!("base image manifest {}", it.sha256),
                (_, [l, ..]) => format!("in {} of the image (blob {})", l.label(), l.digest),
                (_, []) => "in no layer of the image".to_string(),
            },
        });
        if let Some(v) = &it.version {
            p["versionInfo"] = json!(v);
        }
        if let Some(purl) = &it.purl {
            p["externalRefs"] = purl_ref(purl);
        }
        match (&it.url, &it.built_from) {
            (Some(u), Some(b)) if b.step.starts_with("project:") => {
                p["sourceInfo"] = json!(format!(
                    "built by ocibuild's step {} from the project directory {u} (its files' \
                     digest sha256 {})",
                    b.step,
                    b.sha256.hex()
                ))
            }
            (Some(u), Some(b)) => {
                p["sourceInfo"] = json!(format!(
                    "built by ocibuild's step {} from the sdist {u} (sha256 {})",
                    b.step,
                    b.sha256.hex()
                ))
            }
            (Some(u), None) => p["sourceInfo"] = json!(format!("downloaded from {u}")),
            _ => {}
        }
        packages.push(p);
        if it.kind == Kind::Base {
            rels.push(("SPDXRef-Image".into(), "DESCENDANT_OF", it.spdx_id.clone()));
        }
        for l in &it.layers {
            match it.kind {
                Kind::Base => rels.push((it.spdx_id.clone(), "CONTAINS", l.spdx_id())),
                _ => rels.push((l.spdx_id(), "CONTAINS", it.spdx_id.clone())),
            }
        }
    }
    for h in host_provided(inputs) {
        // Not in the image: no checksum, no file, no download; a runtime dependency of the
        // image (and of each package whose dependency it answers), never CONTAINS.
        packages.push(json!({
            "SPDXID": h.spdx_id,
            "name": h.name,
            "downloadLocation": "NOASSERTION",
            "supplier": "NOASSERTION",
            "filesAnalyzed": false,
            "licenseConcluded": "NOASSERTION",
            "licenseDeclared": "NOASSERTION",
            "copyrightText": "NOASSERTION",
            "primaryPackagePurpose": "LIBRARY",
            "comment": h.comment,
        }));
        rels.push((
            h.spdx_id.clone(),
            "RUNTIME_DEPENDENCY_OF",
            "SPDXRef-Image".into(),
        ));
        for d in &h.dependents {
            if let Some(it) = items.iter().find(|i| i.kind == Kind::Deb && i.name == *d) {
                rels.push((
                    h.spdx_id.clone(),
                    "RUNTIME_DEPENDENCY_OF",
                    it.spdx_id.clone(),
                ));
            }
        }
    }
    packages.sort_by(|a, b| a["SPDXID"].as_str().cmp(&b["SPDXID"].as_str()));
    rels.sort();
    rels.dedup();
    let relationships: Vec<Value> = rels
        .into_iter()
        .map(
            |(a, t, b)| json!({"spdxElementId": a, "relationshipType": t, "relatedSpdxElement": b}),
        )
        .collect();
    let mut doc = json!({
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": format!("{}:{}", subject.name, subject.tag),
        "documentNamespace": format!(
            "https://ocibuild.dev/spdx/{}/{}",
            id_safe(&subject.name),
            digest.to_string().replace(':', "-")
        ),
        "creationInfo": {
            "created": subject.created(),
            "creators": [format!("Tool: {}", tool())],
            "comment": creation_comment(inputs),
        },
        "documentDescribes": ["SPDXRef-Image"],
        "packages": packages,
        "relationships": relationships,
    });
    if let Some(infos) = license::spdx_extracted_infos(
        items.iter().filter_map(|i| i.license.as_deref()),
        &inputs.licenses.names,
    ) {
        doc["hasExtractedLicensingInfos"] = infos;
    }
    Ok(cjson::to_canonical_vec("SPDX document", &doc)?)
}

/// CycloneDX 1.6 JSON.
pub fn cyclonedx(subject: &Subject, inputs: &Inputs<'_>) -> Result<Vec<u8>, AttestError> {
    let layers = layers_of(subject, inputs);
    let items = items(inputs, &layers);
    let digest = subject.digest();
    let image_ref = image_purl(subject);
    let hashes = |d: &Digest| json!([{"alg": "SHA-256", "content": d.hex()}]);
    let layer_props = |ls: &[Layer]| -> Vec<Value> {
        let mut v = Vec::new();
        for l in ls {
            v.push(json!({"name": "ocibuild:layer", "value": l.digest.to_string()}));
            v.push(json!({"name": "ocibuild:layer-position", "value": l.position.to_string()}));
            if let Some(n) = &l.name {
                v.push(json!({"name": "ocibuild:layer-name", "value": n}));
            }
        }
        v
    };
    let mut components = Vec::new();
    for it in &items {
        let bom_ref = match (&it.purl, it.kind) {
            (Some(p), _) => p.clone(),
            (None, _) => format!("ocibuild:python-archive:{}", it.sha256),
        };
        let mut c = json!({
            "bom-ref": bom_ref,
            "type": match it.kind {
                Kind::Base => "container",
                Kind::Deb | Kind::Wheel => "library",
                Kind::Interpreter => "application",
            },
            "name": it.name,
            "hashes": hashes(&it.sha256),
        });
        if let Some(v) = &it.version {
            c["version"] = json!(v);
        }
        if let Some(p) = &it.purl {
            c["purl"] = json!(p);
        }
        match (&it.url, &it.built_from) {
            // The project's own package: built from the recipe's files, no download.
            (Some(_), Some(b)) if b.step.starts_with("project:") => {}
            // The sdist it was built from: CycloneDX's `source-distribution` reference.
            (Some(u), Some(b)) => {
                c["externalReferences"] = json!([{
                    "type": "source-distribution", "url": u,
                    "hashes": hashes(&b.sha256),
                    "comment": format!("built by ocibuild's step {}", b.step),
                }])
            }
            (Some(u), None) => {
                c["externalReferences"] = json!([{"type": "distribution", "url": u}])
            }
            _ => {}
        }
        if let Some(l) = &it.license {
            c["licenses"] = license::cyclonedx(l);
        }
        if let Some(name) = it.supplier.as_deref().and_then(cyclonedx_supplier) {
            c["supplier"] = json!({"name": name});
        }
        let mut props = layer_props(&it.layers);
        if let Some(b) = it
            .built_from
            .as_ref()
            .filter(|b| b.step.starts_with("project:"))
        {
            props.push(json!({
                "name": "ocibuild:built-from",
                "value": format!("step {}, the project's files sha256 {}", b.step, b.sha256.hex()),
            }));
        }
        props.push(json!({"name": "ocibuild:input", "value": match it.kind {
            Kind::Base => "base", Kind::Deb => "deb", Kind::Interpreter => "python-archive", Kind::Wheel => "wheel",
        }}));
        c["properties"] = json!(props);
        components.push(c);
    }
    for h in host_provided(inputs) {
        // Not in the image: no hashes; required at run time, supplied by the host.
        components.push(json!({
            "bom-ref": format!("ocibuild:host-provides:{}", h.name),
            "type": "library",
            "name": h.name,
            "scope": "required",
            "description": h.comment,
            "properties": [
                {"name": "ocibuild:input", "value": "host-provides"},
                {"name": "ocibuild:provided-by", "value": "host"},
            ],
        }));
    }
    components.sort_by(|a, b| a["bom-ref"].as_str().cmp(&b["bom-ref"].as_str()));
    let mut depends: Vec<&str> = components
        .iter()
        .filter_map(|c| c["bom-ref"].as_str())
        .collect();
    depends.sort();
    let mut image_props = vec![
        json!({"name": "ocibuild:tag", "value": subject.tag}),
        json!({"name": "ocibuild:recipe", "value": inputs.recipe_file}),
        json!({"name": "ocibuild:recipe-digest", "value": inputs.recipe_identity.to_string()}),
    ];
    if let (Some(_), Some(d)) = (inputs.lock, inputs.lock_digest) {
        image_props.push(json!({"name": "ocibuild:lock-digest", "value": d.to_string()}));
        if let Some(p) = &inputs.lock_platform {
            image_props.push(json!({"name": "ocibuild:lock-platform", "value": p}));
        }
    }
    image_props.extend(layer_props(&layers));
    let doc = json!({
        "$schema": "http://cyclonedx.org/schema/bom-1.6.schema.json",
        "bomFormat": "CycloneDX",
        "specVersion": "1.6",
        "serialNumber": format!("urn:uuid:{}", uuid_from(&format!("ocibuild cyclonedx {digest}"))),
        "version": 1,
        "metadata": {
            "timestamp": subject.created(),
            "tools": {"components": [{"type": "application", "name": "ocibuild", "version": TOOL_VERSION}]},
            "component": {
                "bom-ref": image_ref,
                "type": "container",
                "name": subject.name,
                "version": subject.tag,
                "purl": image_ref,
                "hashes": hashes(&digest),
                "properties": image_props,
            },
        },
        "components": components,
        "dependencies": [{"ref": image_ref, "dependsOn": depends}],
    });
    Ok(cjson::to_canonical_vec("CycloneDX document", &doc)?)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::image::{Descriptor, Manifest, MEDIA_TYPE_CONFIG, MEDIA_TYPE_MANIFEST};
    use crate::lock::{Lock, LockedApt, LockedBase, LockedDeb, LockedPython, LockedWheel};

    pub(crate) fn sample() -> (Subject, Lock) {
        let layer = |n: &str, name: Option<&str>| {
            let mut d = Descriptor::new(
                "application/vnd.oci.image.layer.v1.tar+gzip",
                Digest::of(n.as_bytes()),
                10,
            );
            if let Some(name) = name {
                d.annotations
                    .insert(annotations::LAYER_NAME.into(), name.into());
            }
            d
        };
        let m = Manifest {
            schema_version: 2,
            media_type: MEDIA_TYPE_MANIFEST.into(),
            artifact_type: None,
            config: Descriptor::new(MEDIA_TYPE_CONFIG, Digest::of(b"c"), 1),
            layers: vec![
                layer("b0", None),
                layer("apt", Some("apt")),
                layer("py", Some("python")),
                layer("app", Some("app")),
            ],
            subject: None,
            annotations: [(
                annotations::CREATED.to_string(),
                "2023-11-14T22:13:20Z".to_string(),
            )]
            .into(),
        };
        let bytes = cjson::to_canonical_vec("m", &m).unwrap();
        let subject = Subject::new("example.com/app", "1.0", &bytes).unwrap();
        let mut lock = Lock::new();
        lock.base = Some(LockedBase {
            reference: "docker.io/library/debian:bookworm".into(),
            platform: "linux/amd64".into(),
            index_digest: None,
            manifest_digest: Digest::of(b"base"),
        });
        lock.apt = Some(LockedApt {
            architecture: "amd64".into(),
            requests: vec!["libstdc++6".into()],
            sources: vec![],
            base_installed: None,
            host_provides: Vec::new(),
            essential: false,
            packages: vec![LockedDeb {
                name: "libstdc++6".into(),
                version: "12.2.0-14+deb12u1".into(),
                architecture: "amd64".into(),
                filename: "pool/main/g/gcc-12/libstdc++6_12.2.0-14+deb12u1_amd64.deb".into(),
                size: 5,
                sha256: Digest::of(b"deb"),
                source_url: "https://deb.debian.org/debian/".into(),
            }],
        });
        lock.python = Some(LockedPython {
            url: "https://example.com/cpython-3.12.tar.gz".into(),
            sha256: Digest::of(b"py"),
        });
        lock.wheels = vec![LockedWheel {
            name: "numpy".into(),
            version: "2.0.0".into(),
            filename: "numpy-2.0.0-cp312-cp312-manylinux_2_17_x86_64.whl".into(),
            url: "https://files.example/numpy.whl".into(),
            size: 3,
            sha256: Digest::of(b"whl"),
            built_from: None,
        }];
        (subject, lock)
    }

    pub(crate) fn inputs(lock: &Lock) -> Inputs<'_> {
        Inputs {
            recipe_file: "app.toml".into(),
            recipe_digest: Digest::of(b"recipe"),
            recipe_identity: Digest::of(b"identity"),
            recipe_layers: 1,
            lock: Some(lock),
            lock_file: "app.lock".into(),
            lock_digest: Some(Digest::of(b"lock")),
            lock_platform: None,
            licenses: Default::default(),
        }
    }

    #[test]
    fn sbom_spdx_lists_every_locked_input_with_its_layer() {
        let (s, lock) = sample();
        let doc: Value = serde_json::from_slice(&spdx(&s, &inputs(&lock)).unwrap()).unwrap();
        let pkgs = doc["packages"].as_array().unwrap();
        let deb = pkgs.iter().find(|p| p["name"] == "libstdc++6").unwrap();
        assert_eq!(
            deb["externalRefs"][0]["referenceLocator"],
            "pkg:deb/debian/libstdc%2B%2B6@12.2.0-14%2Bdeb12u1?arch=amd64"
        );
        assert_eq!(
            deb["downloadLocation"],
            "https://deb.debian.org/debian/pool/main/g/gcc-12/libstdc++6_12.2.0-14+deb12u1_amd64.deb"
        );
        assert_eq!(
            deb["checksums"][0]["checksumValue"],
            Digest::of(b"deb").hex()
        );
        let rels = doc["relationships"].as_array().unwrap();
        assert!(rels.contains(&json!({"spdxElementId": "SPDXRef-Layer-2", "relationshipType": "CONTAINS", "relatedSpdxElement": deb["SPDXID"]})));
        assert!(rels.contains(&json!({"spdxElementId": "SPDXRef-Base", "relationshipType": "CONTAINS", "relatedSpdxElement": "SPDXRef-Layer-1"})));
        for name in [
            "numpy",
            "cpython-3.12.tar.gz",
            "docker.io/library/debian:bookworm",
        ] {
            assert!(pkgs.iter().any(|p| p["name"] == name), "{name}");
        }
        assert_eq!(doc["creationInfo"]["created"], "2023-11-14T22:13:20Z");
        assert_eq!(
            spdx(&s, &inputs(&lock)).unwrap(),
            spdx(&s, &inputs(&lock)).unwrap()
        );
    }

    #[test]
    fn sbom_declared_licences_in_both_formats() {
        let (s, lock) = sample();
        let mut inp = inputs(&lock);
        inp.licenses.declared.insert(
            Digest::of(b"deb"),
            "GPL-3.0-or-later AND LicenseRef-GCC-exception".into(),
        );
        inp.licenses
            .declared
            .insert(Digest::of(b"whl"), "BSD-3-Clause".into());
        let doc: Value = serde_json::from_slice(&spdx(&s, &inp).unwrap()).unwrap();
        let pkgs = doc["packages"].as_array().unwrap();
        let pkg = |n: &str| pkgs.iter().find(|p| p["name"] == n).unwrap();
        assert_eq!(
            pkg("libstdc++6")["licenseDeclared"],
            "GPL-3.0-or-later AND LicenseRef-GCC-exception"
        );
        assert_eq!(pkg("libstdc++6")["licenseConcluded"], "NOASSERTION");
        assert_eq!(pkg("numpy")["licenseDeclared"], "BSD-3-Clause");
        assert_eq!(pkg("cpython-3.12.tar.gz")["licenseDeclared"], "NOASSERTION");
        let ex = doc["hasExtractedLicensingInfos"].as_array().unwrap();
        assert_eq!(ex.len(), 1);
        assert_eq!(ex[0]["licenseId"], "LicenseRef-GCC-exception");
        let cdx: Value = serde_json::from_slice(&cyclonedx(&s, &inp).unwrap()).unwrap();
        let comps = cdx["components"].as_array().unwrap();
        let comp = |n: &str| comps.iter().find(|c| c["name"] == n).unwrap();
        assert_eq!(
            comp("libstdc++6")["licenses"],
            json!([{"expression": "GPL-3.0-or-later AND LicenseRef-GCC-exception"}])
        );
        assert_eq!(
            comp("numpy")["licenses"],
            json!([{"license": {"id": "BSD-3-Clause"}}])
        );
        // Nothing declared: no hasExtractedLicensingInfos, no licenses.
        let plain: Value = serde_json::from_slice(&spdx(&s, &inputs(&lock)).unwrap()).unwrap();
        assert!(plain.get("hasExtractedLicensingInfos").is_none());
    }

    #[test]
    fn sbom_spdx_download_locations() {
        for ok in [
            "https://deb.debian.org/debian/pool/x.deb",
            "http://snapshot.debian.org:80/a",
        ] {
            assert_eq!(spdx_download_location(ok), ok);
        }
        for bad in [
            "http://127.0.0.1:8080/x.deb",
            "python.tar.gz",
            "https://files.example/x",
            "https://localhost/x",
        ] {
            assert_eq!(spdx_download_location(bad), "NOASSERTION", "{bad}");
        }
    }

    #[test]
    fn sbom_cyclonedx_layers_as_properties() {
        let (s, lock) = sample();
        let doc: Value = serde_json::from_slice(&cyclonedx(&s, &inputs(&lock)).unwrap()).unwrap();
        let comps = doc["components"].as_array().unwrap();
        assert_eq!(comps.len(), 4);
        let py = comps.iter().find(|c| c["type"] == "application").unwrap();
        assert!(py["properties"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "ocibuild:layer", "value": Digest::of(b"py").to_string()})));
        let whl = comps.iter().find(|c| c["name"] == "numpy").unwrap();
        assert_eq!(whl["purl"], "pkg:pypi/numpy@2.0.0");
        let serial = doc["serialNumber"].as_str().unwrap();
        assert!(serial.starts_with("urn:uuid:"), "{serial}");
        assert_eq!(doc["metadata"]["timestamp"], "2023-11-14T22:13:20Z");
    }
}
