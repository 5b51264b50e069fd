//! How one wheel's members map to installed files: the `.dist-info` and WHEEL checks, RECORD,
//! the scheme's directories, rewritten scripts, launchers, INSTALLER and the new RECORD
//! ([`plan_wheel`]). [`super::wheel`] streams what it plans into a layer.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::{self, Read};

use super::dist_info::record_hash;
use super::dist_info::{
    csv_field, entry_points, launcher, parse_record, shebang, wheel_field, RecordRow,
};
use super::interpreter::Interpreter;
use super::tags::escape_name;
use super::wheel_types::{WheelError, WheelInput};
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
    /// Member `index` of wheel `wheel` (checked against RECORD's `sha256` when read), a CUDA
    /// library pruned to the image's GPUs ([`crate::cuda`]) as it is written; `pruned` is
    /// the sha256 of what pruning gave when planned, which the write checks.
    Pruned {
        wheel: usize,
        index: usize,
        member: String,
        sha256: Digest,
        size: u64,
        pruned: Digest,
    },
}

/// Largest library read into memory to be pruned (`[image] cuda-archs`); a larger one is
/// left as it is, and listed.
pub(super) const MAX_PRUNED: u64 = 4 << 30;

/// Pruning for one wheel's plan: the GPUs, and the report of each CUDA library met.
pub(super) struct Pruning<'a> {
    pub(super) targets: &'a crate::cuda::Targets,
    pub(super) reports: Vec<crate::cuda::LibraryReport>,
}

/// Member `index` read whole (at most `size` bytes), checked against RECORD's `sha256`.
pub(super) fn read_verified<R: Read + io::Seek>(
    ar: &mut zip::ZipArchive<R>,
    index: usize,
    member: &str,
    sha256: &Digest,
    size: u64,
    wheel: &str,
) -> Result<Vec<u8>, WheelError> {
    let zerr = |source| WheelError::Zip {
        wheel: wheel.to_string(),
        source,
    };
    let f = ar.by_index(index).map_err(zerr)?;
    let mut out = Vec::with_capacity(usize::try_from(size.min(MAX_PRUNED)).unwrap_or(0));
    f.take(size.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| zerr(e.into()))?;
    let found = Digest::of(&out);
    if found != *sha256 || out.len() as u64 != size {
        return Err(WheelError::RecordMismatch {
            wheel: wheel.to_string(),
            member: member.to_string(),
            expected: format!("{} ({size} bytes)", record_hash(sha256)),
            found: format!("{} ({} bytes)", record_hash(&found), out.len()),
        });
    }
    Ok(out)
}

/// Plans member `m` (installed at `path`, `item` so far) pruned: read and pruned now, so the
/// new RECORD can list the bytes installed; written pruned again ([`Source::Pruned`]).
fn plan_pruned<R: Read + io::Seek>(
    ar: &mut zip::ZipArchive<R>,
    m: &Member,
    path: &str,
    item: &mut Item,
    p: &mut Pruning<'_>,
    wheel: &str,
) -> Result<(), WheelError> {
    if m.size > MAX_PRUNED {
        p.reports.push(crate::cuda::LibraryReport {
            path: format!("/{path}"),
            from: wheel.to_string(),
            size: m.size,
            pruned: None,
            reason: Some(format!(
                "larger than {MAX_PRUNED} bytes, not read to be pruned"
            )),
        });
        return Ok(());
    }
    let mut bytes = read_verified(ar, m.index, &m.name, &item.sha256, m.size, wheel)?;
    let Some(report) = crate::cuda::prune_reported(&mut bytes, p.targets, path, wheel) else {
        return Ok(());
    };
    if report.pruned.as_ref().is_some_and(|x| x.bytes_removed > 0) {
        let pruned = Digest::of(&bytes);
        item.source = Source::Pruned {
            wheel: item.wheel,
            index: m.index,
            member: m.name.clone(),
            sha256: item.sha256,
            size: m.size,
            pruned,
        };
        item.sha256 = pruned;
    }
    p.reports.push(report);
    Ok(())
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

/// One file member of a wheel's zip.
struct Member {
    index: usize,
    name: String,
    size: u64,
    exec: bool,
    /// Stored deflated (its blocks can be spliced into a gzip layer).
    deflated: bool,
}

/// The wheel's file members (directories left out), its names checked (no unsafe path, no
/// symlink, the central and local headers agreeing).
fn file_members<R: Read + io::Seek>(
    ar: &mut zip::ZipArchive<R>,
    w: &WheelInput,
) -> Result<Vec<Member>, WheelError> {
    let wheel = w.file.filename.as_str();
    let zerr = |source| WheelError::Zip {
        wheel: wheel.to_string(),
        source,
    };
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
        members.push(Member {
            index: i,
            name,
            size: f.size(),
            exec: f.unix_mode().is_some_and(|m| m & 0o111 != 0),
            deflated: f.compression() == zip::CompressionMethod::Deflated,
        });
    }
    check_local_names(&w.path, &local_names, wheel)?;
    Ok(members)
}

/// The wheel's one `.dist-info` directory, which must be its distribution's.
fn dist_info_of(members: &[Member], w: &WheelInput) -> Result<String, WheelError> {
    let fmt_err = |reason: String| WheelError::Format {
        wheel: w.file.filename.clone(),
        reason,
    };
    let mut dist_infos: Vec<&str> = members
        .iter()
        .filter_map(|m| m.name.split_once('/').map(|(d, _)| d))
        .filter(|d| d.ends_with(".dist-info"))
        .collect();
    dist_infos.sort_unstable();
    dist_infos.dedup();
    let [dist_info] = dist_infos.as_slice() else {
        return Err(fmt_err(format!(
            "expected one .dist-info directory, found {}",
            dist_infos.len()
        )));
    };
    let prefix = dist_info.trim_end_matches(".dist-info");
    let matches_name = prefix
        .split_once('-')
        .is_some_and(|(n, _)| escape_name(n) == escape_name(&w.file.name));
    if !matches_name {
        return Err(fmt_err(format!(
            "its `{dist_info}` does not belong to `{}`",
            w.file.name
        )));
    }
    Ok(dist_info.to_string())
}

/// METADATA (the core metadata) names the distribution and version the SBOM reports: they
/// must be the file name's.
fn check_metadata<R: Read + io::Seek>(
    ar: &mut zip::ZipArchive<R>,
    dist_info: &str,
    w: &WheelInput,
) -> Result<(), WheelError> {
    let wheel = w.file.filename.as_str();
    let fmt_err = |reason: String| WheelError::Format {
        wheel: wheel.to_string(),
        reason,
    };
    let Some(meta) = read_member(ar, &format!("{dist_info}/METADATA"), wheel)? else {
        return Ok(());
    };
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
    Ok(())
}

/// WHEEL's `Root-Is-Purelib` (its `Wheel-Version` must be 1.x).
fn root_is_purelib<R: Read + io::Seek>(
    ar: &mut zip::ZipArchive<R>,
    dist_info: &str,
    wheel: &str,
) -> Result<bool, WheelError> {
    let fmt_err = |reason: String| WheelError::Format {
        wheel: wheel.to_string(),
        reason,
    };
    let wheel_meta = read_member(ar, &format!("{dist_info}/WHEEL"), wheel)?
        .ok_or_else(|| fmt_err(format!("no {dist_info}/WHEEL")))?;
    let wheel_meta = String::from_utf8(wheel_meta)
        .map_err(|_| fmt_err(format!("{dist_info}/WHEEL is not UTF-8")))?;
    let version = wheel_field(&wheel_meta, "Wheel-Version")
        .ok_or_else(|| fmt_err("WHEEL has no Wheel-Version".into()))?;
    if version.split('.').next() != Some("1") {
        return Err(fmt_err(format!(
            "Wheel-Version {version} is not supported (only 1.x)"
        )));
    }
    match wheel_field(&wheel_meta, "Root-Is-Purelib").map(str::to_ascii_lowercase) {
        Some(v) if v == "true" => Ok(true),
        Some(v) if v == "false" => Ok(false),
        other => Err(fmt_err(format!(
            "WHEEL: Root-Is-Purelib is {:?}, expected true or false",
            other.unwrap_or_default()
        ))),
    }
}

/// Where a member is installed: (directory, path under it, whether it is a script), by the
/// `.data/` directory it is in, else the site directory.
fn destination(
    name: &str,
    data_dir: &str,
    interp: &Interpreter,
    site: &str,
    w: &WheelInput,
) -> Result<(String, String, bool), WheelError> {
    let s = &interp.scheme;
    let Some(r) = name.strip_prefix(data_dir) else {
        return Ok((site.to_string(), name.to_string(), false));
    };
    let bad = |reason: &'static str| WheelError::BadPath {
        wheel: w.file.filename.clone(),
        member: name.to_string(),
        reason,
    };
    let (key, rest) = r
        .split_once('/')
        .ok_or_else(|| bad("a file directly in the .data directory"))?;
    Ok(match key {
        "purelib" => (s.purelib.clone(), rest.to_string(), false),
        "platlib" => (s.platlib.clone(), rest.to_string(), false),
        "scripts" => (s.scripts.clone(), rest.to_string(), true),
        "headers" => (s.headers.clone(), format!("{}/{rest}", w.file.name), false),
        "data" => (s.data.clone(), rest.to_string(), false),
        _ => {
            return Err(bad(
                "unknown .data directory (not purelib, platlib, scripts, headers or data)",
            ))
        }
    })
}

/// A script member, read and checked against RECORD now (its shebang may change): its content
/// with a `#!python` line replaced by the interpreter's.
fn read_script<R: Read + io::Seek>(
    ar: &mut zip::ZipArchive<R>,
    m: &Member,
    sha256: Digest,
    interp: &Interpreter,
    wheel: &str,
) -> Result<Vec<u8>, WheelError> {
    let zerr = |source| WheelError::Zip {
        wheel: wheel.to_string(),
        source,
    };
    let f = ar.by_index(m.index).map_err(zerr)?;
    let mut content = Vec::new();
    let mut h = HashingReader::new(f.take(MAX_SCRIPT + 1));
    h.read_to_end(&mut content).map_err(|e| zerr(e.into()))?;
    let (_, found, n) = h.finish();
    if found != sha256 || n != m.size {
        return Err(WheelError::RecordMismatch {
            wheel: wheel.to_string(),
            member: m.name.clone(),
            expected: format!("{} ({} bytes)", record_hash(&sha256), m.size),
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
    Ok(content)
}

/// RECORD's row of `m`: its sha256, after checking that RECORD lists it with its size.
fn record_row(
    record: &BTreeMap<String, RecordRow>,
    m: &Member,
    wheel: &str,
) -> Result<Digest, WheelError> {
    let row = record.get(&m.name).ok_or_else(|| WheelError::NotInRecord {
        wheel: wheel.to_string(),
        member: m.name.clone(),
    })?;
    let sha256 = row.sha256.ok_or_else(|| WheelError::Format {
        wheel: wheel.to_string(),
        reason: format!("RECORD has no hash for `{}`", m.name),
    })?;
    if row.size != Some(m.size) {
        return Err(WheelError::RecordMismatch {
            wheel: wheel.to_string(),
            member: m.name.clone(),
            expected: format!(
                "size {}",
                row.size.map_or("(none)".to_string(), |s| s.to_string())
            ),
            found: format!("size {}", m.size),
        });
    }
    Ok(sha256)
}

/// The installed files and the rows RECORD will list for them.
struct Installed<'a> {
    out: BTreeMap<String, Item>,
    /// (path relative to site, hash, size).
    rows: Vec<(String, String, String)>,
    site: &'a str,
    exclude: &'a BTreeSet<String>,
    wheel: &'a str,
}

impl Installed<'_> {
    fn insert(&mut self, path: String, item: Item) -> Result<(), WheelError> {
        if self.exclude.contains(&path) {
            // Another wheel's file is installed there: this wheel neither writes nor lists it.
            return Ok(());
        }
        self.rows.push((
            relative(self.site, &format!("/{path}")),
            record_hash(&item.sha256),
            item.size.to_string(),
        ));
        if self.out.insert(path.clone(), item).is_some() {
            return Err(WheelError::Conflict {
                path,
                first: self.wheel.to_string(),
                second: self.wheel.to_string(),
            });
        }
        Ok(())
    }

    /// The rewritten RECORD (sorted rows, itself without a hash) at `record_path`, and the
    /// installed files.
    fn finish(mut self, record_path: String, wi: usize) -> BTreeMap<String, Item> {
        self.rows.push((
            relative(self.site, &format!("/{record_path}")),
            String::new(),
            String::new(),
        ));
        self.rows.sort();
        let mut text = String::new();
        for (p, h, n) in &self.rows {
            text.push_str(&format!("{},{h},{n}\n", csv_field(p)));
        }
        self.out
            .insert(record_path, Item::generated(text.into_bytes(), 0o644, wi));
        self.out
    }
}

/// Maps one wheel's members to installed paths (layer paths) and their content.
pub(super) fn plan_wheel<R: Read + io::Seek>(
    ar: &mut zip::ZipArchive<R>,
    w: &WheelInput,
    wi: usize,
    interp: &Interpreter,
    exclude: &BTreeSet<String>,
    mut prune: Option<&mut Pruning<'_>>,
) -> Result<BTreeMap<String, Item>, WheelError> {
    let wheel = w.file.filename.as_str();
    let fmt_err = |reason: String| WheelError::Format {
        wheel: wheel.to_string(),
        reason,
    };
    let members = file_members(ar, w)?;
    let dist_info = dist_info_of(&members, w)?;
    let prefix = dist_info.trim_end_matches(".dist-info").to_string();
    let data_dir = format!("{prefix}.data/");
    let text = |b: Vec<u8>, what: &str| {
        String::from_utf8(b).map_err(|_| fmt_err(format!("{dist_info}/{what} is not UTF-8")))
    };
    check_metadata(ar, &dist_info, w)?;
    let purelib = root_is_purelib(ar, &dist_info, wheel)?;
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
    let member_names: HashSet<&str> = members.iter().map(|m| m.name.as_str()).collect();
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
    let mut installed = Installed {
        out: BTreeMap::new(),
        rows: Vec::new(),
        site,
        exclude,
        wheel,
    };
    for m in &members {
        if m.name == skipped[0] || m.name == skipped[1] || m.name == skipped[2] {
            continue;
        }
        let sha256 = record_row(&record, m, wheel)?;
        if m.name == skipped[3] {
            continue;
        }
        let (dir, rest, script) = destination(&m.name, &data_dir, interp, site, w)?;
        let path = join(&dir, &rest);
        let item = if script {
            Item::generated(read_script(ar, m, sha256, interp, wheel)?, 0o755, wi)
        } else {
            let mut item = Item {
                source: Source::Zip {
                    wheel: wi,
                    index: m.index,
                    member: m.name.clone(),
                    sha256,
                    size: m.size,
                    deflated: m.deflated,
                },
                mode: if m.exec { 0o755 } else { 0o644 },
                size: m.size,
                sha256,
                wheel: wi,
            };
            match prune.as_deref_mut() {
                Some(p) if crate::cuda::is_library_name(&path) && !exclude.contains(&path) => {
                    plan_pruned(ar, m, &path, &mut item, p, wheel)?;
                }
                _ => {}
            }
            item
        };
        installed.insert(path, item)?;
    }
    // Launchers.
    if let Some(ep) = read_member(ar, &format!("{dist_info}/entry_points.txt"), wheel)? {
        for (name, module, attr) in entry_points(&text(ep, "entry_points.txt")?, wheel)? {
            let content = launcher(&interp.executable, &module, &attr).into_bytes();
            let item = Item::generated(content, 0o755, wi);
            installed.insert(join(&s.scripts, &name), item)?;
        }
    }
    // INSTALLER, then RECORD.
    let item = Item::generated(b"ocibuild\n".to_vec(), 0o644, wi);
    installed.insert(join(site, &format!("{dist_info}/INSTALLER")), item)?;
    Ok(installed.finish(join(site, &record_name), wi))
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
