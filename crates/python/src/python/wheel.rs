//! Installing wheels into a layer, without pip (the binary distribution format spec).
//!
//! [`build_wheel_layer`] reads each wheel's `*.dist-info/WHEEL` (Wheel-Version 1.x,
//! Root-Is-Purelib) and `RECORD`, maps members to the interpreter's [`Scheme`] (the root to
//! purelib or platlib, `NAME-VER.data/{purelib,platlib,scripts,headers,data}` to the scheme's
//! directories, headers under `headers/<name>`), and streams every member from the zip straight
//! into the tar ([`layer::write_layer_with`]): nothing is extracted to disk.
//!
//! Checks: every member's sha256 and size must match RECORD (verified while streaming; a
//! mismatch fails the layer and nothing is committed). That is done once per wheel file: once
//! every member of a store blob's wheel was found as RECORD says, its seal records it
//! ([`RECORD_CHECK`]), and later layers of that wheel (another interpreter, a `--no-cache`
//! build) check each member against the zip's own CRC-32 and RECORD's size only (as every
//! layer does besides), as long as the seal holds (see `store::seal`); a pruned CUDA library is
//! always hashed. A member missing from RECORD (other than RECORD and its signatures) or a
//! RECORD line without its member is an error; member paths with `..`, a leading `/` or a
//! backslash are errors; two members of one wheel installing one path is an error. Several
//! wheels installing one path with the same bytes and mode get it written once (the other
//! copies are still checked against their RECORD, unless their wheel's check is recorded);
//! anything else was decided for the whole image beforehand ([`super::overlap`]) and is an
//! error here.
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

use super::install::{plan_wheel, read_verified, Item, Pruning, Source};
use super::interpreter::Interpreter;
use super::overlap::{InstalledFile, Listing};
use crate::cuda::{LibraryReport, Targets};
use crate::digest::{Digest, Hasher, HashingReader};
use crate::layer::{
    self, Content, ContentSink, Entry, EntryKind, LayerError, LayerOptions, StatKey,
};
use crate::store::{CachedLayer, Store};

pub use super::dist_info::record_hash;
pub use super::plan::{plan_layers, LayerLimits};
pub(super) use super::wheel_types::{scheme_json, INSTALL_VERSION};
pub use super::wheel_types::{ContentConflict, WheelError, WheelFileAt, WheelInput};

/// The check a wheel blob's seal records once its members were all found as its RECORD says:
/// what that check finds depends only on the wheel's bytes, which the seal says are unchanged.
pub const RECORD_CHECK: &str = "wheel-record";

/// The layer cache key of installing `wheels` for `interp` with `opts` (sha256 of canonical
/// JSON: the contract version, compressor, epoch, the wheels' names and sha256, the
/// executable and the scheme). Input order does not matter.
pub fn layer_key(
    wheels: &[WheelInput],
    interp: &Interpreter,
    opts: &LayerOptions,
    cuda: Option<&Targets>,
) -> Result<Digest, WheelError> {
    let mut ws: Vec<(&str, String, &BTreeSet<String>)> = wheels
        .iter()
        .map(|w| (w.file.filename.as_str(), w.sha256.to_string(), &w.exclude))
        .collect();
    ws.sort();
    // `exclude` only where there is one, so layers without it keep their keys.
    let wheels: Vec<serde_json::Value> = ws
        .iter()
        .map(|(f, d, x)| {
            let mut w = serde_json::json!({"filename": f, "sha256": d});
            if !x.is_empty() {
                w["exclude"] = serde_json::json!(x);
            }
            w
        })
        .collect();
    let mut fields = vec![
        ("install", serde_json::json!(INSTALL_VERSION)),
        ("wheels", serde_json::json!(wheels)),
        ("executable", serde_json::json!(interp.executable)),
        ("scheme", scheme_json(interp)),
    ];
    // Only with `cuda-archs`: every other wheel layer keeps its key.
    if let Some(t) = cuda {
        fields.push(("cuda", t.to_json()));
    }
    Ok(layer::cache_key(
        "wheel layer key",
        "python-wheels",
        opts.compression,
        opts.epoch,
        fields,
    )?)
}

/// Every file `wheel` installs for `interp`, as [`build_wheel_layer`] would write it (layer
/// path, content sha256, mode, size), from the zip's directory, WHEEL, RECORD, entry points
/// and scripts. The wheel file's own sha256 is checked first: what is derived from it is cached.
/// `store` is where the wheel file may be a blob (see `open_checked`).
pub fn list_wheel(
    wheel: &WheelInput,
    interp: &Interpreter,
    store: &Store,
) -> Result<Listing, WheelError> {
    let f = open_checked(wheel, Some(store))?;
    let mut ar = zip::ZipArchive::new(BufReader::with_capacity(8 * 1024, f)).map_err(|source| {
        WheelError::Zip {
            wheel: wheel.file.filename.clone(),
            source,
        }
    })?;
    let items = plan_wheel(&mut ar, wheel, 0, interp, &BTreeSet::new(), None)?;
    let files = items.into_iter().map(|(path, it)| InstalledFile {
        path,
        sha256: it.sha256,
        mode: it.mode,
        size: it.size,
    });
    Ok(Listing {
        files: files.collect(),
    })
}

/// Installs `wheels` into one layer (written to the store). On any error nothing is committed.
pub fn build_wheel_layer(
    store: &Store,
    wheels: &[WheelInput],
    interp: &Interpreter,
    opts: &LayerOptions,
) -> Result<CachedLayer, WheelError> {
    Ok(build_wheel_layer_with(store, wheels, interp, opts, None, &|_| {})?.0)
}

/// [`build_wheel_layer`], the CUDA libraries pruned to `cuda` (each one's report returned,
/// in path order), reporting each chunk of installed bytes to `progress`.
pub fn build_wheel_layer_with(
    store: &Store,
    wheels: &[WheelInput],
    interp: &Interpreter,
    opts: &LayerOptions,
    cuda: Option<&Targets>,
    progress: &dyn Fn(u64),
) -> Result<(CachedLayer, Vec<LibraryReport>), WheelError> {
    let mut wheels: Vec<&WheelInput> = wheels.iter().collect();
    wheels.sort_by(|a, b| a.file.filename.cmp(&b.file.filename));
    let names: Vec<String> = wheels.iter().map(|w| w.file.filename.clone()).collect();
    let mut archives = Vec::new();
    let mut items: BTreeMap<String, Item> = BTreeMap::new();
    let mut unwritten: Vec<Source> = Vec::new();
    let mut reports: Vec<LibraryReport> = Vec::new();
    // Per wheel: whether its members are checked against RECORD here, and if so, the metadata
    // of the blob that is checked, to record the check in its seal once the layer is committed.
    let mut verify: Vec<bool> = Vec::new();
    let mut to_note: Vec<Option<std::fs::Metadata>> = Vec::new();
    for (wi, w) in wheels.iter().enumerate() {
        let f = open_checked(w, Some(store))?;
        let in_store = store.blob_path(&w.sha256) == w.path;
        let checked = in_store && store.sealed_check(&w.sha256, f.file(), RECORD_CHECK);
        verify.push(!checked);
        // Only a check of every member counts: an excluded one is not read.
        let whole = in_store && !checked && w.exclude.is_empty();
        to_note.push(whole.then(|| f.file().metadata().ok()).flatten());
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
        let mut pruning = cuda.map(|targets| Pruning {
            targets,
            reports: Vec::new(),
        });
        let planned = plan_wheel(&mut ar, w, wi, interp, &w.exclude, pruning.as_mut())?;
        reports.extend(pruning.map(|p| p.reports).unwrap_or_default());
        for (path, item) in planned {
            if let Some(prev) = items.get(&path) {
                // The same bytes and mode from several wheels: written once (the first
                // wheel's, in file name order); every wheel's RECORD lists it. The other
                // copies are still checked against their RECORD before the layer is committed,
                // as they would be in layers of their own (unless their check is recorded).
                if (prev.sha256, prev.mode) == (item.sha256, item.mode) {
                    unwritten.push(item.source);
                    continue;
                }
                return Err(WheelError::ContentConflict(Box::new(ContentConflict {
                    path,
                    first: WheelFileAt {
                        wheel: names[prev.wheel].clone(),
                        sha256: prev.sha256,
                        mode: prev.mode,
                    },
                    second: WheelFileAt {
                        wheel: names[wi].clone(),
                        sha256: item.sha256,
                        mode: item.mode,
                    },
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
        let at = Archives {
            sources: &sources,
            names: &names,
            verify: &verify,
            cuda,
        };
        stream(i, e, sink, &at, &mut archives, &mut failure)
    });
    let stats = match (written, failure) {
        (_, Some(f)) => return Err(f),
        (Err(e), None) => return Err(e.into()),
        (Ok(s), None) => s,
    };
    for src in &unwritten {
        check_unwritten(src, &mut archives, &names, &verify)?;
    }
    w.commit(Some(stats.digest))?;
    for (w, m) in wheels.iter().zip(&to_note) {
        if let Some(m) = m {
            store.note_check(&w.sha256, m, RECORD_CHECK);
        }
    }
    reports.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((stats.cached(opts.compression), reports))
}

/// What [`stream`] reads each entry's content from, besides the archives themselves.
struct Archives<'a> {
    sources: &'a [Option<Source>],
    names: &'a [String],
    /// Per wheel: whether its members are checked against RECORD (not yet recorded in its seal).
    verify: &'a [bool],
    cuda: Option<&'a Targets>,
}

/// Hands entry `i`'s content to the layer writer.
fn stream<R: Read + io::Seek>(
    i: usize,
    e: &Entry,
    sink: &mut ContentSink<'_>,
    at: &Archives<'_>,
    archives: &mut [zip::ZipArchive<R>],
    failure: &mut Option<WheelError>,
) -> Result<(), LayerError> {
    let (sources, names) = (at.sources, at.names);
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
        Some(Source::Pruned {
            wheel,
            index,
            member,
            sha256,
            size,
            pruned,
        }) => {
            let ar = archives
                .get_mut(*wheel)
                .ok_or_else(|| read_err(io::Error::other("no such wheel")))?;
            let name = names.get(*wheel).map_or("", String::as_str);
            let bytes = read_verified(ar, *index, member, sha256, *size, name).and_then(|mut b| {
                if let Some(t) = at.cuda {
                    crate::cuda::prune_reported(&mut b, t, &e.path, name);
                }
                if Digest::of(&b) != *pruned {
                    return Err(WheelError::Format {
                        wheel: name.to_string(),
                        reason: format!("`{member}` pruned to other bytes than when planned"),
                    });
                }
                Ok(b)
            });
            match bytes {
                Ok(b) => sink(Content::Bytes(&mut &b[..])),
                Err(err) => {
                    *failure = Some(err);
                    Err(read_err(io::Error::other("cannot read the pruned library")))
                }
            }
        }
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
            // Every member is held to the zip's CRC-32 (the zip reader checks a stored one's; a
            // deflated one's is checked here) and to RECORD's size (the tar writer); its sha256
            // against RECORD unless its wheel's check is recorded.
            let verify = at.verify.get(*wheel).copied().unwrap_or(true);
            if *deflated {
                // The member's deflate stream itself: the layer writer inflates it (and a gzip
                // layer reuses its blocks); RECORD is checked on what it inflates.
                let mut raw = ar
                    .by_index_raw(*index)
                    .map_err(|err| zip_err(err, failure))?;
                let zip_crc = raw.crc32();
                let mut hasher = verify.then(Hasher::new);
                let mut crc = crc32fast::Hasher::new();
                let r = sink(Content::Deflated {
                    raw: &mut raw,
                    inspect: &mut |b: &[u8]| {
                        if let Some(h) = hasher.as_mut() {
                            h.update(b);
                        }
                        crc.update(b);
                    },
                });
                let checked = matches!(r, Ok(()) | Err(LayerError::SizeMismatch { .. }));
                if let Some(hasher) = hasher.filter(|_| checked) {
                    let (found, n) = hasher.finish();
                    if found != *sha256 || n != *size {
                        *failure = Some(mismatch(&found, n));
                        return Err(read_err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "the content does not match RECORD",
                        )));
                    }
                }
                let found = crc.finalize();
                if r.is_ok() && found != zip_crc {
                    *failure = Some(WheelError::CrcMismatch {
                        wheel: names[*wheel].clone(),
                        member: member.clone(),
                        expected: zip_crc,
                        found,
                    });
                    return Err(read_err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the content does not match the zip's CRC-32",
                    )));
                }
                return r;
            }
            let mut file = ar.by_index(*index).map_err(|err| zip_err(err, failure))?;
            if !verify {
                return sink(Content::Bytes(&mut file));
            }
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

/// Checks a member that is not written (another wheel's identical copy is) against RECORD.
fn check_unwritten<R: Read + io::Seek>(
    src: &Source,
    archives: &mut [zip::ZipArchive<R>],
    names: &[String],
    verify: &[bool],
) -> Result<(), WheelError> {
    let (wheel, index, member, sha256, size) = match src {
        Source::Zip {
            wheel,
            index,
            member,
            sha256,
            size,
            ..
        }
        | Source::Pruned {
            wheel,
            index,
            member,
            sha256,
            size,
            ..
        } => (wheel, index, member, sha256, size),
        // Generated content: its sha256 was computed from its bytes.
        Source::Bytes(_) => return Ok(()),
    };
    if !verify.get(*wheel).copied().unwrap_or(true) {
        return Ok(());
    }
    let name = names.get(*wheel).cloned().unwrap_or_default();
    let zerr = |source| WheelError::Zip {
        wheel: name.clone(),
        source,
    };
    let ar = archives.get_mut(*wheel).ok_or_else(|| WheelError::Format {
        wheel: name.clone(),
        reason: "no such wheel".into(),
    })?;
    let mut h = HashingReader::new(ar.by_index(*index).map_err(zerr)?.take(*size + 1));
    io::copy(&mut h, &mut io::sink()).map_err(|e| zerr(e.into()))?;
    let (_, found, n) = h.finish();
    if found != *sha256 || n != *size {
        return Err(WheelError::RecordMismatch {
            wheel: name.clone(),
            member: member.clone(),
            expected: format!("{} ({size} bytes)", record_hash(sha256)),
            found: format!("{} ({n} bytes)", record_hash(&found)),
        });
    }
    Ok(())
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

/// Opens the wheel file, checked against its sha256 before anything in it is believed. A store
/// blob whose seal matches the file opened was hashed since it last changed (by its download
/// or the store's reuse check, [`Store::has_blob`], which every build runs first), so it is not
/// read again: builds hashed each wheel three times (that check, the listing, the layer), 12 GB
/// of sha256 for bench/torch.sh's 4 GB of wheels. Anything else is hashed from the file
/// opened, so the bytes checked are the bytes then read.
fn open_checked(w: &WheelInput, store: Option<&Store>) -> Result<fs_err::File, WheelError> {
    let io_err = |source| WheelError::Io {
        path: w.path.clone(),
        source,
    };
    let mut f = fs_err::File::open(&w.path).map_err(io_err)?;
    let sealed = |s: &Store| s.blob_path(&w.sha256) == w.path && s.sealed_file(&w.sha256, f.file());
    if store.is_some_and(sealed) {
        return Ok(f);
    }
    let mut r = HashingReader::new(io::BufReader::with_capacity(256 * 1024, &mut f));
    io::copy(&mut r, &mut io::sink()).map_err(io_err)?;
    let (_, found, _) = r.finish();
    if found != w.sha256 {
        return Err(WheelError::WheelHash {
            wheel: w.file.filename.clone(),
            expected: w.sha256,
            found,
        });
    }
    io::Seek::rewind(&mut f).map_err(io_err)?;
    Ok(f)
}

/// A layer's entries, and each one's content source where it has one.
type Listed = (Vec<Entry>, Vec<Option<Source>>);

/// Sorted layer entries with synthesized parent directories, and each entry's content source.
fn to_entries(
    items: &BTreeMap<String, Item>,
    wheels: &[&WheelInput],
    names: &[String],
) -> Result<Listed, WheelError> {
    let mut dirs: BTreeMap<String, usize> = BTreeMap::new();
    for (p, it) in items {
        let mut cur = p.as_str();
        while let Some(i) = cur.rfind('/') {
            cur = &cur[..i];
            if let Some(file) = items.get(cur) {
                return Err(WheelError::FileOverDirectory {
                    path: cur.to_string(),
                    file_wheel: names[file.wheel].clone(),
                    dir_wheel: names[it.wheel].clone(),
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
mod scale_tests {
    use super::*;
    use crate::layer::Compression;
    use crate::python::interpreter::{PyVersion, Scheme};
    use crate::python::tags::WheelFile;
    use std::io::Write;

    /// A wheel of `n` tiny members (deflated, as wheels are), WHEEL and a RECORD listing them.
    fn many_member_wheel(dir: &std::path::Path, n: usize) -> WheelInput {
        let filename = "many-1.0-py3-none-any.whl";
        let di = "many-1.0.dist-info";
        let path = dir.join(filename);
        let mut zw = zip::ZipWriter::new(io::BufWriter::new(fs_err::File::create(&path).unwrap()));
        let o = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(0o644);
        let mut record = String::new();
        let add = |zw: &mut zip::ZipWriter<_>, name: &str, c: &[u8], record: &mut String| {
            zw.start_file(name, o).unwrap();
            zw.write_all(c).unwrap();
            record.push_str(&format!(
                "{name},{},{}\n",
                record_hash(&Digest::of(c)),
                c.len()
            ));
        };
        for i in 0..n {
            let name = format!("many/m{:03}/f{i}.py", i % 1000);
            add(&mut zw, &name, format!("X = {i}\n").as_bytes(), &mut record);
        }
        let wheel =
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n";
        add(&mut zw, &format!("{di}/WHEEL"), wheel, &mut record);
        record.push_str(&format!("{di}/RECORD,,\n"));
        zw.start_file(format!("{di}/RECORD"), o).unwrap();
        zw.write_all(record.as_bytes()).unwrap();
        zw.finish().unwrap().flush().unwrap();
        let sha256 = crate::digest::hash_file(&path).unwrap().0;
        WheelInput {
            path,
            file: WheelFile::parse(filename).unwrap(),
            sha256,
            exclude: BTreeSet::new(),
        }
    }

    fn interp() -> Interpreter {
        let version = PyVersion {
            major: 3,
            minor: 11,
        };
        Interpreter {
            version,
            executable: "/usr/bin/python3.11".into(),
            machine: "x86_64".into(),
            glibc: Some((2, 36)),
            scheme: Scheme::debian_local(version),
            full_version: None,
        }
    }

    /// This process's user and system CPU time (`/proc/self/stat`, in clock ticks of 1/100 s):
    /// the timing on a shared machine.
    fn cpu_secs() -> f64 {
        let stat = fs_err::read_to_string("/proc/self/stat").unwrap_or_default();
        let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<f64> = after
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0.0))
            .collect();
        // Fields 14 and 15 (utime, stime); `after` starts at field 3.
        (f.get(11).unwrap_or(&0.0) + f.get(12).unwrap_or(&0.0)) / 100.0
    }

    /// RECORD was matched against the members by a linear scan per row (200,000 members: 135 s).
    /// Every member is installed and checked against RECORD, and the rewritten RECORD lists each.
    /// 20,000 members by default (a debug build takes about 7 s); `OCIBUILD_WHEEL_MEMBERS` sets
    /// the count for timing runs (`OCIBUILD_WHEEL_MEMBERS=200000 cargo test --release --lib
    /// wheel::scale_tests -- --nocapture` prints the time; BENCHMARKS.md has the figures).
    #[test]
    #[allow(clippy::print_stderr)] // the time, for whoever runs it with --nocapture
    fn a_wheel_of_many_members_installs_whole() {
        let n: usize = std::env::var("OCIBUILD_WHEEL_MEMBERS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20_000);
        let tmp = tempfile::tempdir().unwrap();
        let w = many_member_wheel(tmp.path(), n);
        let store = Store::open(tmp.path().join("store")).unwrap();
        let opts = LayerOptions {
            epoch: 1_700_000_000,
            compression: Compression::None,
            threads: 1,
        };
        let (start, cpu) = (std::time::Instant::now(), cpu_secs());
        let layer = build_wheel_layer(&store, std::slice::from_ref(&w), &interp(), &opts).unwrap();
        eprintln!(
            "{n} members installed in {:.2} s ({:.2} s of CPU)",
            start.elapsed().as_secs_f64(),
            cpu_secs() - cpu
        );
        let site = "usr/local/lib/python3.11/dist-packages";
        let mut ar = tar::Archive::new(store.open_blob(&layer.digest).unwrap());
        let (mut files, mut record) = (0usize, String::new());
        for e in ar.entries().unwrap() {
            let mut e = e.unwrap();
            let p = String::from_utf8(e.path_bytes().into_owned()).unwrap();
            if p == format!("{site}/many-1.0.dist-info/RECORD") {
                e.read_to_string(&mut record).unwrap();
            } else if p.starts_with(&format!("{site}/many/")) && !p.ends_with('/') {
                files += 1;
            }
        }
        assert_eq!(files, n, "every member installed");
        // The members, WHEEL, INSTALLER and RECORD itself.
        assert_eq!(record.lines().count(), n + 3);
        assert!(record.contains(&format!(
            "many/m{:03}/f{}.py,sha256=",
            (n - 1) % 1000,
            n - 1
        )));
    }
}
