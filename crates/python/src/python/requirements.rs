//! Hashed, pinned `requirements.txt` (as `pip-compile --generate-hashes` or `uv pip compile
//! --generate-hashes` write it): `name[extras]==version ; marker --hash=sha256:HEX ...`, with
//! `\` continuations and `#` comments. Only parsing: finding the files on an index is the
//! caller's job. Global options (`--index-url`, `--extra-index-url`, `--find-links`,
//! `--trusted-host`, `--no-index`, `--only-binary`, `--prefer-binary`, `--require-hashes`) are
//! ignored; includes (`-r`, `-c`), editables (`-e`) and unpinned or unhashed requirements are
//! errors naming the line.

use super::markers::{Marker, MarkerEnv, MarkerError};
use super::tags::normalize_name;
use crate::digest::Digest;

#[derive(Debug, thiserror::Error)]
pub enum RequirementsError {
    #[error("requirements line {line}: {reason}")]
    Line { line: usize, reason: String },
    #[error("requirements line {line}: invalid marker")]
    Marker {
        line: usize,
        #[source]
        source: MarkerError,
    },
}

/// One pinned requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinnedRequirement {
    /// The name as written.
    pub name: String,
    pub version: String,
    pub extras: Vec<String>,
    pub marker: Option<Marker>,
    /// Allowed sha256 digests of the distribution files (any of them may be installed).
    pub hashes: Vec<Digest>,
    /// The (first physical) line number it was on.
    pub line: usize,
}

impl PinnedRequirement {
    /// PEP 503-normalized name.
    pub fn normalized_name(&self) -> String {
        normalize_name(&self.name)
    }

    /// Whether its marker holds (no marker: always).
    pub fn applies(&self, env: &MarkerEnv) -> bool {
        self.marker.as_ref().is_none_or(|m| m.evaluate(env))
    }
}

/// Options that take a value and are ignored.
const IGNORED_WITH_VALUE: [&str; 7] = [
    "--index-url",
    "-i",
    "--extra-index-url",
    "--find-links",
    "-f",
    "--trusted-host",
    "--only-binary",
];
const IGNORED_FLAGS: [&str; 3] = ["--no-index", "--prefer-binary", "--require-hashes"];

/// Logical lines: continuations joined, comments removed; with their first line number.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut start = 0;
    for (i, raw) in text.lines().enumerate() {
        if cur.is_empty() {
            start = i + 1;
        }
        let line = raw.trim_end_matches('\r');
        // A comment: `#` at the start or after whitespace, to the end of the line.
        let line = match line
            .char_indices()
            .find(|&(j, c)| c == '#' && (j == 0 || line[..j].ends_with(char::is_whitespace)))
        {
            Some((j, _)) => &line[..j],
            None => line,
        };
        if let Some(l) = line.trim_end().strip_suffix('\\') {
            cur.push_str(l);
            cur.push(' ');
        } else {
            cur.push_str(line);
            if !cur.trim().is_empty() {
                out.push((start, cur.trim().to_string()));
            }
            cur.clear();
        }
    }
    if !cur.trim().is_empty() {
        out.push((start, cur.trim().to_string()));
    }
    out
}

/// Parses a hashed requirements file.
pub fn parse(text: &str) -> Result<Vec<PinnedRequirement>, RequirementsError> {
    let mut out = Vec::new();
    for (line, l) in logical_lines(text) {
        let bad = |reason: String| RequirementsError::Line { line, reason };
        if l.starts_with('-') {
            let opt = l.split([' ', '=', '\t']).next().unwrap_or("");
            if IGNORED_WITH_VALUE.contains(&opt) || IGNORED_FLAGS.contains(&opt) {
                continue;
            }
            return Err(bad(format!("option `{opt}` is not supported here")));
        }
        // The requirement ends where the first option (` --`) starts.
        let (spec, opts) = match l.find(" --").or_else(|| l.find("\t--")) {
            Some(i) => (l[..i].trim(), &l[i..]),
            None => (l.as_str(), ""),
        };
        let mut hashes = Vec::new();
        let mut toks = opts.split_whitespace();
        while let Some(t) = toks.next() {
            let value = if let Some(v) = t.strip_prefix("--hash=") {
                v.to_string()
            } else if t == "--hash" {
                toks.next()
                    .ok_or_else(|| bad("`--hash` without a value".into()))?
                    .to_string()
            } else {
                return Err(bad(format!(
                    "option `{t}` is not supported on a requirement"
                )));
            };
            let (algo, hex) = value
                .split_once(':')
                .ok_or_else(|| bad(format!("hash `{value}` is not ALGORITHM:HEX")))?;
            if algo != "sha256" {
                continue;
            }
            let d: Digest = format!("sha256:{}", hex.to_ascii_lowercase())
                .parse()
                .map_err(|_| bad(format!("invalid sha256 `{hex}`")))?;
            hashes.push(d);
        }
        let (req, marker) = match spec.split_once(';') {
            Some((r, m)) => (r.trim(), Some(m.trim())),
            None => (spec, None),
        };
        let marker = marker
            .map(Marker::parse)
            .transpose()
            .map_err(|source| RequirementsError::Marker { line, source })?;
        let (name_part, version) = req
            .split_once("===")
            .or_else(|| req.split_once("=="))
            .ok_or_else(|| bad(format!("`{req}` is not pinned with `==`")))?;
        let version = version.trim();
        if version.is_empty() || version.contains(['*', ',', ' ', '<', '>', '!', '~']) {
            return Err(bad(format!("`{req}` is not pinned to one version")));
        }
        let name_part = name_part.trim();
        let (name, extras) = match name_part.split_once('[') {
            Some((n, e)) => {
                let e = e
                    .strip_suffix(']')
                    .ok_or_else(|| bad(format!("unclosed extras in `{name_part}`")))?;
                (
                    n.trim(),
                    e.split(',')
                        .map(|x| x.trim().to_string())
                        .filter(|x| !x.is_empty())
                        .collect(),
                )
            }
            None => (name_part, Vec::new()),
        };
        let valid = !name.is_empty()
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !valid {
            return Err(bad(format!(
                "invalid project name `{name}` (URLs and paths are not supported)"
            )));
        }
        if hashes.is_empty() {
            return Err(bad(format!(
                "{name}=={version} has no --hash=sha256:… (hashes are required)"
            )));
        }
        out.push(PinnedRequirement {
            name: name.to_string(),
            version: version.to_string(),
            extras,
            marker,
            hashes,
            line,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    #[test]
    fn parses_pip_compile_output() {
        let text = format!(
            "# This file is autogenerated\n--index-url https://pypi.org/simple\n\nclick==8.1.7 \\\n    --hash=sha256:{A} \\\n    --hash=sha256:{B}\n    # via app\nRequests[Socks]==2.32.3 ; python_version >= \"3.8\" --hash=sha256:{A}  # pinned\ncolorama==0.4.6 ; sys_platform == 'win32' \\\n    --hash sha256:{B} --hash=sha512:00\n"
        );
        let reqs = parse(&text).unwrap();
        assert_eq!(reqs.len(), 3);
        assert_eq!(
            (
                reqs[0].name.as_str(),
                reqs[0].version.as_str(),
                reqs[0].line
            ),
            ("click", "8.1.7", 4)
        );
        assert_eq!(reqs[0].hashes.len(), 2);
        assert_eq!(reqs[1].normalized_name(), "requests");
        assert_eq!(reqs[1].extras, ["Socks"]);
        assert!(reqs[1].marker.is_some());
        assert_eq!(reqs[2].hashes, [format!("sha256:{B}").parse().unwrap()]);
        let version = crate::python::interpreter::PyVersion {
            major: 3,
            minor: 11,
        };
        let env = MarkerEnv::for_interpreter(&crate::python::Interpreter {
            version,
            executable: "/usr/bin/python3".into(),
            machine: "x86_64".into(),
            glibc: Some((2, 36)),
            scheme: crate::python::Scheme::debian_local(version),
            full_version: None,
        });
        assert!(reqs[1].applies(&env) && !reqs[2].applies(&env) && reqs[0].applies(&env));
    }

    #[test]
    fn refuses_unpinned_unhashed_and_includes() {
        for (text, want) in [
            ("click>=8\n".to_string(), "not pinned"),
            ("click==8.*\n".into(), "not pinned to one version"),
            ("click==8.1.7\n".into(), "has no --hash"),
            ("-r other.txt\n".into(), "`-r` is not supported"),
            ("-e .\n".into(), "`-e` is not supported"),
            (
                format!("\n\nclick==8 --hash=sha256:{A} --no-binary\n"),
                "line 3: option `--no-binary`",
            ),
            (
                format!("git+https://x/y.git==1 --hash=sha256:{A}\n"),
                "invalid project name",
            ),
            ("click==8 --hash=sha256:zz\n".into(), "invalid sha256"),
        ] {
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        assert!(matches!(
            parse(&format!(
                "a==1 ; python_version >>> '3' --hash=sha256:{A}\n"
            )),
            Err(RequirementsError::Marker { line: 1, .. })
        ));
    }
}
