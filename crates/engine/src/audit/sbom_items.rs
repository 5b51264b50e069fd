//! What the SBOMs list, read from the lock and the image: the image's layers, each locked
//! input (base, .deb, interpreter, wheel) with the layers that hold it, and what the host
//! provides; the image's purl and supplier.

use super::attest_types::{
    id_safe, oci_purl, purl_encode, Inputs, Subject, APT_LAYER, PYTHON_LAYER,
};
use crate::digest::Digest;
use crate::image::annotations;
use crate::python::plan::{group_name, is_wheel_layer, plan_layers, LayerLimits};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Base,
    Deb,
    Interpreter,
    Wheel,
}

/// A layer of the image: 1-based position, digest, name (`dev.ocibuild.layer`), base or ours.
#[derive(Clone, Debug)]
pub(super) struct Layer {
    pub(super) position: usize,
    pub(super) digest: Digest,
    pub(super) name: Option<String>,
    pub(super) base: bool,
}

impl Layer {
    pub(super) fn spdx_id(&self) -> String {
        format!("SPDXRef-Layer-{}", self.position)
    }
    pub(super) fn label(&self) -> String {
        match (&self.name, self.base) {
            (_, true) => format!("layer {} (base)", self.position),
            (Some(n), false) => format!("layer {} ({n})", self.position),
            (None, false) => format!("layer {}", self.position),
        }
    }
}

/// One locked input.
#[derive(Clone, Debug)]
pub(super) struct Item {
    pub(super) kind: Kind,
    pub(super) spdx_id: String,
    pub(super) name: String,
    pub(super) version: Option<String>,
    pub(super) purl: Option<String>,
    pub(super) url: Option<String>,
    pub(super) sha256: Digest,
    /// The layers that hold it (the base: all of its layers).
    pub(super) layers: Vec<Layer>,
    /// Its declared licence (an SPDX expression), if its files say one.
    pub(super) license: Option<String>,
    /// Its supplier (SPDX form: `Person: …` / `Organization: …`), if its files name one.
    pub(super) supplier: Option<String>,
    /// A wheel built from an sdist: the sdist's sha256 and the step (`url` is the sdist's).
    pub(super) built_from: Option<crate::lock::BuiltFrom>,
}

pub(super) fn layers_of(subject: &Subject, inputs: &Inputs<'_>) -> Vec<Layer> {
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

pub(super) fn items(inputs: &Inputs<'_>, layers: &[Layer]) -> Vec<Item> {
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
pub(super) struct HostProvided {
    pub(super) spdx_id: String,
    pub(super) name: String,
    /// The packages whose dependency it answers.
    pub(super) dependents: Vec<String>,
    pub(super) comment: String,
}

pub(super) fn host_provided(inputs: &Inputs<'_>) -> Vec<HostProvided> {
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

pub(super) fn image_purl(subject: &Subject) -> String {
    oci_purl(
        &format!("{}:{}", subject.name, subject.tag),
        &subject.digest(),
    )
}

/// The image's supplier: its `org.opencontainers.image.vendor` annotation ("the distributing
/// entity", set with `[config] annotations`), as an SPDX organization; None without one.
pub(super) fn image_supplier(subject: &Subject) -> Option<String> {
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
