//! Declared licences (and suppliers, [`super::supplier`]) of the locked inputs, for the SBOMs,
//! read from the archives in the store (this module never fetches; `ocibuild sbom` fetches
//! what the store lacks first):
//!
//! - a .deb: its `usr/share/doc/PKG/copyright`, when it is machine-readable (DEP-5): the
//!   `License:` of its `Files:` paragraphs, Debian's short names mapped to SPDX identifiers;
//! - a wheel: its `METADATA`'s `License-Expression` (PEP 639), else its `License :: OSI
//!   Approved :: …` classifiers mapped to SPDX identifiers.
//!
//! Anything else (not DEP-5, no usable field, the file not in the store) declares nothing:
//! the SBOM says `NOASSERTION`. A name with no SPDX identifier becomes `LicenseRef-<name>`.
//! Each .deb's and wheel's result is cached in the store's meta under its sha256 and
//! [`VERSION`], so a second SBOM opens no archive.

use std::collections::{BTreeMap, BTreeSet};

use crate::digest::Digest;
use crate::lock::Lock;
use crate::store::{Store, StoreError};

/// Bump when what is read or how it is mapped changes (part of the cache key).
pub const VERSION: u32 = 4;

/// The DEP-5 `Format:` URL (without scheme and trailing slash).
const DEP5_FORMAT: &str = "www.debian.org/doc/packaging-manuals/copyright-format/1.0";

/// What the inputs' own files declare, by sha256: the licence (an SPDX expression) and the
/// supplier ([`super::supplier`], SPDX form) of each input that declares one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Licenses {
    pub declared: BTreeMap<Digest, String>,
    pub suppliers: BTreeMap<Digest, String>,
    /// Each `LicenseRef-…` of `declared`: the licence names, verbatim, that the packages' own
    /// files give for it (an unknown name is kept as written, never guessed at).
    pub names: BTreeMap<String, BTreeSet<String>>,
}

impl Licenses {
    /// The declared licence of the input with `sha256`, if any.
    pub fn get(&self, sha256: &Digest) -> Option<&str> {
        self.declared.get(sha256).map(String::as_str)
    }

    /// The supplier the input with `sha256` names, if any.
    pub fn supplier(&self, sha256: &Digest) -> Option<&str> {
        self.suppliers.get(sha256).map(String::as_str)
    }
}

/// One input's facts as the store's meta keeps them.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Facts {
    license: String,
    supplier: String,
    /// `LicenseRef-…` → the `License:` line it was made from, verbatim.
    #[serde(default)]
    names: BTreeMap<String, String>,
}

/// The facts of the .deb or wheel at `path`; an error when the archive cannot be read.
fn read_facts(path: &std::path::Path, name: &str, is_deb: bool) -> Result<Facts, String> {
    if is_deb {
        let copyright = crate::apt::copyright::read(path, name).map_err(|e| e.to_string())?;
        let control = crate::apt::copyright::control(path, name).map_err(|e| e.to_string())?;
        Ok(Facts {
            license: copyright
                .as_deref()
                .and_then(dep5_expression)
                .unwrap_or_default(),
            names: copyright.as_deref().map(dep5_names).unwrap_or_default(),
            supplier: control
                .and_then(|c| super::supplier::of_control(&c))
                .unwrap_or_default(),
        })
    } else {
        let meta =
            crate::python::dist_info::read_metadata(path, name).map_err(|e| e.to_string())?;
        Ok(Facts {
            license: meta
                .as_deref()
                .and_then(metadata_expression)
                .unwrap_or_default(),
            supplier: meta
                .as_deref()
                .and_then(super::supplier::of_metadata)
                .unwrap_or_default(),
            names: BTreeMap::new(),
        })
    }
}

/// The `LicenseRef-…` identifiers of an expression.
pub fn refs_of(expr: &str) -> Vec<String> {
    expr.split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter(|t| t.starts_with("LicenseRef-"))
        .map(str::to_string)
        .collect()
}

/// The store's meta key of the declared licence of the archive `sha256`.
fn meta_key(sha256: &Digest) -> Digest {
    Digest::of(format!("ocibuild licence v{VERSION} {sha256}").as_bytes())
}

/// Whether the declared licence of the archive `sha256` was read before (cached in the
/// store's meta): then the archive itself is not needed.
pub fn is_known(store: &Store, sha256: &Digest) -> bool {
    matches!(store.meta(&meta_key(sha256)), Ok(Some(_)))
}

/// The declared licences of the lock's .debs and wheels found in `store` (cached in its meta).
pub fn for_lock(store: &Store, lock: &Lock) -> Result<Licenses, StoreError> {
    let mut out = Licenses::default();
    let mut inputs: Vec<(Digest, &str, bool)> = Vec::new();
    if let Some(apt) = &lock.apt {
        inputs.extend(
            apt.packages
                .iter()
                .map(|p| (p.sha256, p.name.as_str(), true)),
        );
    }
    inputs.extend(
        lock.wheels
            .iter()
            .map(|w| (w.sha256, w.filename.as_str(), false)),
    );
    for (sha256, name, is_deb) in inputs {
        let key = meta_key(&sha256);
        let facts = if let Some(bytes) = store.meta(&key)? {
            serde_json::from_slice(&bytes).unwrap_or_default()
        } else {
            // Not in the store (a pruned store, another machine): nothing declared, and
            // nothing cached (the absence is not a fact about the file).
            if !store.has_blob(&sha256) {
                continue;
            }
            // An archive that cannot be read declares nothing, and is not cached (a
            // read error may pass).
            let Ok(facts) = read_facts(&store.blob_path(&sha256), name, is_deb) else {
                continue;
            };
            if let Ok(bytes) = serde_json::to_vec(&facts) {
                store.put_meta(&key, &bytes)?;
            }
            facts
        };
        if !facts.license.is_empty() {
            out.declared.insert(sha256, facts.license);
        }
        if !facts.supplier.is_empty() {
            out.suppliers.insert(sha256, facts.supplier);
        }
        for (r, name) in facts.names {
            out.names.entry(r).or_default().insert(name);
        }
    }
    Ok(out)
}

/// The SPDX 2.3 `hasExtractedLicensingInfos` entry of a `LicenseRef-…` (its text is the
/// package's: ocibuild names it, it does not copy it). `verbatim`: the names the packages'
/// files wrote that became this reference, as written.
pub fn spdx_extracted(license_ref: &str, verbatim: Option<&BTreeSet<String>>) -> serde_json::Value {
    let short = license_ref.trim_start_matches("LicenseRef-");
    let written: Vec<String> = verbatim
        .into_iter()
        .flatten()
        .map(|n| format!("`{n}`"))
        .collect();
    let (name, as_written) = match written.as_slice() {
        [] => (short.to_string(), format!("`{short}`")),
        [one] => (one.trim_matches('`').to_string(), one.clone()),
        many => (short.to_string(), many.join(", ")),
    };
    serde_json::json!({
        "licenseId": license_ref,
        "name": name,
        "extractedText": format!(
            "The licence the package's own files (a Debian copyright file, a wheel's METADATA) \
             name {as_written}, which has no SPDX identifier; its text is in the package."
        ),
    })
}

/// The SPDX `hasExtractedLicensingInfos` of the `LicenseRef-…`s these expressions use, sorted;
/// None when they use none. `names`: [`Licenses::names`].
pub fn spdx_extracted_infos<'a>(
    exprs: impl Iterator<Item = &'a str>,
    names: &BTreeMap<String, BTreeSet<String>>,
) -> Option<serde_json::Value> {
    let refs: BTreeSet<String> = exprs.flat_map(refs_of).collect();
    (!refs.is_empty()).then(|| {
        serde_json::json!(refs
            .iter()
            .map(|r| spdx_extracted(r, names.get(r)))
            .collect::<Vec<_>>())
    })
}

/// The `LicenseRef-…`s of a DEP-5 file's expression, each with the `License:` short name line
/// it was made from, verbatim (the first such line).
fn dep5_names(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if dep5_expression(text).is_none() {
        return out;
    }
    for p in dep5_paragraphs(text).iter().skip(1) {
        if field(p, "Files").is_none() {
            continue;
        }
        let Some(line) = field(p, "License").map(str::trim) else {
            continue;
        };
        for e in dep5_license(line).unwrap_or_default() {
            for r in refs_of(&e) {
                out.entry(r).or_insert_with(|| line.to_string());
            }
        }
    }
    out
}

/// The CycloneDX `licenses` of an expression: one listed SPDX identifier as `license.id`,
/// anything else (operators, `+`, a `LicenseRef-`) as an `expression`.
pub fn cyclonedx(expr: &str) -> serde_json::Value {
    let single = !expr.contains([' ', '(', '+']) && !expr.starts_with("LicenseRef-");
    if single {
        serde_json::json!([{"license": {"id": expr}}])
    } else {
        serde_json::json!([{"expression": expr}])
    }
}

/// `LicenseRef-<name>`, a `+` in the name as `-or-later`, its other characters outside
/// `[A-Za-z0-9.-]` as `-` (one for a run).
pub fn license_ref(name: &str) -> String {
    let s: String = name
        .replace('+', "-or-later")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let parts: Vec<&str> = s.split('-').filter(|p| !p.is_empty()).collect();
    format!("LicenseRef-{}", parts.join("-"))
}

/// Debian's short licence name (DEP-5 §7.2) as an SPDX identifier; an unknown name as
/// `LicenseRef-<name>`.
pub fn debian_to_spdx(name: &str) -> String {
    let (base, plus) = match name.strip_suffix('+') {
        Some(b) => (b, true),
        None => (name, false),
    };
    let lower = base.to_ascii_lowercase();
    if lower == "gfdl-niv-1.3" {
        let tail = if plus { "or-later" } else { "only" };
        return format!("GFDL-1.3-no-invariants-{tail}");
    }
    // The GNU licences: `-only` / `-or-later`.
    for (deb, spdx) in [
        ("gpl", "GPL"),
        ("lgpl", "LGPL"),
        ("agpl", "AGPL"),
        ("gfdl", "GFDL"),
    ] {
        if let Some(v) = lower.strip_prefix(&format!("{deb}-")) {
            let v = match v {
                "1" | "2" | "3" => format!("{v}.0"),
                "2.0" | "2.1" | "3.0" | "1.1" | "1.2" | "1.3" => v.to_string(),
                _ => return license_ref(name),
            };
            if deb == "lgpl" && v == "1.0" {
                return license_ref(name);
            }
            return format!("{spdx}-{v}-{}", if plus { "or-later" } else { "only" });
        }
    }
    let known = match lower.as_str() {
        "expat" | "mit" => "MIT",
        "bsd-2-clause" => "BSD-2-Clause",
        "bsd-3-clause" => "BSD-3-Clause",
        "bsd-4-clause" => "BSD-4-Clause",
        "bsd-4-clause-uc" => "BSD-4-Clause-UC",
        "fsfullr" => "FSFULLR",
        "fsfap" => "FSFAP",
        "fsful" => "FSFUL",
        "latex2e" => "Latex2e",
        "libpng" => "Libpng",
        "libpng-2.0" => "libpng-2.0",
        "ofl-1.1" => "OFL-1.1",
        "sleepycat" => "Sleepycat",
        "tcl" => "TCL",
        "isc" => "ISC",
        "zlib" => "Zlib",
        "apache-2.0" => "Apache-2.0",
        "apache-1.1" => "Apache-1.1",
        "artistic" | "artistic-1.0" => "Artistic-1.0",
        "artistic-2.0" => "Artistic-2.0",
        "psf-2" | "psf-2.0" => "PSF-2.0",
        "python" | "python-2.0" => "Python-2.0",
        "mpl-1.1" => "MPL-1.1",
        "mpl-2.0" => "MPL-2.0",
        "cc0-1.0" | "cc0" => "CC0-1.0",
        "cc-by-3.0" => "CC-BY-3.0",
        "cc-by-4.0" => "CC-BY-4.0",
        "cc-by-sa-3.0" => "CC-BY-SA-3.0",
        "cc-by-sa-4.0" => "CC-BY-SA-4.0",
        "bsl-1.0" => "BSL-1.0",
        "epl-1.0" => "EPL-1.0",
        "epl-2.0" => "EPL-2.0",
        "openssl" => "OpenSSL",
        "x11" => "X11",
        "curl" => "curl",
        "unicode-dfs-2016" => "Unicode-DFS-2016",
        "ftl" => "FTL",
        "wtfpl" => "WTFPL",
        "unlicense" => "Unlicense",
        "0bsd" => "0BSD",
        "gpl" => "GPL-1.0-or-later",
        "lgpl" => "LGPL-2.0-or-later",
        _ => return license_ref(name),
    };
    if plus && !known.ends_with("-or-later") {
        // `Apache-2.0+`: SPDX's `+` operator.
        return format!("{known}+");
    }
    known.to_string()
}

/// A DEP-5 `License:` first line (`GPL-2+ or Artistic, and BSD-3-clause`, `GPL-2+ with
/// OpenSSL exception`) as an SPDX expression: `, and` is the weakest operator, then `or`, then
/// `and` (as in SPDX); `X with Y exception` becomes one `LicenseRef-X-with-Y-exception` (its
/// exception has no SPDX identifier in general). Returns its `, and` parts.
fn dep5_license(line: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    for part in line.split(',') {
        let part = part.trim();
        let part = part
            .strip_prefix("and ")
            .or_else(|| part.strip_prefix("AND "))
            .unwrap_or(part);
        // Names between the operators; a name of several words (`GPL-2+ with OpenSSL
        // exception`, `MIT/X Consortium License`) has no SPDX identifier.
        let mut out: Vec<String> = Vec::new();
        let mut name: Vec<&str> = Vec::new();
        let flush = |name: &mut Vec<&str>, out: &mut Vec<String>| -> Option<()> {
            match name.as_slice() {
                [] => return None,
                [one] => out.push(debian_to_spdx(one)),
                many => out.push(license_ref(&many.join("-"))),
            }
            name.clear();
            Some(())
        };
        for w in part.split_whitespace() {
            let op = match w.to_ascii_lowercase().as_str() {
                "and" => "AND",
                // Either or both: the recipient's choice.
                "or" | "and/or" => "OR",
                _ => {
                    name.push(w);
                    continue;
                }
            };
            flush(&mut name, &mut out)?;
            out.push(op.to_string());
        }
        if name.is_empty() && out.is_empty() {
            continue;
        }
        flush(&mut name, &mut out)?;
        if out.iter().any(|t| t == "OR") {
            parts.push(out.join(" "));
        } else {
            // Only ANDs: each licence on its own (then sorted and deduplicated with the rest).
            parts.extend(out.into_iter().filter(|t| t != "AND"));
        }
    }
    Some(parts)
}

/// `a AND b AND …` of sorted, deduplicated expressions, a compound one in parentheses.
fn combine(parts: Vec<String>) -> Option<String> {
    let set: BTreeSet<String> = parts.into_iter().collect();
    let n = set.len();
    let wrapped: Vec<String> = set
        .into_iter()
        .map(|p| {
            if n > 1 && p.contains(' ') {
                format!("({p})")
            } else {
                p
            }
        })
        .collect();
    (!wrapped.is_empty()).then(|| wrapped.join(" AND "))
}

/// A DEP-5 paragraph: each field's name and the first line of its value (what follows the
/// colon; the continuation lines are the licence text, not needed).
type Dep5Paragraph<'a> = Vec<(&'a str, &'a str)>;

/// The paragraphs of a copyright file, read leniently (real files repeat fields and put
/// comments anywhere, which the control-file parser refuses): blank lines separate
/// paragraphs, `Name: value` starts a field at column 0, a line starting with a space or tab
/// continues one, `#` lines are comments.
fn dep5_paragraphs(text: &str) -> Vec<Dep5Paragraph<'_>> {
    let mut out = Vec::new();
    let mut cur: Dep5Paragraph<'_> = Vec::new();
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if line.starts_with([' ', '\t', '#']) {
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            cur.push((k.trim(), v.trim()));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A paragraph's first `name` field (case-insensitive): the first line of its value.
fn field<'a>(p: &Dep5Paragraph<'a>, name: &str) -> Option<&'a str> {
    p.iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| *v)
}

/// The declared licence of a DEP-5 copyright file: the `License:` of its `Files:` paragraphs,
/// as SPDX, combined with AND; None when the file is not DEP-5 or names none.
pub fn dep5_expression(text: &str) -> Option<String> {
    let paragraphs = dep5_paragraphs(text);
    let header = paragraphs.first()?;
    let format = field(header, "Format")?.trim();
    let bare = format
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .trim_end_matches('/');
    // The drafts before 1.0 (`http://dep.debian.net/deps/dep5`, `…/dep5.mdwn?rev=N`) named
    // licences the same way.
    if bare != DEP5_FORMAT && !bare.contains("deps/dep5") {
        return None;
    }
    let mut parts = Vec::new();
    for p in paragraphs.iter().skip(1) {
        if field(p, "Files").is_none() {
            continue;
        }
        // A paragraph without a License, or one whose License has no short name (the text
        // only): nothing to name, left out (both are common in real files).
        let Some(line) = field(p, "License") else {
            continue;
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        parts.extend(dep5_license(line)?);
    }
    combine(parts)
}

/// A trove classifier's licence (`License :: OSI Approved :: MIT License`) as SPDX.
fn classifier_to_spdx(c: &str) -> Option<&'static str> {
    let name = c.strip_prefix("License :: OSI Approved :: ")?.trim();
    Some(match name {
        "MIT License" => "MIT",
        "BSD License" => return None,
        "Apache Software License" => "Apache-2.0",
        "ISC License (ISCL)" => "ISC",
        "Python Software Foundation License" => "PSF-2.0",
        "Mozilla Public License 2.0 (MPL 2.0)" => "MPL-2.0",
        "GNU General Public License v2 (GPLv2)" => "GPL-2.0-only",
        "GNU General Public License v2 or later (GPLv2+)" => "GPL-2.0-or-later",
        "GNU General Public License v3 (GPLv3)" => "GPL-3.0-only",
        "GNU General Public License v3 or later (GPLv3+)" => "GPL-3.0-or-later",
        "GNU Lesser General Public License v2 (LGPLv2)" => "LGPL-2.0-only",
        "GNU Lesser General Public License v2 or later (LGPLv2+)" => "LGPL-2.0-or-later",
        "GNU Lesser General Public License v3 (LGPLv3)" => "LGPL-3.0-only",
        "GNU Lesser General Public License v3 or later (LGPLv3+)" => "LGPL-3.0-or-later",
        "GNU Affero General Public License v3" => "AGPL-3.0-only",
        "GNU Affero General Public License v3 or later (AGPLv3+)" => "AGPL-3.0-or-later",
        "The Unlicense (Unlicense)" => "Unlicense",
        "zlib/libpng License" => "Zlib",
        "Boost Software License 1.0 (BSL-1.0)" => "BSL-1.0",
        "Eclipse Public License 2.0 (EPL-2.0)" => "EPL-2.0",
        "Universal Permissive License (UPL)" => "UPL-1.0",
        "MIT No Attribution License (MIT-0)" => "MIT-0",
        _ => return None,
    })
}

/// Whether `e` looks like an SPDX expression ocibuild can pass on: identifiers of
/// `[A-Za-z0-9.+-]`, `LicenseRef-…`, the operators and parentheses.
fn plausible_expression(e: &str) -> bool {
    !e.is_empty()
        && e.len() <= 1024
        && e.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | ' ' | '(' | ')' | ':')
        })
        && e.split_whitespace().all(|t| !t.starts_with("DocumentRef-"))
}

/// The declared licence of a wheel's METADATA: `License-Expression`, else its OSI licence
/// classifiers (AND, sorted), else a `License:` that is one known licence name; None otherwise.
pub fn metadata_expression(text: &str) -> Option<String> {
    // The headers end at the first empty line (the description follows).
    let headers = text.split("\n\n").next().unwrap_or("");
    let field = |l: &str, k: &str| -> Option<String> {
        let (key, v) = l.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(k)
            .then(|| v.trim().to_string())
    };
    if let Some(e) = headers.lines().find_map(|l| field(l, "License-Expression")) {
        return plausible_expression(&e).then_some(e);
    }
    let ids: Vec<String> = headers
        .lines()
        .filter_map(|l| field(l, "Classifier"))
        .filter_map(|c| classifier_to_spdx(&c).map(str::to_string))
        .collect();
    combine(ids).or_else(|| {
        // The free-text `License:`, only when it is itself an SPDX identifier (`MIT`,
        // `Apache-2.0`, `BSD-3-Clause`): anything else (`BSD`, `GPL`, a sentence, the whole
        // licence text) is not guessed at.
        let v = headers.lines().find_map(|l| field(l, "License"))?;
        let id = debian_to_spdx(&v);
        (!id.starts_with("LicenseRef-") && id.eq_ignore_ascii_case(&v)).then_some(id)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEP5: &str = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: example

Files: *
Copyright: 2020 Someone
License: GPL-2+

Files: lib/*
Copyright: 2021 Other
License: Expat

Files: debian/*
License: GPL-2+

License: GPL-2+
 This program is free software.

License: Expat
 Permission is hereby granted.
";

    #[test]
    fn license_dep5_files_paragraphs_and_anded() {
        assert_eq!(
            dep5_expression(DEP5).as_deref(),
            Some("GPL-2.0-or-later AND MIT")
        );
        let compound = "Format: http://www.debian.org/doc/packaging-manuals/copyright-format/1.0
\nFiles: *\nLicense: GPL-2+ or Artistic, and BSD-3-clause\n\nFiles: x\nLicense: public-domain\n";
        assert_eq!(
            dep5_expression(compound).as_deref(),
            Some(
                "BSD-3-Clause AND (GPL-2.0-or-later OR Artistic-1.0) AND LicenseRef-public-domain"
            )
        );
        let flat = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nFiles: *\nLicense: GPL-3+ and ISC\n\nFiles: a\nLicense: ISC\n\nFiles: b\nCopyright: none named\n\nFiles: c\nLicense: Apache-2.0 and/or Expat\n";
        assert_eq!(
            dep5_expression(flat).as_deref(),
            Some("(Apache-2.0 OR MIT) AND GPL-3.0-or-later AND ISC")
        );
        let with = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nFiles: *\nLicense: GPL-2+ with OpenSSL exception\n";
        assert_eq!(
            dep5_expression(with).as_deref(),
            Some("LicenseRef-GPL-2-or-later-with-OpenSSL-exception")
        );
    }

    #[test]
    fn license_not_dep5_declares_nothing() {
        assert_eq!(dep5_expression("This is free software.\n"), None);
        assert_eq!(
            dep5_expression("Format: https://example.com/other\n\nFiles: *\nLicense: MIT\n"),
            None
        );
        // A garbled line: nothing declared (the expression cannot be read).
        let bad = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nFiles: *\nLicense: GPL-2+ or\n";
        assert_eq!(dep5_expression(bad), None);
        let draft = "Format: http://dep.debian.net/deps/dep5\n\nFiles: *\nLicense: MIT\n";
        assert_eq!(dep5_expression(draft).as_deref(), Some("MIT"));
    }

    #[test]
    fn license_debian_names_map_to_spdx() {
        for (deb, spdx) in [
            ("GPL-2+", "GPL-2.0-or-later"),
            ("GPL-2", "GPL-2.0-only"),
            ("GPL-3.0+", "GPL-3.0-or-later"),
            ("LGPL-2.1+", "LGPL-2.1-or-later"),
            ("LGPL-2.1", "LGPL-2.1-only"),
            ("Expat", "MIT"),
            ("BSD-3-clause", "BSD-3-Clause"),
            ("Apache-2.0", "Apache-2.0"),
            ("PSF-2", "PSF-2.0"),
            ("Zlib", "Zlib"),
            ("public-domain", "LicenseRef-public-domain"),
            ("permissive/other", "LicenseRef-permissive-other"),
            ("Apache-2.0+", "Apache-2.0+"),
            ("GFDL-NIV-1.3+", "GFDL-1.3-no-invariants-or-later"),
            ("BSD-4-clause-UC", "BSD-4-Clause-UC"),
        ] {
            assert_eq!(debian_to_spdx(deb), spdx, "{deb}");
        }
        assert_eq!(
            refs_of("(MIT OR LicenseRef-a) AND LicenseRef-b"),
            ["LicenseRef-a", "LicenseRef-b"]
        );
    }

    #[test]
    fn license_refs_keep_the_names_as_written() {
        let text = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/

Files: *
License: GPL-2+ with OpenSSL exception

Files: doc/*
License: Custom Weird-Licence (v2)
";
        let expr = dep5_expression(text).unwrap();
        let names = dep5_names(text);
        assert_eq!(names.len(), 2, "{expr} {names:?}");
        let r = &names["LicenseRef-GPL-2-or-later-with-OpenSSL-exception"];
        assert_eq!(r, "GPL-2+ with OpenSSL exception");
        let all: BTreeMap<String, BTreeSet<String>> = names
            .iter()
            .map(|(k, v)| (k.clone(), BTreeSet::from([v.clone()])))
            .collect();
        let infos = spdx_extracted_infos(std::iter::once(expr.as_str()), &all).unwrap();
        let weird = infos
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == "Custom Weird-Licence (v2)")
            .unwrap_or_else(|| panic!("{infos}"));
        assert!(weird["extractedText"]
            .as_str()
            .unwrap()
            .contains("`Custom Weird-Licence (v2)`"));
    }

    #[test]
    fn license_wheel_metadata() {
        let pep639 = "Metadata-Version: 2.4\nName: x\nLicense-Expression: MIT OR Apache-2.0\nClassifier: License :: OSI Approved :: BSD License\n\nLicense-Expression: GPL\n";
        assert_eq!(
            metadata_expression(pep639).as_deref(),
            Some("MIT OR Apache-2.0")
        );
        let classifiers = "Metadata-Version: 2.1\nName: x\nLicense: some long text\nClassifier: License :: OSI Approved :: MIT License\nClassifier: Programming Language :: Python\nClassifier: License :: OSI Approved :: Apache Software License\n";
        assert_eq!(
            metadata_expression(classifiers).as_deref(),
            Some("Apache-2.0 AND MIT")
        );
        assert_eq!(
            metadata_expression("Metadata-Version: 2.1\nLicense: BSD\n"),
            None
        );
        assert_eq!(
            metadata_expression("License-Expression: MIT; rm -rf\n"),
            None
        );
        // charset-normalizer 3.4's METADATA: `License: MIT`, no classifier.
        assert_eq!(
            metadata_expression("Name: x\nLicense: MIT\nLicense-File: LICENSE\n").as_deref(),
            Some("MIT")
        );
        assert_eq!(
            metadata_expression("Name: x\nLicense: Apache-2.0\n").as_deref(),
            Some("Apache-2.0")
        );
        for text in [
            "License: GPL\n",
            "License: MIT License\n",
            "License: UNKNOWN\n",
        ] {
            assert_eq!(metadata_expression(text), None, "{text}");
        }
    }
}
