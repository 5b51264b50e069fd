//! The page's trust sections: provenance, the signature and attestation grid, the `--verify`
//! result; and the packages table's licence cell. Every string from the image or the registry
//! is escaped. Stable ids for the headless test: `trust` (with `data-verified`), one
//! `grid-PLATFORM-ITEM` row per item (`data-status`, `data-item`, `data-key`), `provenance-N`
//! (`data-lock-digest`), `verify` (`data-reproduced`), `trust-problems`.

use std::collections::BTreeSet;

use super::html_text::esc;
use super::model::{Package, Report};
use super::trust::{GridRow, Provenance, Rebuild, Trust};

/// `[a-z0-9-]` for an id.
fn slug(s: &str) -> String {
    let mut out: String = s
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    while out.contains("--") {
        out = out.replace("--", "-");
    }
    out.trim_matches('-').to_string()
}

/// The trust part and the `--verify` result, after the images.
pub fn render(out: &mut String, report: &Report) {
    if let Some(t) = &report.trust {
        trust(out, t);
    }
    if let Some(v) = &report.verify {
        rebuild(out, v);
    }
}

fn trust(out: &mut String, t: &Trust) {
    out.push_str(&format!(
        "<section id=\"trust\" data-verified=\"{}\" data-looked-in=\"{}\"><h2>Signatures and \
         attestations</h2>",
        t.verified,
        esc(&t.looked_in)
    ));
    if t.keys.is_empty() {
        out.push_str(
            "<p id=\"trust-keys\" data-keys=\"0\">No key given (<code>--key PUB</code>): what \
             is attached is listed, <strong>not verified</strong>.</p>",
        );
    } else {
        out.push_str(&format!(
            "<p id=\"trust-keys\" data-keys=\"{}\">Keys: ",
            t.keys.len()
        ));
        let keys: Vec<String> = t
            .keys
            .iter()
            .map(|k| format!("<code>{}</code> ({})", esc(&k.file), esc(&k.id)))
            .collect();
        out.push_str(&keys.join(", "));
        out.push_str(&format!(
            ". Signature: <strong>{}</strong>.</p>",
            if t.verified {
                "verified"
            } else {
                "NOT verified"
            }
        ));
    }
    if !t.problems.is_empty() {
        out.push_str("<ul class=\"missing\" id=\"trust-problems\">");
        for p in &t.problems {
            out.push_str(&format!("<li>{}</li>", esc(p)));
        }
        out.push_str("</ul>");
    }
    grid(out, &t.grid);
    for (n, p) in t.provenance.iter().enumerate() {
        provenance(out, n, p);
    }
    if t.provenance.is_empty() {
        out.push_str("<p id=\"provenance-none\">No provenance attached.</p>");
    }
    out.push_str("</section>\n");
}

fn grid(out: &mut String, rows: &[GridRow]) {
    out.push_str(
        "<table id=\"grid\"><thead><tr><th>item</th><th>platform</th><th>result</th>\
         <th>key</th><th>detail</th></tr></thead><tbody>",
    );
    let mut seen = BTreeSet::new();
    for r in rows {
        let base = format!(
            "grid-{}-{}{}",
            slug(r.platform.as_deref().unwrap_or("image")),
            slug(&r.item),
            if r.signed { "" } else { "-unsigned" }
        );
        let mut id = base.clone();
        let mut k = 2;
        while !seen.insert(id.clone()) {
            id = format!("{base}-{k}");
            k += 1;
        }
        out.push_str(&format!(
            "<tr id=\"{id}\" data-status=\"{}\" data-item=\"{}\" data-key=\"{}\"><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            r.result.id(),
            esc(&r.item),
            esc(r.key_id.as_deref().unwrap_or("")),
            esc(&r.item),
            esc(r.platform.as_deref().unwrap_or("-")),
            esc(r.result.word()),
            esc(r.key.as_deref().unwrap_or("-")),
            esc(&r.detail),
        ));
    }
    out.push_str("</tbody></table>");
}

fn provenance(out: &mut String, n: usize, p: &Provenance) {
    let opt = |v: &Option<String>| esc(v.as_deref().unwrap_or("not stated"));
    out.push_str(&format!(
        "<h3>Provenance of <code>{}</code></h3><dl class=\"totals\" id=\"provenance-{n}\" \
         data-lock-digest=\"{}\" data-inputs=\"{}\"><dt>builder</dt><dd>{}</dd><dt>build type\
         </dt><dd>{}</dd><dt>recipe</dt><dd>{} <code>{}</code></dd><dt>lock</dt><dd>{}</dd><dt>from</dt><dd><code>{}</code> (unsigned copy, read as \
         attached)</dd></dl>",
        esc(&p.subject),
        esc(p.lock_digest.as_deref().unwrap_or("")),
        p.inputs.len(),
        opt(&p.builder),
        opt(&p.build_type),
        opt(&p.recipe),
        opt(&p.recipe_digest),
        match (&p.lock, &p.lock_digest) {
            (None, None) => "none (built without a lock)".to_string(),
            (l, d) => format!("{} <code>{}</code>", opt(l), opt(d)),
        },
        esc(&p.referrer),
    ));
    out.push_str(&format!(
        "<details><summary>{} inputs</summary><table><thead><tr><th>kind</th><th>name</th>\
         <th>uri</th><th>sha256</th></tr></thead><tbody>",
        p.inputs.len()
    ));
    for i in &p.inputs {
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>",
            esc(i.kind.as_deref().unwrap_or("")),
            esc(i.name.as_deref().unwrap_or("")),
            esc(i.uri.as_deref().unwrap_or("")),
            esc(i.sha256.as_deref().unwrap_or("")),
        ));
    }
    out.push_str("</tbody></table></details>");
}

fn rebuild(out: &mut String, v: &Rebuild) {
    out.push_str(&format!(
        "<section id=\"verify\" data-reproduced=\"{}\"><h2>Rebuild (<code>verify</code>)</h2>\
         <p><strong>{}</strong></p>",
        v.reproduced,
        if v.reproduced {
            "Reproduced: the rebuild from the lock is bit-identical."
        } else {
            "NOT reproduced: the rebuild differs."
        }
    ));
    for (n, p) in v.platforms.iter().enumerate() {
        out.push_str(&format!(
            "<div id=\"verify-{n}\" data-reproduced=\"{}\" data-rebuilt=\"{}\"><p>{}: rebuilt \
             <code>{}</code>, image <code>{}</code></p>",
            p.reproduced,
            esc(&p.rebuilt),
            esc(&p.platform),
            esc(&p.rebuilt),
            esc(p.target_manifest.as_deref().unwrap_or("-")),
        ));
        if !p.differences.is_empty() {
            out.push_str(&format!(
                "<pre id=\"verify-{n}-differences\">{}</pre>",
                esc(&p.differences.join("\n"))
            ));
        }
        if p.differences_left_out > 0 {
            out.push_str(&format!(
                "<p>… and {} more lines</p>",
                p.differences_left_out
            ));
        }
        out.push_str("</div>");
    }
    out.push_str("</section>\n");
}

/// A package's licence: the SPDX expression, and the verbatim statement when it says more.
pub fn licence_cell(p: &Package) -> String {
    match (&p.licence_spdx, &p.licence) {
        (Some(e), Some(v)) if e != v => format!(
            "<span class=\"spdx\">{}</span> <small>(stated: {})</small>",
            esc(e),
            esc(v)
        ),
        (Some(e), _) => format!("<span class=\"spdx\">{}</span>", esc(e)),
        (None, Some(v)) => format!("{} <small>(verbatim, not SPDX)</small>", esc(v)),
        (None, None) => "not stated".into(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn slugs() {
        assert_eq!(super::slug("SPDX SBOM"), "spdx-sbom");
        assert_eq!(super::slug("linux/arm64/v8"), "linux-arm64-v8");
        assert_eq!(super::slug("cosign .att"), "cosign-att");
    }
}
