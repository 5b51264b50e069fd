//! Installing wheels into a layer, without pip (the binary distribution format spec).
//!
//! [`build_wheel_layer`] reads each wheel's `*.dist-info/WHEEL` (Wheel-Version 1.x,
//! Root-Is-Purelib) and `RECORD`, maps members to the interpreter's [`Scheme`] (the root to
//! purelib or platlib, `NAME-VER.data/{purelib,platlib,scripts,headers,data}` to the scheme's
//! directories, headers under `headers/<name>`), and streams every member from the zip straight
//! into the tar ([`layer::write_layer_with`]): nothing is extracted to disk.
//!
//! Checks: every member's sha256 and size must match RECORD (verified while streaming; a
//! mismatch fails the layer and nothing is committed); a member missing from RECORD (other
//! than RECORD and its signatures) or a RECORD line without its member is an error; member
//! paths with `..`, a leading `/` or a backslash are errors; two wheels (or two members)
//! installing one path is an error naming both.
//!
//! Written like `installer` does: `#!python` / `#!pythonw` script shebangs become
//! `#!<executable>`; `console_scripts` and `gui_scripts` entry points get its launcher text;
//! `INSTALLER` says `ocibuild`; RECORD is rewritten sorted, paths relative to the site
//! directory, RECORD itself with an empty hash. Modes: 0755 for scripts, launchers and members
//! with an execute bit in the zip, else 0644; directories (synthesized, parents first) 0755;
//! uid/gid 0. No bytecode is compiled, and signatures (`RECORD.jws`, `RECORD.p7s`) are not
//! installed: they sign the RECORD that is rewritten.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufReader, Read};
use std::path::PathBuf;

use super::dist_info::{csv_field, entry_points, launcher, parse_record, shebang, wheel_field};
use super::interpreter::Interpreter;
use super::overlap::{InstalledFile, Listing};
use super::tags::{escape_name, WheelFile};
use crate::digest::{Digest, Hasher, HashingReader};
use crate::json::JsonError;
use crate::layer::{
    self, Content, ContentSink, Entry, EntryKind, LayerError, LayerOptions, StatKey,
};
use crate::store::{CachedLayer, Store, StoreError};

pub use super::dist_info::record_hash;
pub use super::plan::{plan_layers, LayerLimits};

/// Largest script read into memory (scripts are rewritten, so not streamed).
const MAX_SCRIPT: u64 = 64 << 20;
/// Largest metadata file (WHEEL, RECORD, entry_points.txt) read into memory.
const MAX_METADATA: u64 = 64 << 20;
/// Bump when the installed bytes change for the same inputs (part of [`layer_key`]).
const INSTALL_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum WheelError {
    #[error("I/O error on {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Layer(#[from] LayerError),
    #[error(transparent)]
    Json(#[from] JsonError),
    #[error("{wheel}: expected sha256 {expected}, the file has {found}")]
    WheelHash {
        wheel: String,
        expected: Digest,
        found: Digest,
    },
    #[error("{wheel}: cannot read the zip archive")]
    Zip {
        wheel: String,
        #[source]
        source: zip::result::ZipError,
    },
    #[error("{wheel}: {reason}")]
    Format { wheel: String, reason: String },
    #[error("{wheel}: member `{member}`: {reason}")]
    BadPath {
        wheel: String,
        member: String,
        reason: &'static str,
    },
    #[error("{wheel}: member `{member}` is not listed in RECORD")]
    NotInRecord { wheel: String, member: String },
    #[error("{wheel}: RECORD lists `{member}`, which the wheel does not contain")]
    MissingMember { wheel: String, member: String },
    #[error(
        "{wheel}: member `{member}` does not match RECORD: expected {expected}, found {found}"
    )]
    RecordMismatch {
        wheel: String,
        member: String,
        expected: String,
        found: String,
    },
    #[error("`/{path}` is installed twice: by {first} and by {second}")]
    Conflict {
        path: String,
        first: String,
        second: String,
    },
    #[error(
        "`/{}` is installed with different content by {} ({}) and by {} ({}): set \
         `[python] overlap = \"last\"` to install the file of the wheel later in lock order",
        .0.path, .0.first, .0.first_file, .0.second, .0.second_file
    )]
    ContentConflict(Box<ContentConflict>),
    #[error("{wheel}: entry_points.txt line {line}: {reason}")]
    EntryPoint {
        wheel: String,
        line: usize,
        reason: String,
    },
}

/// The details of [`WheelError::ContentConflict`]: the path, and each wheel with its file's
/// sha256 and mode.
#[derive(Debug)]
pub struct ContentConflict {
    pub path: String,
    pub first: String,
    pub first_file: String,
    pub second: String,
    pub second_file: String,
}

/// One wheel to install: a `.whl` file already checked against the lock's sha256 (checked
/// again here before anything in it is believed).
#[derive(Clone, Debug)]
pub struct WheelInput {
    pub path: PathBuf,
    pub file: WheelFile,
    pub sha256: Digest,
    /// Installed paths (layer paths) this wheel leaves out: another wheel's different file
    /// wins there (`[python] overlap = "last"`, decided by [`super::overlap::resolve`]).
    pub exclude: BTreeSet<String>,
}

/// Where an installed file's bytes come from.
#[derive(Clone, Debug)]
enum Source {
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
struct Item {
    source: Source,
    mode: u32,
    size: u64,
    /// The installed content's sha256 (RECORD's for zip members, computed for the rest).
    sha256: Digest,
    wheel: usize,
}

/// The layer cache key of installing `wheels` for `interp` with `opts` (sha256 of canonical
/// JSON: the contract version, compressor, epoch, the wheels' names and sha256, the
/// executable and the scheme). Input order does not matter.
pub fn layer_key(
    wheels: &[WheelInput],
    interp: &Interpreter,
    opts: &LayerOptions,
) -> Result<Digest, WheelError> {
    let mut ws: Vec<(&str, String, &BTreeSet<String>)> = wheels
        .iter()
        .map(|w| (w.file.filename.as_str(), w.sha256.to_string(), &w.exclude))
        .collect();
    ws.sort();
    let s = &interp.scheme;
    let v = serde_json::json!({
        "kind": "python-wheels",
        "install": INSTALL_VERSION,
        "contract": layer::CONTRACT_VERSION,
        "compression": opts.compression.describe(),
        "epoch": opts.epoch,
        // `exclude` only where there is one, so layers without it keep their keys.
        "wheels": ws.iter().map(|(f, d, x)| {
            let mut w = serde_json::json!({"filename": f, "sha256": d});
            if !x.is_empty() {
                w["exclude"] = serde_json::json!(x);
            }
            w
        }).collect::<Vec<_>>(),
        "executable": interp.executable,
        "scheme": {
            "purelib": s.purelib, "platlib": s.platlib, "scripts": s.scripts,
            "headers": s.headers, "data": s.data,
        },
    });
    Ok(Digest::of(&crate::json::to_canonical_vec(
        "wheel layer key",
        &v,
    )?))
}

/// The key under which [`list_wheel`]'s result for this wheel and interpreter is cached: what
/// the listing is a function of (the wheel's sha256, the executable and the scheme).
pub fn listing_key(sha256: &Digest, interp: &Interpreter) -> Result<Digest, WheelError> {
    let s = &interp.scheme;
    let v = serde_json::json!({
        "kind": "python-wheel-files",
        "install": INSTALL_VERSION,
        "sha256": sha256.to_string(),
        "executable": interp.executable,
        "scheme": {
            "purelib": s.purelib, "platlib": s.platlib, "scripts": s.scripts,
            "headers": s.headers, "data": s.data,
        },
    });
    Ok(Digest::of(&crate::json::to_canonical_vec(
        "wheel listing key",
        &v,
    )?))
}

/// Every file `wheel` installs for `interp` (layer paths, content sha256, mode, size), as
/// [`build_wheel_layer`] would write it: read from the zip's directory, WHEEL, RECORD and
/// entry points, and its scripts. The wheel file itself was verified against the lock when
/// it entered the store; [`build_wheel_layer`] checks it again before installing anything.
pub fn list_wheel(wheel: &WheelInput, interp: &Interpreter) -> Result<Listing, WheelError> {
    let f = fs_err::File::open(&wheel.path).map_err(|source| WheelError::Io {
        path: wheel.path.clone(),
        source,
    })?;
    let mut ar = zip::ZipArchive::new(BufReader::with_capacity(8 * 1024, f)).map_err(|source| {
        WheelError::Zip {
            wheel: wheel.file.filename.clone(),
            source,
        }
    })?;
    let items = plan_wheel(&mut ar, wheel, 0, interp, &BTreeSet::new())?;
    Ok(Listing {
        files: items
            .into_iter()
            .map(|(path, it)| InstalledFile {
                path,
                sha256: it.sha256,
                mode: it.mode,
                size: it.size,
            })
            .collect(),
    })
}

/// Installs `wheels` into one layer (written to the store). On any error nothing is committed.
pub fn build_wheel_layer(
    store: &Store,
    wheels: &[WheelInput],
    interp: &Interpreter,
    opts: &LayerOptions,
) -> Result<CachedLayer, WheelError> {
    build_wheel_layer_with(store, wheels, interp, opts, &|_| {})
}

/// [`build_wheel_layer`], reporting each chunk of installed bytes to `progress`.
pub fn build_wheel_layer_with(
    store: &Store,
    wheels: &[WheelInput],
    interp: &Interpreter,
    opts: &LayerOptions,
    progress: &dyn Fn(u64),
) -> Result<CachedLayer, WheelError> {
    let mut wheels: Vec<&WheelInput> = wheels.iter().collect();
    wheels.sort_by(|a, b| a.file.filename.cmp(&b.file.filename));
    let names: Vec<String> = wheels.iter().map(|w| w.file.filename.clone()).collect();
    let mut archives = Vec::new();
    let mut items: BTreeMap<String, Item> = BTreeMap::new();
    for (wi, w) in wheels.iter().enumerate() {
        check_wheel_hash(w)?;
        let f = fs_err::File::open(&w.path).map_err(|source| WheelError::Io {
            path: w.path.clone(),
            source,
        })?;
        // A small buffer: the zip reader seeks to each member at least twice (its local header,
        // then its data), and a seek empties the buffer, so a large one is refilled, mostly for
        // nothing, each time (bench/wheels.sh's 121 MB of wheels, under strace: 1.67 GB
        // through read(2) with 256 KiB, 0.28 GB with 8 KiB, the sha256 pass included). Member
        // data comes in reads larger than it (the splicer's 64 KiB, the tar writer's 256 KiB
        // for stored members), which bypass it.
        let mut ar =
            zip::ZipArchive::new(BufReader::with_capacity(8 * 1024, f)).map_err(|source| {
                WheelError::Zip {
                    wheel: names[wi].clone(),
                    source,
                }
            })?;
        for (path, item) in plan_wheel(&mut ar, w, wi, interp, &w.exclude)? {
            if let Some(prev) = items.get(&path) {
                // The same bytes and mode from several wheels: written once (the first
                // wheel's, in file name order); every wheel's RECORD lists it.
                if (prev.sha256, prev.mode) == (item.sha256, item.mode) {
                    continue;
                }
                return Err(WheelError::ContentConflict(Box::new(ContentConflict {
                    path,
                    first: names[prev.wheel].clone(),
                    first_file: format!("sha256 {}, mode {:o}", prev.sha256.hex(), prev.mode),
                    second: names[wi].clone(),
                    second_file: format!("sha256 {}, mode {:o}", item.sha256.hex(), item.mode),
                })));
            }
            items.insert(path, item);
        }
        archives.push(ar);
    }
    let (entries, sources) = to_entries(&items, &wheels, &names)?;
    let mut failure: Option<WheelError> = None;
    let mut w = store.prehashed_blob_writer()?;
    let written = layer::write_layer_with(&entries, opts, &mut w, progress, &mut |i, e, sink| {
        stream(i, e, sink, &sources, &mut archives, &names, &mut failure)
    });
    let stats = match (written, failure) {
        (_, Some(f)) => return Err(f),
        (Err(e), None) => return Err(e.into()),
        (Ok(s), None) => s,
    };
    w.commit(Some(stats.digest))?;
    Ok(CachedLayer {
        media_type: opts.compression.media_type().to_string(),
        digest: stats.digest,
        size: stats.size,
        diff_id: stats.diff_id,
        uncompressed_size: stats.uncompressed_size,
    })
}

/// Hands entry `i`'s content to the layer writer.
fn stream<R: Read + io::Seek>(
    i: usize,
    e: &Entry,
    sink: &mut ContentSink<'_>,
    sources: &[Option<Source>],
    archives: &mut [zip::ZipArchive<R>],
    names: &[String],
    failure: &mut Option<WheelError>,
) -> Result<(), LayerError> {
    let read_err = |source: io::Error| LayerError::ReadContent {
        entry: e.path.clone(),
        source,
    };
    match sources.get(i).and_then(Option::as_ref) {
        None => Err(LayerError::Contract {
            entry: e.path.clone(),
            reason: "no content source",
        }),
        Some(Source::Bytes(b)) => sink(Content::Bytes(&mut &b[..])),
        Some(Source::Zip {
            wheel,
            index,
            member,
            sha256,
            size,
            deflated,
        }) => {
            let ar = archives
                .get_mut(*wheel)
                .ok_or_else(|| read_err(io::Error::other("no such wheel")))?;
            let zip_err = |err, failure: &mut Option<WheelError>| {
                *failure = Some(WheelError::Zip {
                    wheel: names[*wheel].clone(),
                    source: err,
                });
                read_err(io::Error::other("cannot open the zip member"))
            };
            let mismatch = |found: &Digest, n: u64| WheelError::RecordMismatch {
                wheel: names[*wheel].clone(),
                member: member.clone(),
                expected: format!("{} ({size} bytes)", record_hash(sha256)),
                found: format!("{} ({n} bytes)", record_hash(found)),
            };
            if *deflated {
                // The member's deflate stream itself: the layer writer inflates it (and a gzip
                // layer reuses its blocks); RECORD is checked on what it inflates.
                let mut raw = ar
                    .by_index_raw(*index)
                    .map_err(|err| zip_err(err, failure))?;
                let mut hasher = Hasher::new();
                let r = sink(Content::Deflated {
                    raw: &mut raw,
                    inspect: &mut |b: &[u8]| hasher.update(b),
                });
                if matches!(r, Ok(()) | Err(LayerError::SizeMismatch { .. })) {
                    let (found, n) = hasher.finish();
                    if found != *sha256 || n != *size {
                        *failure = Some(mismatch(&found, n));
                        return Err(read_err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "the content does not match RECORD",
                        )));
                    }
                }
                return r;
            }
            let file = ar.by_index(*index).map_err(|err| zip_err(err, failure))?;
            let mut v = Verify {
                inner: file,
                hasher: Hasher::new(),
                expected: *sha256,
                size: *size,
                found: None,
            };
            let r = sink(Content::Bytes(&mut v));
            if let Some((found, n)) = v.found {
                *failure = Some(mismatch(&found, n));
            }
            r
        }
    }
}

/// Hashes what it reads; at the end, a digest or size other than RECORD's is an error.
struct Verify<R> {
    inner: R,
    hasher: Hasher,
    expected: Digest,
    size: u64,
    found: Option<(Digest, u64)>,
}

impl<R: Read> Read for Verify<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 {
            self.hasher.update(&buf[..n]);
        } else if !buf.is_empty() {
            let (d, len) = self.hasher.clone().finish();
            if d != self.expected || len != self.size {
                self.found = Some((d, len));
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the content does not match RECORD",
                ));
            }
        }
        Ok(n)
    }
}

fn check_wheel_hash(w: &WheelInput) -> Result<(), WheelError> {
    let io_err = |source| WheelError::Io {
        path: w.path.clone(),
        source,
    };
    let f = fs_err::File::open(&w.path).map_err(io_err)?;
    let mut r = HashingReader::new(BufReader::with_capacity(256 * 1024, f));
    io::copy(&mut r, &mut io::sink()).map_err(io_err)?;
    let (_, found, _) = r.finish();
    if found != w.sha256 {
        return Err(WheelError::WheelHash {
            wheel: w.file.filename.clone(),
            expected: w.sha256,
            found,
        });
    }
    Ok(())
}

/// A member path, checked: UTF-8, relative, no `..`, `.` or empty components, no backslash.
fn check_member(raw: &[u8], wheel: &str) -> Result<String, WheelError> {
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
fn plan_wheel<R: Read + io::Seek>(
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
    for i in 0..ar.len() {
        let f = ar.by_index_raw(i).map_err(zerr)?;
        let name = check_member(f.name_raw(), wheel)?;
        if name.ends_with('/') {
            continue;
        }
        let exec = f.unix_mode().is_some_and(|m| m & 0o111 != 0);
        let deflated = f.compression() == zip::CompressionMethod::Deflated;
        members.push((i, name, f.size(), exec, deflated));
    }
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
    for name in record.keys() {
        if *name != record_name && !members.iter().any(|(_, n, _, _, _)| n == name) {
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
            let sha = Digest::of(&content);
            let item = Item {
                size: content.len() as u64,
                source: Source::Bytes(content),
                mode: 0o755,
                sha256: sha,
                wheel: wi,
            };
            insert(&mut out, &mut rows, path, item)?;
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
            let sha = Digest::of(&content);
            let item = Item {
                size: content.len() as u64,
                source: Source::Bytes(content),
                mode: 0o755,
                sha256: sha,
                wheel: wi,
            };
            insert(&mut out, &mut rows, join(&s.scripts, &name), item)?;
        }
    }
    // INSTALLER, then RECORD.
    let installer = b"ocibuild\n".to_vec();
    let sha = Digest::of(&installer);
    let item = Item {
        size: installer.len() as u64,
        source: Source::Bytes(installer),
        mode: 0o644,
        sha256: sha,
        wheel: wi,
    };
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
    out.insert(
        record_path,
        Item {
            size: bytes.len() as u64,
            sha256: Digest::of(&bytes),
            source: Source::Bytes(bytes),
            mode: 0o644,
            wheel: wi,
        },
    );
    Ok(out)
}

/// Sorted layer entries with synthesized parent directories, and each entry's content source.
#[allow(clippy::type_complexity)]
fn to_entries(
    items: &BTreeMap<String, Item>,
    wheels: &[&WheelInput],
    names: &[String],
) -> Result<(Vec<Entry>, Vec<Option<Source>>), WheelError> {
    let mut dirs: BTreeMap<String, usize> = BTreeMap::new();
    for (p, it) in items {
        let mut cur = p.as_str();
        while let Some(i) = cur.rfind('/') {
            cur = &cur[..i];
            if let Some(file) = items.get(cur) {
                return Err(WheelError::Conflict {
                    path: cur.to_string(),
                    first: format!("{} (a file)", names[file.wheel]),
                    second: format!("{} (files beneath it)", names[it.wheel]),
                });
            }
            dirs.entry(cur.to_string()).or_insert(it.wheel);
        }
    }
    let mut all: Vec<(String, Option<&Item>)> =
        dirs.into_keys().map(|d| (format!("{d}/"), None)).collect();
    all.extend(items.iter().map(|(p, it)| (p.clone(), Some(it))));
    all.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut entries = Vec::with_capacity(all.len());
    let mut sources = Vec::with_capacity(all.len());
    for (path, it) in all {
        let (kind, mode, source) = match it {
            None => (EntryKind::Dir, 0o755, None),
            Some(it) => (
                EntryKind::File {
                    src: wheels[it.wheel].path.clone(),
                    size: it.size,
                },
                it.mode,
                Some(it.source.clone()),
            ),
        };
        entries.push(Entry {
            path,
            kind,
            mode,
            uid: 0,
            gid: 0,
            stat: StatKey::default(),
        });
        sources.push(source);
    }
    Ok((entries, sources))
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
