//! The `.dist-info` files a wheel install reads and writes: RECORD (CSV, `sha256=` hashes),
//! WHEEL (`Key: Value`), `entry_points.txt`, and the launchers and shebangs `installer` writes.

use std::collections::BTreeMap;

use base64::Engine as _;

use super::wheel_types::WheelError;
use crate::digest::Digest;

/// The RECORD hash field of a digest: `sha256=<urlsafe base64, no padding>`.
pub fn record_hash(d: &Digest) -> String {
    format!(
        "sha256={}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(d.as_bytes())
    )
}

/// One RECORD row: hash (decoded sha256) and size.
pub struct RecordRow {
    pub sha256: Option<Digest>,
    pub size: Option<u64>,
}

/// Splits one CSV line (RECORD is written by Python's csv module: `"` quoting, `""` escapes).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let cur = out.last_mut();
        match (c, quoted, cur) {
            ('"', true, Some(cur)) => {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    cur.push('"');
                } else {
                    quoted = false;
                }
            }
            ('"', false, Some(cur)) if cur.is_empty() => quoted = true,
            (',', false, _) => out.push(String::new()),
            (c, _, Some(cur)) => cur.push(c),
            (_, _, None) => {}
        }
    }
    out
}

/// A CSV field, quoted when needed.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn parse_record(text: &str, wheel: &str) -> Result<BTreeMap<String, RecordRow>, WheelError> {
    let bad = |reason: String| WheelError::Format {
        wheel: wheel.to_string(),
        reason,
    };
    let mut rows = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let f = csv_fields(line);
        if f.len() != 3 {
            return Err(bad(format!("RECORD line {}: expected 3 fields", n + 1)));
        }
        let sha256 = match f[1].as_str() {
            "" => None,
            h => {
                let b64 = h.strip_prefix("sha256=").ok_or_else(|| {
                    bad(format!("RECORD line {}: `{h}` is not a sha256 hash", n + 1))
                })?;
                let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(b64.trim_end_matches('='))
                    .ok()
                    .and_then(|v| <[u8; 32]>::try_from(v).ok())
                    .ok_or_else(|| bad(format!("RECORD line {}: invalid hash `{h}`", n + 1)))?;
                Some(Digest::from_bytes(raw))
            }
        };
        let size = match f[2].as_str() {
            "" => None,
            s => Some(
                s.parse()
                    .map_err(|_| bad(format!("RECORD line {}: invalid size `{s}`", n + 1)))?,
            ),
        };
        rows.insert(f[0].clone(), RecordRow { sha256, size });
    }
    Ok(rows)
}

/// The most bytes of a wheel's METADATA read for its licence.
const MAX_METADATA: u64 = 1 << 20;

/// The text of the wheel's `NAME-VER.dist-info/METADATA` (the one `.dist-info` directory at its
/// root), if it has one; for the SBOMs' declared licences ([`crate::audit::license`]).
pub fn read_metadata(path: &std::path::Path, wheel: &str) -> Result<Option<String>, WheelError> {
    use std::io::Read as _;
    let zerr = |source| WheelError::Zip {
        wheel: wheel.to_string(),
        source,
    };
    let file = fs_err::File::open(path).map_err(|source| WheelError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut ar = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(zerr)?;
    let mut names: Vec<String> = ar
        .file_names()
        .filter_map(|n| n.ok().map(std::borrow::Cow::into_owned))
        .filter(|n| {
            n.split_once('/')
                .is_some_and(|(d, rest)| d.ends_with(".dist-info") && rest == "METADATA")
        })
        .collect();
    names.sort();
    let [name] = names.as_slice() else {
        return Ok(None);
    };
    let member = ar.by_name(name).map_err(zerr)?;
    let mut out = Vec::new();
    member
        .take(MAX_METADATA)
        .read_to_end(&mut out)
        .map_err(|e| zerr(e.into()))?;
    Ok(Some(String::from_utf8_lossy(&out).into_owned()))
}

/// `Key: Value` lines of the WHEEL file.
pub fn wheel_field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(key).then(|| v.trim())
    })
}

/// The shebang line `installer` writes for `executable` (the `/bin/sh` trick when it has a
/// space or the line would be over 127 bytes).
pub fn shebang(executable: &str) -> String {
    if !executable.contains(' ') && executable.len() + 3 <= 127 {
        return format!("#!{executable}");
    }
    let safe = !executable.is_empty()
        && executable
            .chars()
            .all(|c| c.is_alphanumeric() || "_@%+=:,./-".contains(c));
    let quoted = if safe {
        executable.to_string()
    } else {
        format!("'{}'", executable.replace('\'', "'\"'\"'"))
    };
    format!("#!/bin/sh\n'''exec' {quoted} \"$0\" \"$@\"\n' '''")
}

/// The launcher `installer` writes for `module:attr`.
pub fn launcher(executable: &str, module: &str, attr: &str) -> String {
    let import = attr.split('.').next().unwrap_or(attr);
    format!(
        "{}\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom {module} import {import}\nif __name__ == \"__main__\":\n    sys.argv[0] = re.sub(r\"(-script\\.pyw|\\.exe)?$\", \"\", sys.argv[0])\n    sys.exit({attr}())\n",
        shebang(executable)
    )
}

/// `console_scripts` and `gui_scripts` of entry_points.txt: (name, module, attr).
pub fn entry_points(text: &str, wheel: &str) -> Result<Vec<(String, String, String)>, WheelError> {
    let mut out = Vec::new();
    let mut section = String::new();
    for (n, raw) in text.lines().enumerate() {
        let bad = |reason: String| WheelError::EntryPoint {
            wheel: wheel.to_string(),
            line: n + 1,
            reason,
        };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s.trim().to_string();
            continue;
        }
        if section != "console_scripts" && section != "gui_scripts" {
            continue;
        }
        let (name, value) = line
            .split_once('=')
            .ok_or_else(|| bad("expected `name = module:function`".into()))?;
        let name = name.trim();
        if name.is_empty() || name.contains(['/', '\\']) || name == "." || name == ".." {
            return Err(bad(format!("invalid script name `{name}`")));
        }
        let value = value.split('[').next().unwrap_or("").trim();
        let (module, attr) = value
            .split_once(':')
            .map(|(m, a)| (m.trim(), a.trim()))
            .ok_or_else(|| bad(format!("`{value}` has no `:function`")))?;
        let ident = |s: &str| {
            !s.is_empty()
                && s.split('.').all(|p| {
                    !p.is_empty()
                        && !p.starts_with(|c: char| c.is_ascii_digit())
                        && p.chars().all(|c| c.is_alphanumeric() || c == '_')
                })
        };
        if !ident(module) || !ident(attr) {
            return Err(bad(format!("`{value}` is not `module:function`")));
        }
        out.push((name.to_string(), module.to_string(), attr.to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_parsing_and_writing() {
        let d = Digest::of(b"x");
        let h = record_hash(&d);
        assert!(h.starts_with("sha256=") && !h[7..].contains('='));
        let text = format!("a.py,{h},1\n\"we,ird\"\"s.py\",{h},1\r\npkg.dist-info/RECORD,,\n");
        let rows = parse_record(&text, "w").unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows["we,ird\"s.py"].sha256, Some(d));
        assert_eq!(rows["a.py"].size, Some(1));
        assert_eq!(rows["pkg.dist-info/RECORD"].sha256, None);
        assert_eq!(csv_field("we,ird\"s.py"), "\"we,ird\"\"s.py\"");
        assert!(parse_record("a.py,md5=abc,1\n", "w").is_err());
        assert!(parse_record("a.py,sha256=abc\n", "w").is_err());
    }

    #[test]
    fn shebangs_and_launchers() {
        assert_eq!(shebang("/usr/bin/python3"), "#!/usr/bin/python3");
        assert_eq!(
            shebang("/opt/my python/bin/python"),
            "#!/bin/sh\n'''exec' '/opt/my python/bin/python' \"$0\" \"$@\"\n' '''"
        );
        assert_eq!(
            launcher("/usr/bin/python3.11", "click.cli", "main"),
            "#!/usr/bin/python3.11\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom click.cli import main\nif __name__ == \"__main__\":\n    sys.argv[0] = re.sub(r\"(-script\\.pyw|\\.exe)?$\", \"\", sys.argv[0])\n    sys.exit(main())\n"
        );
        assert!(
            launcher("/p", "m", "a.b").contains("from m import a\n")
                && launcher("/p", "m", "a.b").contains("sys.exit(a.b())")
        );
    }

    #[test]
    fn entry_point_parsing() {
        let eps = entry_points(
            "# c\n[console_scripts]\ndemo = demo.cli:main [extra]\n\n[gui_scripts]\ndemo-gui=demo.gui:App.run\n[other]\nx = y:z\n",
            "w",
        )
        .unwrap();
        assert_eq!(
            eps,
            [
                (
                    "demo".to_string(),
                    "demo.cli".to_string(),
                    "main".to_string()
                ),
                ("demo-gui".into(), "demo.gui".into(), "App.run".into())
            ]
        );
        for bad in [
            "[console_scripts]\nx = nocolon\n",
            "[console_scripts]\n../x = a:b\n",
            "[console_scripts]\nx = a:\n",
        ] {
            assert!(entry_points(bad, "w").is_err(), "{bad}");
        }
    }

    #[test]
    fn metadata_read_from_the_one_dist_info() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, members: &[(&str, &str)]| {
            let path = dir.path().join(name);
            let mut zw = zip::ZipWriter::new(fs_err::File::create(&path).unwrap());
            for (n, c) in members {
                zw.start_file(*n, zip::write::SimpleFileOptions::default())
                    .unwrap();
                zw.write_all(c.as_bytes()).unwrap();
            }
            zw.finish().unwrap();
            path
        };
        let p = write(
            "a.whl",
            &[
                ("a/__init__.py", ""),
                (
                    "a-1.0.dist-info/METADATA",
                    "Name: a\nLicense-Expression: MIT\n",
                ),
                ("a/x.dist-info/METADATA", "not the root one"),
            ],
        );
        assert_eq!(
            read_metadata(&p, "a.whl").unwrap().as_deref(),
            Some("Name: a\nLicense-Expression: MIT\n")
        );
        let none = write("b.whl", &[("b/__init__.py", "")]);
        assert_eq!(read_metadata(&none, "b.whl").unwrap(), None);
        let junk = dir.path().join("c.whl");
        fs_err::write(&junk, b"not a zip").unwrap();
        assert!(read_metadata(&junk, "c.whl").is_err());
    }
}
