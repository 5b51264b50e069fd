//! Text renderings of the reports: one line per difference, in a stable order (manifest, config,
//! then layers by position and paths in byte order). The caller prints them.

use std::fmt::Write as _;

use serde_json::Value;

use super::diff::{Change, DiffReport, FieldDiff, LayerDiff, LayerStatus, Outcome};
use super::tarmeta::{AttrDiff, FileMeta};
use super::verify::VerifyReport;

/// A value as text: strings bare (`""` when empty), `(absent)` for null, other JSON compact.
fn value(v: &Value) -> String {
    match v {
        Value::Null => "(absent)".into(),
        Value::String(s) if s.is_empty() => "\"\"".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn field(f: &FieldDiff) -> String {
    format!("{}: {} → {}", f.field, value(&f.a), value(&f.b))
}

/// `sha256:0123456789ab…` for file contents; anything else unchanged.
fn short_digest(s: &str) -> String {
    match s.strip_prefix("sha256:") {
        Some(h) if h.len() > 12 => format!("sha256:{}…", &h[..12]),
        _ => s.to_string(),
    }
}

fn attribute(a: &AttrDiff) -> String {
    if a.attribute == "content" {
        format!("content {} → {}", short_digest(&a.a), short_digest(&a.b))
    } else {
        format!("{} {} → {}", a.attribute, a.a, a.b)
    }
}

fn entry(m: &FileMeta) -> String {
    match (&m.link, m.kind.as_str()) {
        (Some(t), k) => format!("{k} → {t}"),
        (None, "file") => format!(
            "file, {}, mode {:04o}",
            crate::bounded::human_bytes(m.size),
            m.mode
        ),
        (None, k) => format!("{k}, mode {:04o}", m.mode),
    }
}

/// `line` with its control characters (a tab aside) as `\u{..}` escapes.
fn visible(line: &str) -> String {
    line.chars()
        .map(|c| {
            if c.is_control() && c != '\t' {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn layer_label(l: &LayerDiff) -> String {
    match &l.name {
        Some(n) => format!("layer {} ({n})", l.index),
        None => format!("layer {}", l.index),
    }
}

fn opt(d: &Option<crate::digest::Digest>) -> String {
    d.map(|d| d.to_string())
        .unwrap_or_else(|| "(unknown)".into())
}

fn layer(out: &mut String, l: &LayerDiff) {
    let label = layer_label(l);
    let fields = || {
        l.fields
            .iter()
            .map(|f| format!("{} {} → {}", f.field, value(&f.a), value(&f.b)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = match l.status {
        LayerStatus::Identical => writeln!(out, "{label}: identical"),
        LayerStatus::SameContent => writeln!(
            out,
            "{label}: same content (diff_id {}), another blob: {}",
            opt(&l.a.as_ref().and_then(|s| s.diff_id)),
            fields()
        ),
        LayerStatus::Equivalent => writeln!(
            out,
            "{label}: equivalent (only timestamps, header encoding or entry order differ)"
        ),
        LayerStatus::OnlyInA | LayerStatus::OnlyInB => {
            let (which, s) = if l.status == LayerStatus::OnlyInA {
                ("a", &l.a)
            } else {
                ("b", &l.b)
            };
            let (digest, diff_id) = s
                .as_ref()
                .map(|s| (opt(&s.digest), opt(&s.diff_id)))
                .unwrap_or_default();
            writeln!(
                out,
                "{label}: only in {which}: digest {digest}, diff_id {diff_id}"
            )
        }
        LayerStatus::Different => {
            if l.fields.is_empty() {
                writeln!(out, "{label}: differs")
            } else {
                writeln!(out, "{label}: differs: {}", fields())
            }
        }
    };
    if let Some(p) = &l.order {
        let _ = writeln!(out, "{label}: entry order differs, first at {p}");
    }
    for f in &l.files {
        let _ = match (f.change, &f.entry) {
            (Change::Added, Some(m)) => writeln!(out, "{label}: + {} ({})", f.path, entry(m)),
            (Change::Removed, Some(m)) => writeln!(out, "{label}: - {} ({})", f.path, entry(m)),
            _ => writeln!(
                out,
                "{label}: ~ {}: {}",
                f.path,
                f.attributes
                    .iter()
                    .map(attribute)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        // A small text file's change, as a unified diff, indented under its line.
        // Control characters shown escaped: an image's file cannot drive the terminal.
        for line in f.text.iter().flat_map(|t| t.lines()) {
            let _ = writeln!(out, "    {}", visible(line));
        }
    }
}

/// The differences of a report, one per line, without the header or the result line.
pub fn diff_body(r: &DiffReport) -> String {
    let mut out = String::new();
    // Packages first: what a reviewer reads before any file.
    for p in &r.packages {
        let v = |x: &Option<String>| visible(x.as_deref().unwrap_or_default());
        let name = visible(&p.name);
        let _ = match p.change {
            Change::Added => writeln!(out, "package {} {name}: added {}", p.kind, v(&p.new)),
            Change::Removed => writeln!(out, "package {} {name}: removed {}", p.kind, v(&p.old)),
            Change::Changed => writeln!(
                out,
                "package {} {name}: {} → {}",
                p.kind,
                v(&p.old),
                v(&p.new)
            ),
        };
    }
    for f in &r.manifest {
        let _ = writeln!(out, "manifest {}", field(f));
    }
    for f in &r.config {
        let _ = writeln!(out, "config {}", field(f));
    }
    for l in &r.layers {
        layer(&mut out, l);
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

fn side_line(which: &str, s: &super::diff::Side) -> String {
    format!(
        "{which}: {} (manifest {}, config {}, {} layers)",
        s.image,
        s.manifest
            .map(|d| d.to_string())
            .unwrap_or_else(|| "none".into()),
        s.config,
        s.layers
    )
}

/// The whole `ocibuild diff` text report.
pub fn diff_text(r: &DiffReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", side_line("a", &r.a));
    let _ = writeln!(out, "{}", side_line("b", &r.b));
    out.push_str(&diff_body(r));
    let _ = writeln!(
        out,
        "result: {}",
        match r.result {
            Outcome::Identical => "identical",
            Outcome::Equivalent =>
                "equivalent (timestamps, header encoding and entry order ignored)",
            Outcome::Different => "different",
        }
    );
    out
}

/// The whole `ocibuild verify` text report.
pub fn verify_text(r: &VerifyReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "rebuilt manifest {}", r.rebuilt);
    let _ = writeln!(
        out,
        "target  manifest {} ({})",
        r.target_manifest
            .map(|d| d.to_string())
            .unwrap_or_else(|| "none".into()),
        r.target
    );
    if r.reproduced {
        let _ = writeln!(out, "reproduced: the rebuild is bit-identical");
        return out;
    }
    for m in &r.inputs {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".into());
        let _ = writeln!(
            out,
            "the image was built from another {}: it records {} {}, this {} is {}",
            m.input,
            m.input,
            show(&m.target),
            m.input,
            show(&m.rebuild)
        );
    }
    match &r.diff {
        Some(d) => {
            let _ = writeln!(
                out,
                "NOT reproduced: the rebuild differs (a = target, b = rebuild):"
            );
            out.push_str(&diff_body(d));
        }
        None => {
            let _ = writeln!(
                out,
                "NOT reproduced: the manifest digests differ (a digest alone cannot be compared file by file)"
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_text_diff_lines_escape_control_characters() {
        // A file in an image that tries to recolour or clear the terminal.
        assert_eq!(
            visible("+x\u{1b}[2J\u{7}\tend\r"),
            "+x\\u{1b}[2J\\u{7}\tend\\u{d}"
        );
        assert_eq!(visible("-plain café"), "-plain café");
    }
}
