//! How one wheel's members map to installed files: the `.dist-info` and WHEEL checks, RECORD,
//! the scheme's directories, rewritten scripts, launchers, INSTALLER and the new RECORD
//! ([`plan_wheel`]). [`super::wheel`] streams what it plans into a layer.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::{self, Read};

use super::dist_info::{csv_field, entry_points, launcher, parse_record, shebang, wheel_field};
use super::interpreter::Interpreter;
use super::tags::escape_name;
use super::wheel::{record_hash, WheelError, WheelInput};
use crate::digest::{Digest, HashingReader};

/// Largest script read into memory (scripts are rewritten, so not streamed).
const MAX_SCRIPT: u64 = 64 << 20;
/// Largest metadata file (WHEEL, RECORD, entry_points.txt) read into memory.
const MAX_METADATA: u64 = 64 << 20;

/// Where an installed file's bytes come from.
#[derive(Clone, Debug)]
pub(super) enum Source {
    /// Member `index` of wheel `wheel`, checked against RECORD while streaming.
    Zip {
        wheel: usize,
        index: usize,
        member: String,
        sha256: Digest,
        size: u64,
        /// Stored with deflate: handed to the layer writer as its raw deflate stream.
        deflated: bool,
    },
    /// Generated or rewritten content (launchers, scripts, INSTALLER, RECORD).
    Bytes(Vec<u8>),
}

#[derive(Clone, Debug)]
pub(super) struct Item {
    pub(super) source: Source,
    pub(super) mode: u32,
    pub(super) size: u64,
    /// The installed content's sha256 (RECORD's for zip members, computed for the rest).
    pub(super) sha256: Digest,
    pub(super) wheel: usize,
}

impl Item {
    /// Generated or rewritten content (a script, a launcher, INSTALLER, RECORD) of wheel `wheel`.
    pub(super) fn generated(content: Vec<u8>, mode: u32, wheel: usize) -> Item {
        Item {
            size: content.len() as u64,
            sha256: Digest::of(&content),
            source: Source::Bytes(content),
            mode,
            wheel,
        }
    }
}

/// A member path, checked: UTF-8, relative, no `..`, `.` or empty components, no backslash.
pub(super) fn check_member(raw: &[u8], wheel: &str) -> Result<String, WheelError> {
    let bad = |member: String, reason| WheelError::BadPath {
        wheel: wheel.to_string(),
        member,
        reason,
    };
    let name = String::from_utf8(raw.to_vec())
        .map_err(|_| bad(String::from_utf8_lossy(raw).into_owned(), "not UTF-8"))?;
    if name.starts_with('/') {
        return Err(bad(name, "absolute path"));
    }
    if name.contains('\\') {
        return Err(bad(name, "backslash in the path"));
    }
    let trimmed = name.strip_suffix('/').unwrap_or(&name);
    for c in trimmed.split('/') {
        match c {
            ".." => return Err(bad(name, "`..` path component")),
            "" | "." => return Err(bad(name, "empty or `.` path component")),
            _ => {}
        }
    }
    Ok(name)
}

/// Every member's local header names what the central directory names: a zip whose two
/// disagree shows one file to a reader of the directory (this one, pip) and another to a
/// reader of the stream (`unzip` in some modes, scanners), so it is refused.
fn check_local_names(
    path: &std::path::Path,
    members: &[(u64, Vec<u8>)],
    wheel: &str,
) -> Result<(), WheelError> {
    use std::io::{Seek, SeekFrom};
    let io_err = |source| WheelError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut f = io::BufReader::with_capacity(512, fs_err::File::open(path).map_err(io_err)?);
    let mut head = [0u8; 30];
    let mut name = Vec::new();
    for (offset, central) in members {
        f.seek(SeekFrom::Start(*offset)).map_err(io_err)?;
        f.read_exact(&mut head).map_err(io_err)?;
        let len = u16::from_le_bytes([head[26], head[27]]) as usize;
        name.resize(len, 0);
        f.read_exact(&mut name).map_err(io_err)?;
        if head[..4] != [0x50, 0x4b, 0x03, 0x04] || name != *central {
            return Err(WheelError::BadPath {
                wheel: wheel.to_string(),
                member: String::from_utf8_lossy(central).into_owned(),
                reason: "its local header names another file than the zip's directory",
            });
        }
    }
    Ok(())
}

/// Reads a small member by name, if present.
fn read_member<R: Read + io::Seek>(
    ar: &mut zip::ZipArchive<R>,
    name: &str,
    wheel: &str,
) -> Result<Option<Vec<u8>>, WheelError> {
    let zerr = |source| WheelError::Zip {
        wheel: wheel.to_string(),
        source,
    };
    let f = match ar.by_name(name) {
        Ok(f) => f,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(zerr(e)),
    };
    let mut out = Vec::new();
    f.take(MAX_METADATA)
        .read_to_end(&mut out)
        .map_err(|e| zerr(e.into()))?;
    Ok(Some(out))
}

/// `path` relative to the directory `from` (both absolute), with `..` as needed.
fn relative(from: &str, path: &str) -> String {
    let f: Vec<&str> = from.split('/').filter(|c| !c.is_empty()).collect();
    let p: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let common = f.iter().zip(&p).take_while(|(a, b)| a == b).count();
    let mut out: Vec<&str> = vec![".."; f.len() - common];
    out.extend(&p[common..]);
    out.join("/")
}

/// `dir/rest` as a layer path (no leading `/`).
fn join(dir: &str, rest: &str) -> String {
    let d = dir.trim_matches('/');
    if d.is_empty() {
        rest.to_string()
    } else {
        format!("{d}/{rest}")
    }
}

/// Maps one wheel's members to installed paths (layer paths) and their content.
pub(super) fn plan_wheel<R: Read + io::Seek>(
    ar: &mut zip::ZipArchive<R>,
    w: &WheelInput,
    wi: usize,
    interp: &Interpreter,
    exclude: &BTreeSet<String>,
) -> Result<BTreeMap<String, Item>, WheelError> {
    let wheel = w.file.filename.as_str();
    let fmt_err = |reason: String| WheelError::Format {
        wheel: wheel.to_string(),
        reason,
    };
    let zerr = |source| WheelError::Zip {
        wheel: wheel.to_string(),
        source,
    };
    // Members: (index, path, size, executable, stored deflated).
    let mut members = Vec::new();
    let mut local_names = Vec::new();
    for i in 0..ar.len() {
        let f = ar.by_index_raw(i).map_err(zerr)?;
        let name = check_member(f.name_raw(), wheel)?;
        local_names.push((f.header_start(), f.name_raw().to_vec()));
        if f.unix_mode().is_some_and(|m| m & 0o170000 == 0o120000) {
            return Err(WheelError::BadPath {
                wheel: wheel.to_string(),
                member: name,
                reason: "a symlink (a wheel holds files only; installers would write its target as a file)",
            });
        }
        if name.ends_with('/') {
            continue;
        }
        let exec = f.unix_mode().is_some_and(|m| m & 0o111 != 0);
        let deflated = f.compression() == zip::CompressionMethod::Deflated;
        members.push((i, name, f.size(), exec, deflated));
    }
    check_local_names(&w.path, &local_names, wheel)?;
    // The .dist-info directory.
    let mut dist_infos: Vec<&str> = members
        .iter()
        .filter_map(|(_, n, _, _, _)| n.split_once('/').map(|(d, _)| d))
        .filter(|d| d.ends_with(".dist-info"))
        .collect();
    dist_infos.dedup();
    dist_infos.sort_unstable();
    dist_infos.dedup();
    let [dist_info] = dist_infos.as_slice() else {
        return Err(fmt_err(format!(
            "expected one .dist-info directory, found {}",
            dist_infos.len()
        )));
    };
    let dist_info = dist_info.to_string();
    let prefix = dist_info.trim_end_matches(".dist-info").to_string();
    let matches_name = prefix
        .split_once('-')
        .is_some_and(|(n, _)| escape_name(n) == escape_name(&w.file.name));
    if !matches_name {
        return Err(fmt_err(format!(
            "its `{dist_info}` does not belong to `{}`",
            w.file.name
        )));
    }
    let data_dir = format!("{prefix}.data/");
    let text = |b: Vec<u8>, what: &str| {
        String::from_utf8(b).map_err(|_| fmt_err(format!("{dist_info}/{what} is not UTF-8")))
    };
    // METADATA (the core metadata) names the distribution and version the SBOM reports: they
    // must be the file name's.
    if let Some(meta) = read_member(ar, &format!("{dist_info}/METADATA"), wheel)? {
        let meta = String::from_utf8_lossy(&meta);
        let headers = meta.split("\n\n").next().unwrap_or("");
        if let Some(name) = wheel_field(headers, "Name") {
            if escape_name(name) != escape_name(&w.file.name) {
                return Err(fmt_err(format!(
                    "its METADATA names `{name}`, the file name `{}`",
                    w.file.name
                )));
            }
        }
        if let Some(v) = wheel_field(headers, "Version") {
            let same = match (
                super::markers::Version::parse(v),
                super::markers::Version::parse(&w.file.version),
            ) {
                (Ok(a), Ok(b)) => a == b,
                _ => v == w.file.version,
            };
            if !same {
                return Err(fmt_err(format!(
                    "its METADATA says version {v}, the file name {}",
                    w.file.version
                )));
            }
        }
    }
    let wheel_meta = read_member(ar, &format!("{dist_info}/WHEEL"), wheel)?
        .ok_or_else(|| fmt_err(format!("no {dist_info}/WHEEL")))?;
    let wheel_meta = text(wheel_meta, "WHEEL")?;
    let version = wheel_field(&wheel_meta, "Wheel-Version")
        .ok_or_else(|| fmt_err("WHEEL has no Wheel-Version".into()))?;
    if version.split('.').next() != Some("1") {
        return Err(fmt_err(format!(
            "Wheel-Version {version} is not supported (only 1.x)"
        )));
    }
    let purelib = match wheel_field(&wheel_meta, "Root-Is-Purelib").map(str::to_ascii_lowercase) {
        Some(v) if v == "true" => true,
        Some(v) if v == "false" => false,
        other => {
            return Err(fmt_err(format!(
                "WHEEL: Root-Is-Purelib is {:?}, expected true or false",
                other.unwrap_or_default()
            )))
        }
    };
    let record_name = format!("{dist_info}/RECORD");
    let record = read_member(ar, &record_name, wheel)?
        .ok_or_else(|| fmt_err(format!("no {record_name}")))?;
    let record = parse_record(&text(record, "RECORD")?, wheel)?;
    let skipped = [
        record_name.clone(),
        format!("{dist_info}/RECORD.jws"),
        format!("{dist_info}/RECORD.p7s"),
        format!("{dist_info}/INSTALLER"),
    ];
    // A set of the member names: one lookup per RECORD row, not a scan of the members (a
    // wheel of 200,000 members took 135 s that way).
    let member_names: HashSet<&str> = members.iter().map(|(_, n, _, _, _)| n.as_str()).collect();
    for name in record.keys() {
        if *name != record_name && !member_names.contains(name.as_str()) {
            return Err(WheelError::MissingMember {
                wheel: wheel.to_string(),
                member: name.clone(),
            });
        }
    }
    let s = &interp.scheme;
    let site = if purelib { &s.purelib } else { &s.platlib };
    let mut out: BTreeMap<String, Item> = BTreeMap::new();
    // RECORD rows of the installed files: (path relative to site, hash, size).
    let mut rows: Vec<(String, String, String)> = Vec::new();
    let insert = |out: &mut BTreeMap<String, Item>,
                  rows: &mut Vec<(String, String, String)>,
                  path: String,
                  item: Item|
     -> Result<(), WheelError> {
        if exclude.contains(&path) {
            // Another wheel's file is installed there: this wheel neither writes nor lists it.
            return Ok(());
        }
        rows.push((
            relative(site, &format!("/{path}")),
            record_hash(&item.sha256),
            item.size.to_string(),
        ));
        if out.insert(path.clone(), item).is_some() {
            return Err(WheelError::Conflict {
                path,
                first: wheel.to_string(),
                second: wheel.to_string(),
            });
        }
        Ok(())
    };
    for (index, name, size, exec, deflated) in &members {
        let signatures = [&skipped[1], &skipped[2]];
        if signatures.contains(&name) || *name == skipped[0] {
            continue;
        }
        let row = record.get(name).ok_or_else(|| WheelError::NotInRecord {
            wheel: wheel.to_string(),
            member: name.clone(),
        })?;
        let sha256 = row
            .sha256
            .ok_or_else(|| fmt_err(format!("RECORD has no hash for `{name}`")))?;
        if row.size != Some(*size) {
            return Err(WheelError::RecordMismatch {
                wheel: wheel.to_string(),
                member: name.clone(),
                expected: format!(
                    "size {}",
                    row.size.map_or("(none)".to_string(), |s| s.to_string())
                ),
                found: format!("size {size}"),
            });
        }
        if *name == skipped[3] {
            continue;
        }
        let (dir, rest, script) = match name.strip_prefix(&data_dir) {
            Some(r) => {
                let (key, rest) = r.split_once('/').ok_or_else(|| WheelError::BadPath {
                    wheel: wheel.to_string(),
                    member: name.clone(),
                    reason: "a file directly in the .data directory",
                })?;
                match key {
                    "purelib" => (s.purelib.clone(), rest.to_string(), false),
                    "platlib" => (s.platlib.clone(), rest.to_string(), false),
                    "scripts" => (s.scripts.clone(), rest.to_string(), true),
                    "headers" => (s.headers.clone(), format!("{}/{rest}", w.file.name), false),
                    "data" => (s.data.clone(), rest.to_string(), false),
                    _ => {
                        return Err(WheelError::BadPath {
                            wheel: wheel.to_string(),
                            member: name.clone(),
                            reason: "unknown .data directory (not purelib, platlib, scripts, headers or data)",
                        })
                    }
                }
            }
            None => (site.clone(), name.clone(), false),
        };
        let path = join(&dir, &rest);
        if script {
            // Scripts are read (and checked) now: their shebang may change.
            let f = ar.by_index(*index).map_err(zerr)?;
            let mut content = Vec::new();
            let mut h = HashingReader::new(f.take(MAX_SCRIPT + 1));
            h.read_to_end(&mut content).map_err(|e| zerr(e.into()))?;
            let (_, found, n) = h.finish();
            if found != sha256 || n != *size {
                return Err(WheelError::RecordMismatch {
                    wheel: wheel.to_string(),
                    member: name.clone(),
                    expected: format!("{} ({size} bytes)", record_hash(&sha256)),
                    found: format!("{} ({n} bytes)", record_hash(&found)),
                });
            }
            if content.starts_with(b"#!python") {
                let rest = content
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(&[][..], |i| &content[i + 1..]);
                let mut new = format!("{}\n", shebang(&interp.executable)).into_bytes();
                new.extend_from_slice(rest);
                content = new;
            }
            insert(
                &mut out,
                &mut rows,
                path,
                Item::generated(content, 0o755, wi),
            )?;
        } else {
            let item = Item {
                source: Source::Zip {
                    wheel: wi,
                    index: *index,
                    member: name.clone(),
                    sha256,
                    size: *size,
                    deflated: *deflated,
                },
                mode: if *exec { 0o755 } else { 0o644 },
                size: *size,
                sha256,
                wheel: wi,
            };
            insert(&mut out, &mut rows, path, item)?;
        }
    }
    // Launchers.
    if let Some(ep) = read_member(ar, &format!("{dist_info}/entry_points.txt"), wheel)? {
        for (name, module, attr) in entry_points(&text(ep, "entry_points.txt")?, wheel)? {
            let content = launcher(&interp.executable, &module, &attr).into_bytes();
            let item = Item::generated(content, 0o755, wi);
            insert(&mut out, &mut rows, join(&s.scripts, &name), item)?;
        }
    }
    // INSTALLER, then RECORD.
    let item = Item::generated(b"ocibuild\n".to_vec(), 0o644, wi);
    insert(
        &mut out,
        &mut rows,
        join(site, &format!("{dist_info}/INSTALLER")),
        item,
    )?;
    let record_path = join(site, &record_name);
    rows.push((
        relative(site, &format!("/{record_path}")),
        String::new(),
        String::new(),
    ));
    rows.sort();
    let mut text = String::new();
    for (p, h, n) in &rows {
        text.push_str(&format!("{},{h},{n}\n", csv_field(p)));
    }
    let bytes = text.into_bytes();
    out.insert(record_path, Item::generated(bytes, 0o644, wi));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_checked() {
        assert_eq!(check_member(b"a/b.py", "w").unwrap(), "a/b.py");
        assert_eq!(check_member(b"a/", "w").unwrap(), "a/");
        for (bad, why) in [
            (&b"/etc/passwd"[..], "absolute"),
            (b"a/../../x", ".."),
            (b"a\\b", "backslash"),
            (b"a//b", "empty"),
            (b"./a", "`.`"),
        ] {
            let e = check_member(bad, "w.whl").unwrap_err().to_string();
            assert!(e.contains(why) && e.starts_with("w.whl: member"), "{e}");
        }
    }

    #[test]
    fn relative_paths() {
        let site = "/usr/local/lib/python3.11/dist-packages";
        assert_eq!(relative(site, "/usr/local/bin/x"), "../../../bin/x");
        assert_eq!(relative(site, &format!("{site}/a/b.py")), "a/b.py");
        assert_eq!(join("/", "etc/x"), "etc/x");
        assert_eq!(join("/usr/local/", "x"), "usr/local/x");
    }
}
