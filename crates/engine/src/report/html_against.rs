//! The page's comparison with an earlier image (`report --against`): per platform, the pull
//! (`pull-bytes-K`, `pull-layers-K`: `data-bytes`, `data-count`), the package changes
//! (`package-changes-K`, `data-count`; rows `data-change`), then the changed files
//! (`file-changes-K`, `data-count` and `data-left-out`), small text files' unified diffs in
//! collapsible blocks. Every string from the images is escaped.

use super::against::{Against, AgainstImage};
use super::html_text::{esc, human};
use crate::audit::diff::Change;

fn change_word(c: Change) -> &'static str {
    match c {
        Change::Added => "added",
        Change::Removed => "removed",
        Change::Changed => "changed",
    }
}

/// The comparison's section.
pub fn section(out: &mut String, against: &Against) {
    out.push_str(&format!(
        "<section id=\"against\"><h2>Against <code>{}</code></h2>\n",
        esc(&against.source)
    ));
    for (k, a) in against.images.iter().enumerate() {
        image(out, k, a);
    }
    out.push_str("</section>\n");
}

fn image(out: &mut String, k: usize, a: &AgainstImage) {
    out.push_str(&format!(
        "<h3 id=\"against-{k}\" data-platform=\"{p}\" data-result=\"{r}\">{p}: {r}</h3>\n",
        p = esc(&a.platform),
        r = match a.result {
            crate::audit::diff::Outcome::Identical => "identical",
            crate::audit::diff::Outcome::Equivalent => "equivalent",
            crate::audit::diff::Outcome::Different => "different",
        }
    ));
    if let Some(m) = &a.old_manifest {
        out.push_str(&format!("<p>Earlier manifest <code>{}</code></p>", esc(m)));
    }
    let p = &a.pull;
    out.push_str(&format!(
        "<dl class=\"totals\"><dt>A pull with the earlier image present fetches</dt>\
         <dd id=\"pull-bytes-{k}\" data-bytes=\"{b}\">{hb} ({b} bytes{unknown}) in \
         <span id=\"pull-layers-{k}\" data-count=\"{n}\">{n}</span> layer(s), and the config \
         ({c} bytes)</dd><dt>Already there</dt><dd id=\"pull-reused-{k}\" data-bytes=\"{rb}\" \
         data-count=\"{rn}\">{hrb} in {rn} layer(s)</dd></dl>\n",
        b = p.bytes_fetched,
        hb = human(p.bytes_fetched),
        unknown = if p.sizes_unknown {
            "; some layers' compressed sizes unknown: their tar sizes counted"
        } else {
            ""
        },
        n = p.layers_fetched,
        c = p.config_bytes,
        rb = p.bytes_reused,
        hrb = human(p.bytes_reused),
        rn = p.layers_reused,
    ));
    out.push_str(&format!(
        "<h4>Packages</h4><table id=\"package-changes-{k}\" data-count=\"{}\"><thead><tr>\
         <th>change</th><th>kind</th><th>name</th><th>earlier</th><th>now</th></tr></thead><tbody>",
        a.packages.len()
    ));
    for c in &a.packages {
        out.push_str(&format!(
            "<tr data-change=\"{w}\"><td>{w}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            c.kind,
            esc(&c.name),
            esc(c.old.as_deref().unwrap_or("")),
            esc(c.new.as_deref().unwrap_or("")),
            w = change_word(c.change),
        ));
    }
    out.push_str("</tbody></table>\n");
    files(out, k, a);
}

fn files(out: &mut String, k: usize, a: &AgainstImage) {
    out.push_str(&format!(
        "<h4>Files</h4><table class=\"changes\" id=\"file-changes-{k}\" data-count=\"{}\" data-left-out=\"{}\">\
         <thead><tr><th class=\"n\">layer</th><th>change</th><th>path</th><th class=\"n\">size</th>\
         <th>what differs</th></tr></thead><tbody>",
        a.files.len(),
        a.files_left_out
    ));
    for f in &a.files {
        let what = if f.attributes.is_empty() {
            String::new()
        } else {
            esc(&f.attributes.join(", "))
        };
        let text = match &f.text {
            Some(t) => format!(
                "<details><summary>text diff</summary><pre class=\"diff\">{}</pre></details>",
                esc(t)
            ),
            None => String::new(),
        };
        out.push_str(&format!(
            "<tr data-change=\"{w}\"><td class=\"n\">{}</td><td>{w}</td><td><code>/{}</code></td>\
             <td class=\"n\">{}</td><td>{what}{text}</td></tr>",
            f.layer,
            esc(&f.path),
            f.size.map(human).unwrap_or_default(),
            w = change_word(f.change),
        ));
    }
    out.push_str("</tbody></table>\n");
    if a.files_left_out > 0 {
        out.push_str(&format!(
            "<p class=\"left-out\">… and {} more changed files (see <code>ocibuild diff</code>)</p>\n",
            a.files_left_out
        ));
    }
}
