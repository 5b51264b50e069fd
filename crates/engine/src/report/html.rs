//! The report as one self-contained HTML page: no network, no external script, style or font;
//! readable without JavaScript (a small inline script only filters the packages table).
//!
//! Every string from the image is escaped ([`esc`]). The numbers a test checks against
//! `--json` sit in elements with stable ids (`IMG` is the image's index in the report, 0 for
//! one image): `total-size-IMG` (`data-bytes`: uncompressed), `total-compressed-IMG`,
//! `layer-count-IMG` (`data-count`), `wasted-bytes-IMG` (`data-bytes`), `efficiency-IMG`
//! (`data-value`), `duplicate-bytes-IMG` (`data-bytes`), `package-count-IMG` (`data-count`),
//! and per layer `layer-IMG-POS` (`data-uncompressed`, `data-compressed`, `data-origin`).

pub use super::html_text::{esc, human};
use super::model::{
    DuplicateSet, Group, ImageReport, LayerReport, LeftOut, Origin, Package, Report,
};

fn colour(o: Origin) -> &'static str {
    match o {
        Origin::Base => "#8c8c8c",
        Origin::Packages => "#d9822b",
        Origin::System => "#a66fd1",
        Origin::Interpreter => "#3c78d8",
        Origin::Wheels => "#2e9e5b",
        Origin::Paths => "#c2a200",
        Origin::Steps => "#1f9bb0",
        Origin::App => "#d64545",
        Origin::Unknown => "#5b6f7f",
    }
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:72em;\
padding:0 1em;color:#222}h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;margin-top:2em}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 6px;\
text-align:left;vertical-align:top}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}\
code{font-size:.9em;word-break:break-all}dl.totals{display:grid;grid-template-columns:max-content \
auto;gap:2px 1em}dl.totals dt{font-weight:600}.sw{display:inline-block;width:.9em;height:.9em;\
margin:0 .3em 0 1em;vertical-align:middle}.warn{color:#b00;font-weight:600}details{margin:.3em 0}\
summary{cursor:pointer}.missing li{color:#8a5a00}pre.diff{background:#f6f6f6;padding:.4em;\
overflow-x:auto;max-height:30em}table.changes td:nth-child(3){min-width:24em}";

const SCRIPT: &str = "document.querySelectorAll('input.pkg-search').forEach(function(i){\
i.hidden=false;var t=document.getElementById(i.dataset.table);i.addEventListener('input',\
function(){var q=i.value.toLowerCase();t.querySelectorAll('tbody tr').forEach(function(r){\
r.hidden=q!==''&&r.textContent.toLowerCase().indexOf(q)<0;});});});";

/// The page.
pub fn render(report: &Report) -> String {
    let mut out = String::with_capacity(64 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width\">");
    out.push_str(&format!(
        "<title>ocibuild report: {}</title><style>{STYLE}</style></head><body>\n",
        esc(&report.source)
    ));
    out.push_str(&format!(
        "<h1>Image report</h1><p>Source: <code id=\"source\">{}</code> · schema <code>{}</code> · \
         <span id=\"image-count\" data-count=\"{n}\">{n}</span> image(s)</p>\n",
        esc(&report.source),
        esc(report.schema),
        n = report.images.len()
    ));
    missing(&mut out, "missing", &report.missing);
    for (k, image) in report.images.iter().enumerate() {
        image_section(&mut out, k, image);
    }
    super::html_trust::render(&mut out, report);
    if let Some(a) = &report.against {
        super::html_against::section(&mut out, a);
    }
    out.push_str(&format!("<script>{SCRIPT}</script>\n</body></html>\n"));
    out
}

fn missing(out: &mut String, id: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    out.push_str(&format!("<ul class=\"missing\" id=\"{id}\">"));
    for m in items {
        out.push_str(&format!("<li>{}</li>", esc(m)));
    }
    out.push_str("</ul>\n");
}

fn image_section(out: &mut String, k: usize, i: &ImageReport) {
    out.push_str(&format!(
        "<section class=\"image\" id=\"image-{k}\" data-platform=\"{p}\"><h2>{p}</h2>\n",
        p = esc(&i.platform)
    ));
    if let Some(m) = &i.manifest {
        out.push_str(&format!("<p>Manifest <code>{}</code></p>", esc(m)));
    }
    missing(out, &format!("missing-{k}"), &i.missing);
    totals(out, k, i);
    stack(out, k, i);
    layers(out, k, i);
    efficiency(out, k, i);
    duplicates(out, k, &i.duplicates.listed, i.duplicates.left_out);
    packages(out, k, &i.packages);
    out.push_str("</section>\n");
}

fn totals(out: &mut String, k: usize, i: &ImageReport) {
    let t = &i.totals;
    let g = &i.guardrails;
    let compressed = match t.compressed {
        Some(c) => format!(
            "<dd id=\"total-compressed-{k}\" data-bytes=\"{c}\">{}</dd>",
            human(c)
        ),
        None => format!("<dd id=\"total-compressed-{k}\">not known</dd>"),
    };
    let over = if g.layer_count > g.max_layers {
        " <span class=\"warn\">over the limit</span>"
    } else {
        ""
    };
    out.push_str(&format!(
        "<dl class=\"totals\"><dt>Size (uncompressed)</dt><dd id=\"total-size-{k}\" \
         data-bytes=\"{u}\">{hu} ({u} bytes)</dd><dt>Size (compressed)</dt>{compressed}\
         <dt>Layers</dt><dd><span id=\"layer-count-{k}\" data-count=\"{n}\">{n}</span> of at \
         most {max}{over}</dd><dt>Files (as run)</dt><dd id=\"file-count-{k}\" \
         data-count=\"{f}\" data-bytes=\"{fb}\">{f} ({hfb})</dd><dt>Wasted (as dive counts)</dt>\
         <dd id=\"wasted-bytes-{k}\" data-bytes=\"{w}\">{hw} ({w} bytes)</dd><dt>Efficiency \
         (as dive counts)</dt><dd id=\"efficiency-{k}\" data-value=\"{e}\">{ep:.2} %</dd>\
         <dt>Same content at other paths</dt><dd id=\"duplicate-bytes-{k}\" data-bytes=\"{d}\" \
         data-sets=\"{ds}\">{hd} in {ds} set(s)</dd><dt>Packages</dt><dd id=\"package-count-{k}\" \
         data-count=\"{pc}\">{pc}</dd><dt>Wheel layer bound</dt><dd id=\"wheel-cap-{k}\" \
         data-bytes=\"{cap}\">{hcap} ({from}){caps}</dd></dl>\n",
        u = t.uncompressed,
        hu = human(t.uncompressed),
        n = t.layers,
        max = g.max_layers,
        f = t.files,
        fb = t.file_bytes,
        hfb = human(t.file_bytes),
        w = i.efficiency.wasted_bytes,
        hw = human(i.efficiency.wasted_bytes),
        // The digits the JSON document has (serde_json's shortest form).
        e = serde_json::Number::from_f64(i.efficiency.score)
            .map(|n| n.to_string())
            .unwrap_or_else(|| i.efficiency.score.to_string()),
        ep = i.efficiency.score * 100.0,
        d = i.duplicates.extra_bytes,
        ds = i.duplicates.sets,
        hd = human(i.duplicates.extra_bytes),
        pc = i.packages.len(),
        cap = g.max_wheel_layer_size,
        hcap = human(g.max_wheel_layer_size),
        from = esc(&g.max_wheel_layer_size_from),
        caps = if g.layers_over_cap.is_empty() {
            String::new()
        } else {
            format!(
                " <span class=\"warn\">over it: layers {}</span>",
                g.layers_over_cap
                    .iter()
                    .map(std::string::ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
    ));
}

/// The layer stack as an SVG: the top layer first, bar widths by uncompressed bytes.
fn stack(out: &mut String, k: usize, i: &ImageReport) {
    const ROW: usize = 22;
    const BAR: f64 = 520.0;
    let largest = i
        .layers
        .iter()
        .map(|l| l.uncompressed)
        .max()
        .unwrap_or(0)
        .max(1);
    let height = ROW * i.layers.len() + 4;
    out.push_str(&format!(
        "<h3>Layer stack</h3><svg id=\"stack-{k}\" role=\"img\" width=\"900\" \
         height=\"{height}\" viewBox=\"0 0 900 {height}\" xmlns=\"http://www.w3.org/2000/svg\" \
         font-size=\"12\"><title>Layers, top first, by uncompressed size</title>"
    ));
    for (row, l) in i.layers.iter().rev().enumerate() {
        let y = row * ROW + 2;
        let w = (BAR * l.uncompressed as f64 / largest as f64).max(1.0);
        out.push_str(&format!(
            "<g><title>layer {pos} ({origin}): {size} bytes</title><text x=\"0\" y=\"{ty}\">{pos} \
             {name}</text><rect x=\"230\" y=\"{y}\" width=\"{w:.1}\" height=\"{h}\" \
             fill=\"{fill}\"/><text x=\"{tx:.1}\" y=\"{ty}\">{hs}</text></g>",
            pos = l.position,
            origin = l.origin.word(),
            size = l.uncompressed,
            ty = y + 14,
            name = esc(&short(l.name.as_deref().unwrap_or(l.origin.word()), 30)),
            h = ROW - 6,
            fill = colour(l.origin),
            tx = 236.0 + w,
            hs = human(l.uncompressed),
        ));
    }
    out.push_str("</svg>\n<p class=\"legend\">");
    for o in Origin::ALL {
        if i.layers.iter().any(|l| l.origin == o) {
            out.push_str(&format!(
                "<span class=\"sw\" style=\"background:{}\"></span>{}",
                colour(o),
                o.word()
            ));
        }
    }
    out.push_str("</p>\n");
}

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

fn left_out(out: &mut String, what: &str, l: LeftOut) {
    if l.count > 0 {
        out.push_str(&format!(
            "<p class=\"left-out\" data-count=\"{}\" data-bytes=\"{}\">… and {} more {what} \
             ({}), in no list</p>",
            l.count,
            l.bytes,
            l.count,
            human(l.bytes)
        ));
    }
}

fn layers(out: &mut String, k: usize, i: &ImageReport) {
    out.push_str(&format!(
        "<h3>Layers</h3><table id=\"layers-{k}\"><thead><tr><th class=\"n\">#</th><th>name</th>\
         <th>origin</th><th class=\"n\">compressed</th><th class=\"n\">uncompressed</th>\
         <th class=\"n\">files</th><th class=\"n\">shadowed later</th><th>digest</th></tr></thead>\
         <tbody>"
    ));
    for l in &i.layers {
        let compressed = l.compressed.map(|c| c.to_string()).unwrap_or_default();
        out.push_str(&format!(
            "<tr id=\"layer-{k}-{pos}\" data-origin=\"{origin}\" data-compressed=\"{compressed}\" \
             data-uncompressed=\"{u}\" data-shadowed=\"{s}\"><td class=\"n\">{pos}</td><td>{name}\
             </td><td><span class=\"sw\" style=\"background:{fill};margin-left:0\"></span>\
             {origin}</td><td class=\"n\">{hc}</td><td class=\"n\">{hu}</td><td class=\"n\">{f}\
             </td><td class=\"n\">{hs}</td><td><code>{digest}</code></td></tr>",
            pos = l.position,
            origin = l.origin.word(),
            u = l.uncompressed,
            s = l.shadowed_bytes,
            name = esc(l.name.as_deref().unwrap_or("")),
            fill = colour(l.origin),
            hc = l.compressed.map(human).unwrap_or_default(),
            hu = human(l.uncompressed),
            f = l.files,
            hs = human(l.shadowed_bytes),
            digest = esc(&short(l.digest.as_deref().unwrap_or(""), 24)),
        ));
    }
    out.push_str("</tbody></table>\n");
    for l in &i.layers {
        layer_details(out, k, l);
    }
}

fn layer_details(out: &mut String, k: usize, l: &LayerReport) {
    out.push_str(&format!(
        "<details id=\"layer-detail-{k}-{pos}\"><summary>Layer {pos} {name} ({origin}): {hu}, \
         {f} files</summary>",
        pos = l.position,
        name = esc(l.name.as_deref().unwrap_or("")),
        origin = l.origin.word(),
        hu = human(l.uncompressed),
        f = l.files,
    ));
    groups(out, &l.groups);
    left_out(out, "groups", l.groups_left_out);
    out.push_str(
        "<table class=\"files\"><thead><tr><th>largest files</th><th class=\"n\">bytes</th></tr>\
         </thead><tbody>",
    );
    for f in &l.largest_files {
        out.push_str(&format!(
            "<tr><td><code>/{}</code></td><td class=\"n\" data-bytes=\"{s}\">{hs}</td></tr>",
            esc(&f.path),
            s = f.size,
            hs = human(f.size)
        ));
    }
    out.push_str("</tbody></table>");
    left_out(out, "files", l.files_left_out);
    out.push_str("</details>\n");
}

fn groups(out: &mut String, groups: &[Group]) {
    out.push_str(
        "<table class=\"groups\"><thead><tr><th>owner</th><th>name</th><th class=\"n\">files</th>\
         <th class=\"n\">bytes</th></tr></thead><tbody>",
    );
    for g in groups {
        out.push_str(&format!(
            "<tr><td>{kind}</td><td>{name}</td><td class=\"n\">{f}</td><td class=\"n\" \
             data-bytes=\"{b}\">{hb}</td></tr>",
            kind = match g.kind {
                super::model::GroupKind::Deb => "deb",
                super::model::GroupKind::Wheel => "wheel",
                super::model::GroupKind::Dir => "directory",
            },
            name = esc(&g.name),
            f = g.files,
            b = g.bytes,
            hb = human(g.bytes)
        ));
    }
    out.push_str("</tbody></table>");
}

fn efficiency(out: &mut String, k: usize, i: &ImageReport) {
    let e = &i.efficiency;
    out.push_str(&format!(
        "<h3>Wasted space (as dive counts it)</h3><p>Paths in more than one layer (replaced or \
         removed later): {} bytes.</p><table id=\"inefficient-{k}\"><thead><tr><th>path</th>\
         <th class=\"n\">layers</th><th class=\"n\">bytes</th></tr></thead><tbody>",
        e.wasted_bytes
    ));
    for f in &e.inefficient {
        out.push_str(&format!(
            "<tr><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\" \
             data-bytes=\"{b}\">{hb}</td></tr>",
            esc(&f.path),
            f.count,
            b = f.bytes,
            hb = human(f.bytes)
        ));
    }
    out.push_str("</tbody></table>");
    left_out(out, "paths", e.inefficient_left_out);
}

fn duplicates(out: &mut String, k: usize, sets: &[DuplicateSet], rest: LeftOut) {
    out.push_str(&format!(
        "<h3>Identical content at different paths</h3><p>What dive cannot see: the same bytes \
         (sha256) stored at several paths; the copies beyond the first cost their size.</p>\
         <table id=\"duplicates-{k}\"><thead><tr><th>paths (layer: path)</th><th class=\"n\">\
         size</th><th class=\"n\">extra bytes</th><th>sha256</th></tr></thead><tbody>"
    ));
    for s in sets {
        let paths: Vec<String> = s
            .paths
            .iter()
            .map(|p| format!("{}: <code>/{}</code>", p.layer, esc(&p.path)))
            .collect();
        out.push_str(&format!(
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\" data-bytes=\"{b}\">{hb}</td>\
             <td><code>{}</code></td></tr>",
            paths.join("<br>"),
            human(s.size),
            esc(&short(&s.sha256, 24)),
            b = s.extra_bytes,
            hb = human(s.extra_bytes)
        ));
    }
    out.push_str("</tbody></table>");
    left_out(out, "sets", rest);
}

fn packages(out: &mut String, k: usize, packages: &[Package]) {
    out.push_str(&format!(
        "<h3>Packages</h3><input class=\"pkg-search\" type=\"search\" hidden \
         placeholder=\"filter packages\" aria-label=\"filter packages\" \
         data-table=\"packages-{k}\"><table id=\"packages-{k}\"><thead><tr><th>kind</th>\
         <th>name</th><th>version</th><th>licence</th><th class=\"n\">layer</th><th>source</th>\
         <th>sha256</th><th>purl</th></tr></thead><tbody>"
    ));
    for p in packages {
        let opt = |v: &Option<String>| esc(v.as_deref().unwrap_or(""));
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td>\
             <td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td></tr>",
            match p.kind {
                super::model::GroupKind::Wheel => "wheel",
                _ => "deb",
            },
            esc(&p.name),
            opt(&p.version),
            super::html_trust::licence_cell(p),
            p.layer.map(|l| l.to_string()).unwrap_or_default(),
            opt(&p.source_url),
            opt(&p.sha256),
            opt(&p.purl),
        ));
    }
    out.push_str("</tbody></table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc("<script>alert('x\")</script>&"),
            "&lt;script&gt;alert(&#39;x&quot;)&lt;/script&gt;&amp;"
        );
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(12), "12 B");
    }
}
