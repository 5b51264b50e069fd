//! Comparing two images: manifest, config, and layer by layer down to files.
//!
//! A layer whose blob digest is the same on both sides is identical; one with the same diff_id
//! has the same content in another compression. Any other pair is read (both tars at once, on
//! two threads) into per-file metadata and compared path by path.
//!
//! With `semantic`, timestamps (file mtimes and PAX atime/ctime, the config's `created`, the
//! history's `created`, the `org.opencontainers.image.created` annotation), tar header encoding
//! and entry order are ignored, and so are the digests that merely follow from them.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

pub use super::change::Change;
use super::source::{layer_error, Image};
use super::tarmeta::{self, AttrDiff, FileMeta, LayerIndex};
use super::AuditError;
use crate::digest::Digest;
use crate::image::annotations;

/// Version of the JSON report's schema (docs/commands.md § diff and verify documents it).
pub const SCHEMA: &str = "ocibuild-diff/2";

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiffOptions {
    /// Ignore timestamps, header encoding and entry order.
    pub semantic: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Same manifest digest (or, without manifests, the same config and layers).
    Identical,
    /// Only what a semantic comparison ignores differs.
    Equivalent,
    Different,
}

/// One side of the comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    pub image: String,
    /// `None` for a docker-archive (it holds no manifest).
    pub manifest: Option<Digest>,
    pub config: Digest,
    pub layers: usize,
}

/// A field that differs; `null` stands for absent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FieldDiff {
    pub field: String,
    pub a: Value,
    pub b: Value,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LayerStatus {
    /// Same blob digest.
    Identical,
    /// Same diff_id (uncompressed content), another blob: compression differs.
    SameContent,
    /// Files equal once timestamps, header encoding and order are ignored (semantic only).
    Equivalent,
    Different,
    OnlyInA,
    OnlyInB,
}

/// A layer's identity on one side.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LayerSide {
    pub digest: Option<Digest>,
    pub media_type: String,
    pub diff_id: Option<Digest>,
}

/// A path that differs within a layer.
#[derive(Clone, Debug, Serialize)]
pub struct FileDiff {
    pub path: String,
    pub change: Change,
    /// The entry in `a` (removed paths) or `b` (added paths); absent for changed paths.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<FileMeta>,
    /// For changed paths: what differs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<AttrDiff>,
    /// For a changed small text file (both sides UTF-8, no NUL, at most [`TEXT_DIFF_MAX`]
    /// bytes): its contents as a unified diff (3 lines of context).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The largest file (either side) whose change is shown as a unified diff.
pub const TEXT_DIFF_MAX: u64 = 64 * 1024;

/// The comparison of the layers at one position.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LayerDiff {
    /// Position, from 1 (the lowest layer).
    pub index: usize,
    pub name: Option<String>,
    pub status: LayerStatus,
    pub a: Option<LayerSide>,
    pub b: Option<LayerSide>,
    /// Blob-level differences: mediaType, digest, diffId, name.
    pub fields: Vec<FieldDiff>,
    /// When entries are in another order: the first path out of order.
    pub order: Option<String>,
    pub files: Vec<FileDiff>,
}

#[derive(Clone, Debug, Serialize)]
pub struct DiffReport {
    pub schema: &'static str,
    pub semantic: bool,
    pub result: Outcome,
    pub a: Side,
    pub b: Side,
    /// Packages added, removed and changed (dpkg status, wheels' METADATA), filled by the
    /// caller that reads them ([`crate::report::against::package_diff`]); empty when not
    /// read or none changed.
    pub packages: Vec<super::packages::PackageChange>,
    pub manifest: Vec<FieldDiff>,
    pub config: Vec<FieldDiff>,
    pub layers: Vec<LayerDiff>,
    /// Remarks that are not differences (what could not be compared, and why).
    pub notes: Vec<String>,
}

fn side(img: &Image<'_>) -> Side {
    Side {
        image: img.name().to_string(),
        manifest: img.manifest().map(|m| m.digest),
        config: img.config().digest,
        layers: img.layers().len(),
    }
}

fn layer_side(img: &Image<'_>, i: usize) -> LayerSide {
    let l = &img.layers()[i];
    LayerSide {
        digest: l.digest,
        media_type: l.media_type.clone(),
        diff_id: l.diff_id,
    }
}

fn opt_json<T: Serialize>(v: Option<T>) -> Value {
    v.map(|x| serde_json::to_value(x).unwrap_or(Value::Null))
        .unwrap_or(Value::Null)
}

fn push_field(out: &mut Vec<FieldDiff>, field: impl Into<String>, a: Value, b: Value) {
    if a != b {
        out.push(FieldDiff {
            field: field.into(),
            a,
            b,
        });
    }
}

/// Compare two images.
pub fn diff(a: &Image<'_>, b: &Image<'_>, opts: DiffOptions) -> Result<DiffReport, AuditError> {
    let semantic = opts.semantic;
    let mut report = DiffReport {
        schema: SCHEMA,
        semantic,
        result: Outcome::Identical,
        a: side(a),
        b: side(b),
        packages: Vec::new(),
        manifest: Vec::new(),
        config: Vec::new(),
        layers: Vec::new(),
        notes: Vec::new(),
    };
    let same_manifest = match (a.manifest(), b.manifest()) {
        (Some(x), Some(y)) => x.digest == y.digest,
        _ => false,
    };
    if same_manifest {
        // Content addressing: the same manifest names the same config and layers.
        return Ok(report);
    }
    match (a.manifest(), b.manifest()) {
        (Some(x), Some(y)) => {
            if !semantic {
                push_field(
                    &mut report.manifest,
                    "digest",
                    x.digest.to_string().into(),
                    y.digest.to_string().into(),
                );
            }
            push_field(
                &mut report.manifest,
                "mediaType",
                opt_json(x.media_type.as_ref()),
                opt_json(y.media_type.as_ref()),
            );
            let keys: BTreeSet<&String> =
                x.annotations.keys().chain(y.annotations.keys()).collect();
            for k in keys {
                if semantic && k == annotations::CREATED {
                    continue;
                }
                push_field(
                    &mut report.manifest,
                    format!("annotations[{k}]"),
                    opt_json(x.annotations.get(k)),
                    opt_json(y.annotations.get(k)),
                );
            }
        }
        _ => report.notes.push(
            "a docker-archive holds no manifest: only the config and the layers are compared"
                .into(),
        ),
    }
    if a.config().digest != b.config().digest {
        if !semantic {
            push_field(
                &mut report.config,
                "digest",
                a.config().digest.to_string().into(),
                b.config().digest.to_string().into(),
            );
        }
        report
            .config
            .extend(config_diff(&a.config().json, &b.config().json, semantic));
    }
    let n = a.layers().len().max(b.layers().len());
    for i in 0..n {
        report.layers.push(layer_diff(a, b, i, semantic)?);
    }
    for l in &report.layers {
        if l.status == LayerStatus::Different
            && l.files.is_empty()
            && l.order.is_none()
            && l.fields
                .iter()
                .all(|f| f.field == "digest" || f.field == "diffId")
        {
            report.notes.push(format!(
                "layer {}: the tar streams differ, but no entry does (padding or end-of-archive blocks)",
                l.index
            ));
        }
    }
    let counted = !report.manifest.is_empty()
        || !report.config.is_empty()
        || report
            .layers
            .iter()
            .any(|l| !matches!(l.status, LayerStatus::Identical | LayerStatus::Equivalent));
    let ignored = a.config().digest != b.config().digest
        || (a.manifest().is_some() && b.manifest().is_some())
        || report
            .layers
            .iter()
            .any(|l| l.status == LayerStatus::Equivalent);
    report.result = if counted {
        Outcome::Different
    } else if ignored {
        Outcome::Equivalent
    } else {
        Outcome::Identical
    };
    Ok(report)
}

/// `KEY=VALUE` strings as a map (a later KEY wins, as in a shell).
fn env_map(v: Option<&Value>) -> BTreeMap<String, Value> {
    let mut m = BTreeMap::new();
    for s in v.and_then(Value::as_array).into_iter().flatten() {
        if let Some(s) = s.as_str() {
            let (k, val) = s.split_once('=').unwrap_or((s, ""));
            m.insert(k.to_string(), Value::String(val.to_string()));
        }
    }
    m
}

fn object_map(v: Option<&Value>) -> BTreeMap<String, Value> {
    v.and_then(Value::as_object)
        .map(|o| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn keyed(
    out: &mut Vec<FieldDiff>,
    field: &str,
    a: BTreeMap<String, Value>,
    b: BTreeMap<String, Value>,
) {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for k in keys {
        push_field(
            out,
            format!("{field}[{k}]"),
            a.get(k).cloned().unwrap_or(Value::Null),
            b.get(k).cloned().unwrap_or(Value::Null),
        );
    }
}

/// The config fields that differ: top-level fields by name (`architecture`, `created`, …), the
/// runtime config's (`Env[NAME]`, `Labels[KEY]`, `Entrypoint`, `Cmd`, `WorkingDir`, `User`,
/// `ExposedPorts`, …), `rootfs.diff_ids[N]` and `history[N]`.
pub fn config_diff(a: &Value, b: &Value, semantic: bool) -> Vec<FieldDiff> {
    let mut out = Vec::new();
    let top = |v: &Value| object_map(Some(v));
    let (ta, tb) = (top(a), top(b));
    let keys: BTreeSet<&String> = ta.keys().chain(tb.keys()).collect();
    for k in keys {
        match k.as_str() {
            "config" | "rootfs" | "history" => continue,
            "created" if semantic => continue,
            _ => {}
        }
        push_field(
            &mut out,
            k.clone(),
            ta.get(k).cloned().unwrap_or(Value::Null),
            tb.get(k).cloned().unwrap_or(Value::Null),
        );
    }
    let (ca, cb) = (object_map(a.get("config")), object_map(b.get("config")));
    let keys: BTreeSet<&String> = ca.keys().chain(cb.keys()).collect();
    for k in keys {
        match k.as_str() {
            "Env" => keyed(&mut out, "Env", env_map(ca.get(k)), env_map(cb.get(k))),
            "Labels" => keyed(
                &mut out,
                "Labels",
                object_map(ca.get(k)),
                object_map(cb.get(k)),
            ),
            _ => push_field(
                &mut out,
                k.clone(),
                ca.get(k).cloned().unwrap_or(Value::Null),
                cb.get(k).cloned().unwrap_or(Value::Null),
            ),
        }
    }
    if !semantic {
        // Index by index: a new top layer is one line, not two whole arrays.
        let ids = |v: &Value| -> Vec<Value> {
            v.pointer("/rootfs/diff_ids")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let (ia, ib) = (ids(a), ids(b));
        for i in 0..ia.len().max(ib.len()) {
            push_field(
                &mut out,
                format!("rootfs.diff_ids[{i}]"),
                ia.get(i).cloned().unwrap_or(Value::Null),
                ib.get(i).cloned().unwrap_or(Value::Null),
            );
        }
    }
    let history = |v: &Value| -> Vec<Value> {
        let mut h: Vec<Value> = v
            .get("history")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if semantic {
            for e in &mut h {
                if let Some(o) = e.as_object_mut() {
                    o.remove("created");
                }
            }
        }
        h
    };
    let (ha, hb) = (history(a), history(b));
    for i in 0..ha.len().max(hb.len()) {
        push_field(
            &mut out,
            format!("history[{i}]"),
            ha.get(i).cloned().unwrap_or(Value::Null),
            hb.get(i).cloned().unwrap_or(Value::Null),
        );
    }
    out
}

fn layer_diff(
    a: &Image<'_>,
    b: &Image<'_>,
    i: usize,
    semantic: bool,
) -> Result<LayerDiff, AuditError> {
    let (la, lb) = (a.layers().get(i), b.layers().get(i));
    let name = la
        .and_then(|l| l.name.clone())
        .or_else(|| lb.and_then(|l| l.name.clone()));
    let mut d = LayerDiff {
        index: i + 1,
        name,
        status: LayerStatus::Identical,
        a: la.map(|_| layer_side(a, i)),
        b: lb.map(|_| layer_side(b, i)),
        fields: Vec::new(),
        order: None,
        files: Vec::new(),
    };
    let (la, lb) = match (la, lb) {
        (Some(x), Some(y)) => (x, y),
        (Some(_), None) => {
            d.status = LayerStatus::OnlyInA;
            return Ok(d);
        }
        _ => {
            d.status = LayerStatus::OnlyInB;
            return Ok(d);
        }
    };
    if let (Some(x), Some(y)) = (&la.name, &lb.name) {
        push_field(&mut d.fields, "name", x.as_str().into(), y.as_str().into());
    }
    let names_differ = !d.fields.is_empty();
    let same_blob = matches!((la.digest, lb.digest), (Some(x), Some(y)) if x == y);
    let same_content = matches!((la.diff_id, lb.diff_id), (Some(x), Some(y)) if x == y);
    if same_blob || (same_content && (la.digest.is_none() || lb.digest.is_none())) {
        d.status = if names_differ {
            LayerStatus::Different
        } else {
            LayerStatus::Identical
        };
        return Ok(d);
    }
    push_field(
        &mut d.fields,
        "mediaType",
        la.media_type.as_str().into(),
        lb.media_type.as_str().into(),
    );
    if !semantic || same_content {
        push_field(
            &mut d.fields,
            "digest",
            opt_json(la.digest.map(|x| x.to_string())),
            opt_json(lb.digest.map(|x| x.to_string())),
        );
    }
    if same_content {
        d.status = LayerStatus::SameContent;
        return Ok(d);
    }
    if !semantic {
        push_field(
            &mut d.fields,
            "diffId",
            opt_json(la.diff_id.map(|x| x.to_string())),
            opt_json(lb.diff_id.map(|x| x.to_string())),
        );
    }
    let (ia, ib) = read_pair(a, b, i)?;
    if !semantic {
        d.order = tarmeta::first_out_of_order(&ia, &ib);
    }
    d.files = file_diffs(&ia, &ib, semantic);
    text_diffs(a, b, i, &ia, &ib, &mut d.files)?;
    let counted = !d.files.is_empty()
        || d.order.is_some()
        || d.fields
            .iter()
            .any(|f| f.field == "mediaType" || f.field == "name");
    d.status = if counted || !semantic {
        LayerStatus::Different
    } else {
        LayerStatus::Equivalent
    };
    Ok(d)
}

/// Index layer `i` of both images, each on its own thread.
fn read_pair(
    a: &Image<'_>,
    b: &Image<'_>,
    i: usize,
) -> Result<(LayerIndex, LayerIndex), AuditError> {
    let read = |img: &Image<'_>| -> Result<LayerIndex, AuditError> {
        let r = img.open_layer(i)?;
        tarmeta::index_layer(r).map_err(|e| layer_error(img.as_ref(), i, e))
    };
    std::thread::scope(|s| {
        let hb = s.spawn(|| read(b));
        let ia = read(a);
        let ib = hb.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        Ok((ia?, ib?))
    })
}

/// The changed small regular files of layer `i` (both sides at most [`TEXT_DIFF_MAX`]
/// bytes, other contents): their contents read from both layers (a second read, only when
/// there are some) and, where both are text, a unified diff in `files`.
fn text_diffs(
    a: &Image<'_>,
    b: &Image<'_>,
    i: usize,
    ia: &LayerIndex,
    ib: &LayerIndex,
    files: &mut [FileDiff],
) -> Result<(), AuditError> {
    let small = |m: &FileMeta| m.kind == "file" && m.size <= TEXT_DIFF_MAX;
    let wanted: BTreeSet<String> = files
        .iter()
        .filter(|f| f.change == Change::Changed)
        .filter(|f| match (ia.files.get(&f.path), ib.files.get(&f.path)) {
            (Some(x), Some(y)) => small(x) && small(y) && x.content != y.content,
            _ => false,
        })
        .map(|f| f.path.clone())
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let read = |img: &Image<'_>| -> Result<BTreeMap<String, Vec<u8>>, AuditError> {
        let r = img.open_layer(i)?;
        tarmeta::read_contents(r, &wanted, TEXT_DIFF_MAX)
            .map_err(|e| layer_error(img.as_ref(), i, e))
    };
    let (ca, cb) = std::thread::scope(|s| {
        let hb = s.spawn(|| read(b));
        let ca = read(a);
        let cb = hb.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (ca, cb)
    });
    let (ca, cb) = (ca?, cb?);
    let text = |v: Option<&Vec<u8>>| -> Option<String> {
        let v = v?;
        (!v.contains(&0))
            .then(|| String::from_utf8(v.clone()).ok())
            .flatten()
    };
    for f in files.iter_mut().filter(|f| wanted.contains(&f.path)) {
        if let (Some(x), Some(y)) = (text(ca.get(&f.path)), text(cb.get(&f.path))) {
            let diff = similar::TextDiff::from_lines(&x, &y);
            let unified = diff
                .unified_diff()
                .context_radius(3)
                .header(&format!("a/{}", f.path), &format!("b/{}", f.path))
                .to_string();
            f.text = Some(unified);
        }
    }
    Ok(())
}

/// Added, removed and changed paths, in path order.
pub fn file_diffs(a: &LayerIndex, b: &LayerIndex, semantic: bool) -> Vec<FileDiff> {
    let paths: BTreeSet<&String> = a.files.keys().chain(b.files.keys()).collect();
    let mut out = Vec::new();
    for p in paths {
        match (a.files.get(p), b.files.get(p)) {
            (Some(x), Some(y)) => {
                let attributes = tarmeta::compare(x, y, semantic);
                if !attributes.is_empty() {
                    out.push(FileDiff {
                        path: p.clone(),
                        change: Change::Changed,
                        entry: None,
                        attributes,
                        text: None,
                    });
                }
            }
            (Some(x), None) => out.push(FileDiff {
                path: p.clone(),
                change: Change::Removed,
                entry: Some(x.clone()),
                attributes: Vec::new(),
                text: None,
            }),
            (None, Some(y)) => out.push(FileDiff {
                path: p.clone(),
                change: Change::Added,
                entry: Some(y.clone()),
                attributes: Vec::new(),
                text: None,
            }),
            (None, None) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn config_fields_env_by_name_and_semantic_history() {
        let a = json!({"architecture": "amd64", "created": "1970-01-01T00:00:00Z",
            "config": {"Env": ["A=1", "B=2"], "Cmd": ["x"]},
            "rootfs": {"type": "layers", "diff_ids": ["sha256:aa"]},
            "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "l"}]});
        let b = json!({"architecture": "amd64", "created": "1970-01-01T00:01:40Z",
            "config": {"Env": ["A=1", "C=3"], "Cmd": ["y"]},
            "rootfs": {"type": "layers", "diff_ids": ["sha256:bb"]},
            "history": [{"created": "1970-01-01T00:01:40Z", "created_by": "l"}]});
        let fields = |semantic| -> Vec<String> {
            config_diff(&a, &b, semantic)
                .into_iter()
                .map(|f| f.field)
                .collect()
        };
        assert_eq!(
            fields(false),
            [
                "created",
                "Cmd",
                "Env[B]",
                "Env[C]",
                "rootfs.diff_ids[0]",
                "history[0]"
            ]
        );
        // A layer added on top: one field, the new index, not two whole arrays.
        let mut c = a.clone();
        c["rootfs"]["diff_ids"] = json!(["sha256:aa", "sha256:cc"]);
        let ids: Vec<FieldDiff> = config_diff(&a, &c, false)
            .into_iter()
            .filter(|f| f.field.starts_with("rootfs"))
            .collect();
        assert_eq!(ids.len(), 1);
        assert_eq!(ids[0].field, "rootfs.diff_ids[1]");
        assert_eq!((&ids[0].a, &ids[0].b), (&Value::Null, &json!("sha256:cc")));
        assert_eq!(fields(true), ["Cmd", "Env[B]", "Env[C]"]);
        let env_b = &config_diff(&a, &b, true)[1];
        assert_eq!((&env_b.a, &env_b.b), (&json!("2"), &Value::Null));
    }
}
