//! Locked .debs → one layer under the determinism contract.
//!
//! - [`download`] fetches a locked .deb into the store, verified by sha256 and size (a missing
//!   file names the package and says the lock may be out of date).
//! - [`build_layer`] verifies each .deb against the lock again, parses its `ar` container
//!   (`deb::ar`: the format is three fixed fields and a padding rule), reads `control` and
//!   `md5sums` from `control.tar.*`, and streams `data.tar.{xz,zst,gz}` entries.
//!
//! **Bounded memory.** Entries must be written sorted, but a data tar is in any order. Each
//! regular file's content is appended, while the data tar streams by, to an unnamed spool
//! file in the store's `tmp/` directory ([`Spool`]: gone when done, also on error or a crash);
//! only the metadata of the entries stays in memory. The .debs are read a few per thread at a
//! time, each into a spool of its own, appended in package order to the layer's one spool. Then the sorted entries, their contents
//! read back from the spool by offset, go through [`layer::write_layer_with`], the same writer
//! and compressors as every other layer, straight into a store blob. This reads each
//! data tar once (the alternative, reading it twice, decompresses twice and still needs random
//! access to contents in sorted order).
//!
//! Rules: paths are normalized (`./` dropped), absolute paths, `..` components, device nodes
//! and FIFOs are errors naming the package and the path; modes (& 0o7777) and numeric uid/gid
//! are kept as in the .deb; mtime is the layer's epoch; symlink targets are verbatim; hardlinks
//! point at the first path of their group in sorted order. With merged-/usr
//! ([`UsrMerge`]), `bin/x` becomes `usr/bin/x` (also hardlink targets and md5sums paths), so the
//! layer never shadows the base's `bin → usr/bin` symlink. Two packages shipping one path:
//! identical files (content, mode, owner) and directories are fine, anything else is an error
//! naming both. `var/lib/dpkg/status.d/NAME` gets the package's control paragraph with
//! `Status: install ok installed`, and `NAME.md5sums` its md5sums (the distroless convention
//! that image scanners read). Maintainer scripts are not run.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::control::parse_paragraphs;
use super::release::decoder;
use super::resolve::Locked;
use super::spool::{Span, Spool};
pub use super::usrmerge::{UsrMerge, USR_MERGE_DIRS};
use super::AptError;
use super::{dpkgdb, usrmerge};
use crate::digest::Digest;
use crate::layer::{self, Content, Entry, EntryKind, LayerOptions, StatKey};
use crate::store::{CachedLayer, Store};

/// Largest control.tar (decompressed) read into memory.
const MAX_CONTROL: u64 = 64 << 20;

/// One .deb going into the layer.
#[derive(Clone, Debug)]
pub struct DebInput {
    pub locked: Locked,
    /// The .deb file (e.g. what [`download`] returned).
    pub path: PathBuf,
}

/// How to build the apt layer.
#[derive(Clone, Debug)]
pub struct LayerRequest {
    pub layer: LayerOptions,
    /// The base's merged-/usr links.
    pub usr_merge: UsrMerge,
    /// The image is on `scratch`: the packages decide merged /usr ([`usrmerge::on_scratch`]).
    pub scratch: bool,
    /// The base has no `var/lib/dpkg/status`: write dpkg's database ([`dpkgdb`]).
    pub dpkg_db: bool,
    /// `[image] cuda-archs`: the packages' CUDA libraries pruned to these GPUs ([`crate::cuda`]).
    pub cuda: Option<crate::cuda::Targets>,
    /// `[image] drop-unused-copies`: library files (layer paths) left out ([`drop`]).
    pub drop: std::collections::BTreeSet<String>,
}

/// The layer written to the store.
pub type AptLayer = CachedLayer;

/// What a path holds, before sorting.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Dir,
    /// Where its content is in the spool, its sha256 (to compare duplicates).
    File(Span, Digest),
    Symlink(String),
    /// Target path (normalized, rewritten).
    Hardlink(String),
}

#[derive(Clone, Debug)]
struct Item {
    kind: Kind,
    mode: u32,
    uid: u32,
    gid: u32,
    /// Index of the package (in sorted order) that shipped it.
    pkg: usize,
}

/// Builds one layer from the .debs (in name order whatever the input order), into the store.
/// On any error nothing is committed and every temporary file is removed.
/// `progress` hears each .deb's size once its files are read.
pub fn build_layer(
    store: &Store,
    debs: &[DebInput],
    req: &LayerRequest,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<AptLayer, AptError> {
    Ok(build_layer_reported(store, debs, req, progress)?.0)
}

/// How many .debs each thread reads per batch (each held in a spool of its own until the batch
/// is appended in order).
const DEBS_PER_THREAD: usize = 4;

/// [`build_layer`], with the report of each CUDA library pruned (`req.cuda`), in path order.
pub fn build_layer_reported(
    store: &Store,
    debs: &[DebInput],
    req: &LayerRequest,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(AptLayer, Vec<crate::cuda::LibraryReport>), AptError> {
    let mut debs: Vec<&DebInput> = debs.iter().collect();
    debs.sort_by(|a, b| a.locked.cmp(&b.locked));
    let tmp = store.root().join("tmp");
    let mut spool = Spool::new(&tmp)?;
    let mut items: BTreeMap<String, Item> = BTreeMap::new();
    let names: Vec<String> = debs
        .iter()
        .map(|d| format!("{} {}", d.locked.name, d.locked.version))
        .collect();
    // Each .deb is checked, decompressed and hashed into a spool of its own on the layer's
    // threads (xz is single-threaded per stream), then appended to the one spool in package
    // order: the same bytes at the same offsets as one thread reading them in turn. A few
    // .debs per thread at a time, so the spools open at once stay few whatever the count of
    // packages, and a failure stops the reading at the end of its batch.
    let numbered: Vec<(usize, &DebInput)> = debs.iter().copied().enumerate().collect();
    let threads = req.layer.threads.max(1);
    let mut reads = Vec::with_capacity(debs.len());
    let mut reports = Vec::new();
    for batch in numbered.chunks(threads * DEBS_PER_THREAD) {
        let read_alone = crate::par::map_in_order(batch, threads, |&(i, deb)| {
            let mut own = Spool::new(&tmp)?;
            let read = read_deb(deb, i, &mut own)?;
            progress(deb.locked.size);
            Ok::<_, AptError>((read, own))
        });
        for (&(i, _), alone) in batch.iter().zip(read_alone) {
            let (mut read, mut own) = alone?;
            let at = spool.append_spool(&mut own)?;
            read.shift(at);
            if let Some(t) = &req.cuda {
                reports.extend(prune::prune_read(&mut read, &mut spool, t, &names[i])?);
            }
            reads.push(read);
        }
    }
    reports.sort_by(|a, b| a.path.cmp(&b.path));
    // On scratch the packages say whether the system is merged-/usr (trixie's are).
    let scratch = if req.usr_merge.is_empty() && req.scratch {
        let shipped: Vec<usrmerge::Shipped<'_>> = reads
            .iter()
            .zip(&debs)
            .map(|(r, d)| usrmerge::Shipped {
                package: &d.locked.name,
                paths: r
                    .own
                    .iter()
                    .map(|(p, it)| {
                        let t = match &it.kind {
                            Kind::Symlink(t) => Some(t.as_str()),
                            _ => None,
                        };
                        (p.as_str(), t)
                    })
                    .collect(),
            })
            .collect();
        usrmerge::on_scratch(&shipped)
    } else {
        usrmerge::ScratchMerge::default()
    };
    let usr = if scratch.usr.is_empty() {
        &req.usr_merge
    } else {
        &scratch.usr
    };
    let mut status = Vec::new();
    for (i, r) in reads.into_iter().enumerate() {
        let package = &debs[i].locked.name;
        let (own, control) = install(r, i, usr, req.dpkg_db, &mut spool, package)?;
        merge(&mut items, own, &names)?;
        status.push(control);
    }
    for (link, target, package) in &scratch.added {
        let pkg = debs
            .iter()
            .position(|d| &d.locked.name == package)
            .unwrap_or(0);
        items.entry(link.clone()).or_insert(Item {
            kind: Kind::Symlink(target.clone()),
            mode: 0o777,
            uid: 0,
            gid: 0,
            pkg,
        });
    }
    drop::drop_paths(&mut items, &req.drop, &mut spool)?;
    if req.dpkg_db && !status.is_empty() {
        let text = dpkgdb::status_file(&status.iter().collect::<Vec<_>>());
        for (path, data) in [(dpkgdb::STATUS, text.as_str()), (dpkgdb::FORMAT, "1\n")] {
            items.insert(
                path.to_string(),
                small_file(&mut spool, data.as_bytes(), 0)?,
            );
        }
    }
    ca_bundle(&mut items, &mut spool)?;
    let (entries, spans) = to_entries(items, &names, spool.dir())?;
    let mut w = store.prehashed_blob_writer()?;
    let reader = spool.reader()?;
    let stats =
        layer::write_layer_with(&entries, &req.layer, &mut w, &|_| {}, &mut |i, _, sink| {
            let mut content = BufReader::with_capacity(64 * 1024, reader.at(spans[i]));
            sink(Content::Bytes(&mut content))
        })?;
    w.commit(Some(stats.digest))?;
    Ok((stats.cached(req.layer.compression), reports))
}

pub(super) fn io_err(path: &Path) -> impl FnOnce(io::Error) -> AptError + '_ {
    move |source| AptError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The sha256 and size of a file.
fn hash_file(path: &Path) -> Result<(Digest, u64), AptError> {
    crate::digest::hash_file(path).map_err(io_err(path))
}

/// Normalizes a data.tar path: drops `./` and `.` components; absolute paths and `..` are
/// errors. Returns None for the root itself.
fn normalize(raw: &str, package: &str) -> Result<Option<String>, AptError> {
    let bad = |reason: &str| AptError::DebPath {
        package: package.to_string(),
        path: raw.to_string(),
        reason: reason.to_string(),
    };
    if raw.starts_with('/') {
        return Err(bad("absolute path"));
    }
    let mut parts = Vec::new();
    for c in raw.split('/') {
        match c {
            "" | "." => {}
            ".." => return Err(bad("`..` path component")),
            c => parts.push(c),
        }
    }
    if parts.is_empty() {
        return Ok(None);
    }
    Ok(Some(parts.join("/")))
}

/// One .deb as read, before its paths are put where they go.
struct DebRead {
    /// Its data tar's paths (normalized, not rewritten) → what they hold.
    own: BTreeMap<String, Item>,
    /// The same paths in the tar's order (dpkg's `.list`).
    order: Vec<String>,
    control: super::control::Paragraph,
    md5sums: Option<String>,
}

impl DebRead {
    /// Its files' spans moved `by` bytes on (its spool appended at `by` to another).
    fn shift(&mut self, by: u64) {
        for item in self.own.values_mut() {
            if let Kind::File(span, _) = &mut item.kind {
                span.offset += by;
            }
        }
    }
}

/// The .deb file against the lock (sha256 and size), before anything in it is believed.
fn check_whole(deb: &DebInput) -> Result<(), AptError> {
    let l = &deb.locked;
    let (found, found_size) = hash_file(&deb.path)?;
    if found != l.sha256 || found_size != l.size {
        return Err(AptError::HashMismatch(Box::new(super::Mismatch {
            what: format!("package {} {}", l.name, l.version),
            url: deb.path.display().to_string(),
            expected: l.sha256,
            found,
            expected_size: l.size,
            found_size,
            tried: Vec::new(),
            index: false,
        })));
    }
    Ok(())
}

/// Reads one .deb: verified against the lock, its control and md5sums, its data tar spooled.
fn read_deb(deb: &DebInput, pkg: usize, spool: &mut Spool) -> Result<DebRead, AptError> {
    let l = &deb.locked;
    let package = l.name.as_str();
    let bad = |reason: String| AptError::Deb {
        package: package.to_string(),
        reason,
    };
    // 1. The whole file against the lock, before anything in it is believed.
    check_whole(deb)?;
    // 2. The ar container.
    let mut f = fs_err::File::open(&deb.path).map_err(io_err(&deb.path))?;
    let members = ar_members(&mut f, package)?;
    let member = |prefix: &str| members.iter().find(|m| m.name.starts_with(prefix));
    let db = member("debian-binary").ok_or_else(|| bad("no debian-binary member".into()))?;
    let mut version = vec![0u8; db.size.min(64) as usize];
    f.seek(SeekFrom::Start(db.offset))
        .map_err(io_err(&deb.path))?;
    f.read_exact(&mut version).map_err(io_err(&deb.path))?;
    if !version.starts_with(b"2.") {
        return Err(bad(format!(
            "unsupported .deb format version `{}`",
            String::from_utf8_lossy(&version).trim()
        )));
    }
    // 3. control.tar: the control paragraph and md5sums.
    let ctl = member("control.tar").ok_or_else(|| bad("no control.tar member".into()))?;
    let (control, md5sums) = read_control(&mut f, ctl, package)?;
    let paragraphs = parse_paragraphs(&control).map_err(|source| AptError::Control {
        what: format!("package {package}: control"),
        source,
    })?;
    let para = paragraphs
        .first()
        .ok_or_else(|| bad("empty control file".into()))?;
    for (field, want) in [
        ("Package", l.name.as_str()),
        ("Version", l.version.as_str()),
        ("Architecture", l.architecture.as_str()),
    ] {
        if para.get(field) != Some(want) {
            return Err(bad(format!(
                "its control says {field}: {}, the lock says {want}",
                para.get(field).unwrap_or("(none)")
            )));
        }
    }
    // 4. data.tar, streamed.
    let data = member("data.tar").ok_or_else(|| bad("no data.tar member".into()))?;
    if !matches!(
        data.name.as_str(),
        "data.tar" | "data.tar.xz" | "data.tar.gz" | "data.tar.zst"
    ) {
        return Err(bad(format!("unsupported data member `{}`", data.name)));
    }
    f.seek(SeekFrom::Start(data.offset))
        .map_err(io_err(&deb.path))?;
    let raw = BufReader::with_capacity(256 * 1024, (&mut f).take(data.size));
    let dec = decoder(&data.name, Box::new(raw)).map_err(|source| AptError::Decompress {
        what: format!("package {package}: {}", data.name),
        source,
    })?;
    let mut archive = crate::tarbound::archive(dec);
    let tar_err = |source: io::Error| AptError::Decompress {
        what: format!("package {package}: {}", data.name),
        source,
    };
    let mut own: BTreeMap<String, Item> = BTreeMap::new();
    let mut order = Vec::new();
    for entry in archive.entries().map_err(tar_err)? {
        let mut entry = entry.map_err(tar_err)?;
        let raw_path =
            String::from_utf8(entry.path_bytes().into_owned()).map_err(|_| AptError::DebPath {
                package: package.to_string(),
                path: String::from_utf8_lossy(&entry.path_bytes()).into_owned(),
                reason: "path is not UTF-8".into(),
            })?;
        let Some(path) = normalize(&raw_path, package)? else {
            continue;
        };
        let h = entry.header();
        let mode = h.mode().map_err(tar_err)? & 0o7777;
        let uid = u32::try_from(h.uid().map_err(tar_err)?).unwrap_or(u32::MAX);
        let gid = u32::try_from(h.gid().map_err(tar_err)?).unwrap_or(u32::MAX);
        let etype = h.entry_type();
        let bad_path = |reason: &str| AptError::DebPath {
            package: package.to_string(),
            path: raw_path.clone(),
            reason: reason.to_string(),
        };
        let link = match etype {
            tar::EntryType::Symlink | tar::EntryType::Link => {
                let b = entry
                    .link_name_bytes()
                    .ok_or_else(|| bad_path("link without a target"))?;
                String::from_utf8(b.into_owned())
                    .map_err(|_| bad_path("link target is not UTF-8"))?
            }
            _ => String::new(),
        };
        let kind = match etype {
            tar::EntryType::Directory => Kind::Dir,
            tar::EntryType::Symlink => Kind::Symlink(link),
            tar::EntryType::Link => {
                let t = normalize(&link, package)?
                    .ok_or_else(|| bad_path("hardlink to the root directory"))?;
                Kind::Hardlink(t)
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let (span, digest) = spool.append(&mut entry).map_err(tar_err)?;
                Kind::File(span, digest)
            }
            tar::EntryType::Char | tar::EntryType::Block => {
                return Err(bad_path("device nodes cannot be put in a layer"))
            }
            tar::EntryType::Fifo => return Err(bad_path("FIFOs cannot be put in a layer")),
            other => {
                return Err(AptError::DebPath {
                    package: package.to_string(),
                    path: raw_path.clone(),
                    reason: format!("unsupported tar entry type {other:?}"),
                })
            }
        };
        let item = Item {
            kind,
            mode,
            uid,
            gid,
            pkg,
        };
        if let Some(prev) = own.get(&path) {
            // A path twice in one data tar.
            if !(prev.kind == Kind::Dir && item.kind == Kind::Dir) {
                return Err(bad_path("appears twice in the data tar"));
            }
            continue;
        }
        order.push(path.clone());
        own.insert(path, item);
    }
    Ok(DebRead {
        own,
        order,
        control: para.clone(),
        md5sums,
    })
}

/// One read .deb's paths where they go (through the merged-/usr links: `bin/x` at
/// `usr/bin/x`, except the links themselves), with its `status.d` records and, with `dpkg_db`,
/// its `info/` files. Returns them and its control paragraph.
fn install(
    r: DebRead,
    pkg: usize,
    usr: &UsrMerge,
    dpkg_db: bool,
    spool: &mut Spool,
    package: &str,
) -> Result<(BTreeMap<String, Item>, super::control::Paragraph), AptError> {
    let mut own: BTreeMap<String, Item> = BTreeMap::new();
    for (raw, mut item) in r.own {
        let link = match &item.kind {
            Kind::Symlink(t) => usrmerge::merge_link(&raw, t).is_some(),
            _ => false,
        };
        let path = if link { raw.clone() } else { usr.rewrite(&raw) };
        if let Kind::Hardlink(t) = &item.kind {
            item.kind = Kind::Hardlink(usr.rewrite(t));
        }
        if let Some(prev) = own.get(&path) {
            if !(prev.kind == Kind::Dir && item.kind == Kind::Dir) {
                return Err(AptError::DebPath {
                    package: package.to_string(),
                    path: raw,
                    reason: format!("lands on `{path}`, which the package also ships (after merged-/usr rewriting)"),
                });
            }
            continue;
        }
        own.insert(path, item);
    }
    // Hardlinks must point at a regular file of the same package.
    for (p, it) in &own {
        if let Kind::Hardlink(t) = &it.kind {
            if !matches!(own.get(t).map(|x| &x.kind), Some(Kind::File(..))) {
                return Err(AptError::DebPath {
                    package: package.to_string(),
                    path: p.clone(),
                    reason: format!(
                        "hardlink to `{t}`, which is not a regular file of the package"
                    ),
                });
            }
        }
    }
    // status.d records; dpkg's info files.
    let dir = "var/lib/dpkg/status.d";
    let para = &r.control;
    let md5sums = r.md5sums;
    let record = status_record(para);
    own.insert(
        format!("{dir}/{package}"),
        small_file(spool, record.as_bytes(), pkg)?,
    );
    if let Some(md5) = &md5sums {
        let text = rewrite_md5sums(md5, usr);
        own.insert(
            format!("{dir}/{package}.md5sums"),
            small_file(spool, text.as_bytes(), pkg)?,
        );
    }
    if dpkg_db {
        let name = dpkgdb::info_name(para);
        let list = dpkgdb::list_file(r.order.iter().map(String::as_str));
        let mut files = vec![(format!("{}/{name}.list", dpkgdb::INFO), list)];
        if let Some(m) = &md5sums {
            files.push((format!("{}/{name}.md5sums", dpkgdb::INFO), m.clone()));
        }
        for (path, text) in files {
            own.insert(path, small_file(spool, text.as_bytes(), pkg)?);
        }
    }
    Ok((own, r.control))
}

fn small_file(spool: &mut Spool, data: &[u8], pkg: usize) -> Result<Item, AptError> {
    let (span, digest) = spool.append_bytes(data)?;
    Ok(Item {
        kind: Kind::File(span, digest),
        mode: 0o644,
        uid: 0,
        gid: 0,
        pkg,
    })
}

/// The package's control paragraph with `Status: install ok installed` after `Package`.
fn status_record(p: &super::control::Paragraph) -> String {
    let mut out = super::control::Paragraph::default();
    for (k, v) in p.fields() {
        if k.eq_ignore_ascii_case("Status") {
            continue;
        }
        out.set(k, v);
        if k.eq_ignore_ascii_case("Package") {
            out.set("Status", "install ok installed");
        }
    }
    out.to_text()
}

/// md5sums lines are `MD5  PATH`; PATH is rewritten for merged-/usr.
fn rewrite_md5sums(text: &str, usr: &UsrMerge) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        match line.split_once("  ") {
            Some((sum, path)) => {
                let p = path.trim_start_matches("./").trim_start_matches('/');
                out.push_str(sum);
                out.push_str("  ");
                out.push_str(&usr.rewrite(p));
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// The regular files of the (compressed) tar member `m` whose names `wanted` accepts, each
/// read in full; at most `limit` bytes of the decompressed tar are read. Used for control.tar
/// here and by `scripts`.
pub(super) fn member_files(
    f: &mut fs_err::File,
    m: &Member,
    package: &str,
    limit: u64,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Vec<(String, Vec<u8>)>, AptError> {
    let path = f.path().to_path_buf();
    f.seek(SeekFrom::Start(m.offset)).map_err(io_err(&path))?;
    let what = format!("package {package}: {}", m.name);
    let err = |source: io::Error| AptError::Decompress {
        what: what.clone(),
        source,
    };
    let dec = decoder(&m.name, Box::new(BufReader::new(f.take(m.size)))).map_err(err)?;
    let mut archive = crate::tarbound::archive(dec.take(limit));
    let mut out = Vec::new();
    for entry in archive.entries().map_err(err)? {
        let mut entry = entry.map_err(err)?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let name = name.trim_start_matches("./").to_string();
        if !wanted(&name) || entry.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).map_err(err)?;
        out.push((name, bytes));
    }
    Ok(out)
}

/// Reads `control` and `md5sums` from the control.tar member.
fn read_control(
    f: &mut fs_err::File,
    m: &Member,
    package: &str,
) -> Result<(String, Option<String>), AptError> {
    let text = |bytes: Vec<u8>, file: &str| {
        String::from_utf8(bytes).map_err(|_| AptError::Deb {
            package: package.to_string(),
            reason: format!("`{file}` in {} is not UTF-8", m.name),
        })
    };
    let (mut control, mut md5sums) = (None, None);
    for (name, bytes) in member_files(f, m, package, MAX_CONTROL, &|n| {
        n == "control" || n == "md5sums"
    })? {
        if name == "control" {
            control = Some(text(bytes, "control")?);
        } else {
            md5sums = Some(text(bytes, "md5sums")?);
        }
    }
    let control = control.ok_or_else(|| AptError::Deb {
        package: package.to_string(),
        reason: format!("no `control` file in {}", m.name),
    })?;
    Ok((control, md5sums))
}

/// Merges one package's items into the layer's: directories merge (first wins), identical
/// files and symlinks are fine, anything else is a conflict naming both packages.
fn merge(
    items: &mut BTreeMap<String, Item>,
    own: BTreeMap<String, Item>,
    names: &[String],
) -> Result<(), AptError> {
    for (path, it) in own {
        match items.get(&path) {
            None => {
                items.insert(path, it);
            }
            Some(prev) => {
                let same = match (&prev.kind, &it.kind) {
                    (Kind::Dir, Kind::Dir) => true,
                    (Kind::File(s1, d1), Kind::File(s2, d2)) => {
                        s1.size == s2.size
                            && d1 == d2
                            && (prev.mode, prev.uid, prev.gid) == (it.mode, it.uid, it.gid)
                    }
                    (Kind::Symlink(a), Kind::Symlink(b)) => a == b,
                    _ => false,
                };
                if !same {
                    return Err(AptError::PathConflict {
                        path,
                        first: names[prev.pkg].clone(),
                        second: names[it.pkg].clone(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// Sorted layer entries: synthesized ancestors, hardlink groups led by their first path.
/// Where `update-ca-certificates` (ca-certificates' maintainer script) writes its bundle.
pub const CA_BUNDLE: &str = "etc/ssl/certs/ca-certificates.crt";

/// Stands in for ca-certificates' postinst, which is not run: when the layer ships certificates
/// under `usr/share/ca-certificates/` and no bundle, writes `etc/ssl/certs/ca-certificates.crt`
/// as `update-ca-certificates` would with every shipped certificate enabled: their PEM texts
/// concatenated in path order, each ending in a newline. OpenSSL (and so Python's `ssl`) finds
/// it through `/usr/lib/ssl/cert.pem`.
fn ca_bundle(items: &mut BTreeMap<String, Item>, spool: &mut Spool) -> Result<(), AptError> {
    const SHARE: &str = "usr/share/ca-certificates/";
    if items.contains_key(CA_BUNDLE) {
        return Ok(());
    }
    let certs: Vec<(String, Span, usize)> = items
        .iter()
        .filter_map(|(p, it)| match &it.kind {
            Kind::File(span, _) if p.starts_with(SHARE) && p.ends_with(".crt") => {
                Some((p.clone(), *span, it.pkg))
            }
            _ => None,
        })
        .collect();
    let Some(pkg) = certs.first().map(|c| c.2) else {
        return Ok(());
    };
    let mut bundle = Vec::new();
    for (_, span, _) in &certs {
        let mut pem = spool.read(*span)?;
        if !pem.ends_with(b"\n") {
            pem.push(b'\n');
        }
        bundle.extend_from_slice(&pem);
    }
    let (span, digest) = spool.append_bytes(&bundle)?;
    items.insert(
        CA_BUNDLE.to_string(),
        Item {
            kind: Kind::File(span, digest),
            mode: 0o644,
            uid: 0,
            gid: 0,
            pkg,
        },
    );
    Ok(())
}

/// Returns them with, for each, where its content is in the spool (`spool`: the path a file
/// entry names; a default span for the others).
fn to_entries(
    mut items: BTreeMap<String, Item>,
    names: &[String],
    spool: &Path,
) -> Result<(Vec<Entry>, Vec<Span>), AptError> {
    // Hardlink groups: the root file and the paths linking to it; the smallest path carries
    // the content, the others link to it.
    let mut groups: HashMap<String, Vec<String>> = HashMap::new();
    for (p, it) in &items {
        if let Kind::Hardlink(t) = &it.kind {
            groups.entry(t.clone()).or_default().push(p.clone());
        }
    }
    for (root, links) in groups {
        let first = links.iter().min().cloned().unwrap_or_default();
        if first < root {
            let Some(root_item) = items.get(&root).cloned() else {
                continue;
            };
            let root_link = Item {
                kind: Kind::Hardlink(first.clone()),
                ..root_item.clone()
            };
            items.insert(first.clone(), root_item);
            items.insert(root, root_link);
            for l in links.iter().filter(|l| **l != first) {
                if let Some(it) = items.get_mut(l) {
                    it.kind = Kind::Hardlink(first.clone());
                }
            }
        }
    }
    // Ancestors every path needs.
    // (ancestor, the package of a path beneath it)
    let mut dirs: Vec<(String, usize)> = Vec::new();
    for (p, it) in &items {
        let mut cur = p.as_str();
        while let Some(i) = cur.rfind('/') {
            cur = &cur[..i];
            dirs.push((cur.to_string(), it.pkg));
        }
    }
    for (d, child_pkg) in dirs {
        match items.get(&d) {
            Some(it) if it.kind != Kind::Dir => {
                // E.g. a symlink (or file) in one package, a path beneath it in another: the
                // layer would write through the symlink.
                return Err(AptError::PathConflict {
                    path: d,
                    first: format!("{} (not a directory)", names[it.pkg]),
                    second: format!("{} (files beneath it)", names[child_pkg]),
                });
            }
            Some(_) => {}
            None => {
                items.insert(
                    d,
                    Item {
                        kind: Kind::Dir,
                        mode: 0o755,
                        uid: 0,
                        gid: 0,
                        pkg: 0,
                    },
                );
            }
        }
    }
    let mut out: Vec<(Entry, Span)> = items
        .into_iter()
        .map(|(path, it)| {
            let (path, kind, span) = match it.kind {
                Kind::Dir => (format!("{path}/"), EntryKind::Dir, Span::default()),
                Kind::File(span, _) => {
                    let src = spool.to_path_buf();
                    let size = span.size;
                    (path, EntryKind::File { src, size }, span)
                }
                Kind::Symlink(target) => (path, EntryKind::Symlink { target }, Span::default()),
                Kind::Hardlink(target) => (path, EntryKind::Hardlink { target }, Span::default()),
            };
            let entry = Entry {
                path,
                kind,
                mode: it.mode,
                uid: it.uid,
                gid: it.gid,
                stat: StatKey::default(),
            };
            (entry, span)
        })
        .collect();
    // Directory paths end in "/", which changes byte order against siblings ("a/" vs "a-b"):
    // sort by the final tar path, as the contract requires.
    out.sort_by(|a, b| a.0.path.as_bytes().cmp(b.0.path.as_bytes()));
    Ok(out.into_iter().unzip())
}

mod ar;
mod drop;
mod prune;

pub(super) use ar::{ar_members, Member};

#[cfg(test)]
mod tests;
