//! A lock's inputs ([`Input`]), fetched into the store and copied into a vendor directory;
//! merging and checking vendor directories.

use super::*;

// ---------------------------------------------------------------------------------------------
// A lock's inputs

/// One locked input.
#[derive(Clone, Debug)]
pub enum Input {
    Base(LockedBase),
    Deb(LockedDeb),
    /// The `[python]` archive: the URL as the lock records it, and where to fetch it from
    /// (the recipe's resolved URL: a relative path becomes `file://`).
    Archive {
        url: String,
        fetch_url: String,
        sha256: Digest,
    },
    Wheel(LockedWheel),
}

impl Input {
    /// How messages name it (`base REF@DIGEST`, `deb NAME VERSION ARCH (URL)`, …).
    pub fn describe(&self) -> String {
        match self {
            Input::Base(b) => format!("base {}@{}", b.reference, b.manifest_digest),
            Input::Deb(d) => format!(
                "deb {} {} {} ({})",
                d.name,
                d.version,
                d.architecture,
                deb_url(d)
            ),
            Input::Archive { url, .. } => format!("python archive {url}"),
            Input::Wheel(w) => format!("wheel {} ({})", w.filename, w.url),
        }
    }
}

pub(super) fn deb_url(d: &LockedDeb) -> String {
    crate::http::join_url(&d.source_url, &d.filename)
}

/// Every input `lock` pins, in lock order. `archive_fetch_url`: where the recipe says the
/// interpreter archive is (the lock records the URL as written, which may be relative).
pub fn inputs(lock: &Lock, archive_fetch_url: Option<&str>) -> Vec<Input> {
    let mut v = Vec::new();
    if let Some(b) = &lock.base {
        v.push(Input::Base(b.clone()));
    }
    if let Some(a) = &lock.apt {
        v.extend(a.packages.iter().cloned().map(Input::Deb));
    }
    if let Some(p) = &lock.python {
        v.push(Input::Archive {
            url: p.url.clone(),
            fetch_url: archive_fetch_url.unwrap_or(&p.url).to_string(),
            sha256: p.sha256,
        });
    }
    // A wheel built from an sdist: the sdist is the input (its step builds the wheel again).
    // `[python] project`'s is built from the recipe's own files, as a `[[layer]]` is: none.
    v.extend(
        lock.wheels
            .iter()
            .filter(|w| !crate::system::project::is_project_wheel(w))
            .map(|w| {
                Input::Wheel(match &w.built_from {
                    Some(b) => LockedWheel {
                        filename: w.url.rsplit('/').next().unwrap_or(&w.url).to_string(),
                        sha256: b.sha256,
                        size: 0,
                        built_from: None,
                        ..w.clone()
                    },
                    None => w.clone(),
                })
            }),
    );
    // A multi-platform lock's whole file: every platform's inputs (callers that check the
    // lock pass each platform's view instead).
    for name in lock.platforms.keys() {
        v.extend(inputs(&lock.view(name), archive_fetch_url));
    }
    v
}

/// Where `vendor` fetches what the store lacks.
pub struct Online<'a> {
    pub client: &'a Client,
    pub fetcher: &'a dyn Fetcher,
    /// Where the registry's downloads and retries are reported.
    pub reporter: &'a dyn crate::progress::Reporter,
}

pub(super) fn parse_manifest(
    bytes: &[u8],
    reference: &str,
    digest: &Digest,
) -> Result<ManifestHead, VendorError> {
    serde_json::from_slice(bytes).map_err(|e| VendorError::BadManifest {
        reference: reference.to_string(),
        digest: *digest,
        problem: format!("not an image manifest: {e}"),
    })
}

fn blob_ref(d: &Descriptor) -> BlobRef {
    BlobRef {
        media_type: d.media_type.clone(),
        digest: d.digest,
        size: d.size,
    }
}

/// Fetch `url` into the store, verified against `expected`, unless the store has it.
fn fetch_url(
    fetcher: &dyn Fetcher,
    store: &Store,
    url: &str,
    expected: &Digest,
    input: &str,
) -> Result<(), VendorError> {
    if store.has_blob(expected) {
        return Ok(());
    }
    let r = fetcher
        .open(url)
        .map_err(AptError::from)?
        .ok_or_else(|| VendorError::NotFound {
            input: input.to_string(),
            url: url.to_string(),
        })?;
    let mut w = store.blob_writer()?;
    let mut hr = HashingReader::new(r);
    io::copy(&mut hr, &mut w).map_err(|source| AptError::Read {
        url: url.to_string(),
        source,
    })?;
    let (_, found, _) = hr.finish();
    if found != *expected {
        return Err(VendorError::Mismatch {
            input: input.to_string(),
            expected: *expected,
            found,
        });
    }
    w.commit(Some(*expected))?;
    Ok(())
}

/// Make sure `input` is in the store (fetching it online when it is not) and describe it as an
/// index entry.
pub fn fetch_input(
    input: &Input,
    store: &Store,
    online: &Online<'_>,
) -> Result<Entry, VendorError> {
    let size_of = |d: &Digest| -> Result<u64, VendorError> {
        Ok(fs_err::metadata(store.blob_path(d))?.len())
    };
    match input {
        Input::Base(b) => {
            let r: Reference = b.reference.parse().map_err(RegistryError::from)?;
            let get = |d: &Digest| -> Result<Vec<u8>, VendorError> {
                if !store.has_blob(d) {
                    let m = online.client.get_manifest(&r.with_digest(*d))?;
                    store.put_bytes(&m.bytes)?;
                }
                Ok(store.read_blob(d)?)
            };
            let index = match &b.index_digest {
                Some(d) => {
                    let bytes = get(d)?;
                    let media_type = serde_json::from_slice::<serde_json::Value>(&bytes)
                        .ok()
                        .and_then(|v| v["mediaType"].as_str().map(str::to_string))
                        .unwrap_or_else(|| crate::image::MEDIA_TYPE_INDEX.to_string());
                    Some(BlobRef {
                        media_type,
                        digest: *d,
                        size: bytes.len() as u64,
                    })
                }
                None => None,
            };
            let bytes = get(&b.manifest_digest)?;
            let head = parse_manifest(&bytes, &b.reference, &b.manifest_digest)?;
            let mut blobs = vec![head.config.clone()];
            blobs.extend(head.layers.iter().cloned());
            online
                .client
                .pull_blobs(&r, &blobs, store, online.reporter)?;
            Ok(Entry::Oci {
                reference: b.reference.clone(),
                platform: b.platform.clone(),
                media_type: head
                    .media_type
                    .unwrap_or_else(|| crate::image::MEDIA_TYPE_MANIFEST.to_string()),
                digest: b.manifest_digest,
                size: bytes.len() as u64,
                index,
                config: blob_ref(&head.config),
                layers: head.layers.iter().map(blob_ref).collect(),
            })
        }
        Input::Deb(d) => {
            let url = deb_url(d);
            fetch_url(online.fetcher, store, &url, &d.sha256, &input.describe())?;
            Ok(Entry::Deb {
                name: d.name.clone(),
                version: d.version.clone(),
                architecture: d.architecture.clone(),
                url,
                digest: d.sha256,
                size: size_of(&d.sha256)?,
            })
        }
        Input::Archive {
            url,
            fetch_url: from,
            sha256,
        } => {
            fetch_url(online.fetcher, store, from, sha256, &input.describe())?;
            Ok(Entry::Url {
                url: url.clone(),
                digest: *sha256,
                size: size_of(sha256)?,
            })
        }
        Input::Wheel(w) => {
            fetch_url(online.fetcher, store, &w.url, &w.sha256, &input.describe())?;
            Ok(Entry::Wheel {
                name: w.name.clone(),
                version: w.version.clone(),
                filename: w.filename.clone(),
                url: w.url.clone(),
                digest: w.sha256,
                size: size_of(&w.sha256)?,
            })
        }
    }
}

/// The lock's .debs and wheels that `store` lacks, fetched into it (each verified against its
/// sha256): what the SBOM reads their declared licences from, so that it does not depend on
/// what a store happens to hold; `needed` says which (by sha256) are. The number fetched.
pub fn fetch_packages(
    lock: &Lock,
    store: &Store,
    fetcher: &dyn Fetcher,
    needed: &dyn Fn(&Digest) -> bool,
) -> Result<usize, VendorError> {
    let mut fetched = 0;
    for input in inputs(lock, None) {
        let (url, sha256) = match &input {
            Input::Deb(d) => (deb_url(d), d.sha256),
            Input::Wheel(w) => (w.url.clone(), w.sha256),
            Input::Base(_) | Input::Archive { .. } => continue,
        };
        if !store.has_blob(&sha256) && needed(&sha256) {
            fetch_url(fetcher, store, &url, &sha256, &input.describe())?;
            fetched += 1;
        }
    }
    Ok(fetched)
}

/// Copy every input of `inputs` into `dir` (fetching into `store` first what it lacks) and
/// add them to its index; the caller saves the index ([`VendorDir::save`]).
pub fn vendor(
    dir: &mut VendorDir,
    inputs: &[Input],
    store: &Store,
    online: &Online<'_>,
    stats: &mut Stats,
) -> Result<(), VendorError> {
    for input in inputs {
        let entry = fetch_input(input, store, online)?;
        dir.add(entry, store, stats)?;
    }
    Ok(())
}

/// Merge the vendor directory `src` into `dir`: every blob verified (hashed) before it is
/// linked or copied; a conflicting entry (same origin, other digest) fails before anything is
/// written. The caller saves the index.
pub fn merge(dir: &mut VendorDir, src: &VendorDir, stats: &mut Stats) -> Result<(), VendorError> {
    for (key, e) in &src.index.entries {
        if let Some(old) = dir.index.entries.get(key) {
            if old.digest() != e.digest() {
                return Err(VendorError::Conflict {
                    dir: dir.root.clone(),
                    from: src.root.display().to_string(),
                    entry: key.clone(),
                    digests: Box::new(super::Conflicting {
                        existing: old.digest(),
                        incoming: e.digest(),
                    }),
                });
            }
        }
    }
    for (key, e) in &src.index.entries {
        for (d, size) in e.blobs() {
            let path = src.blob_path(&d);
            check_blob(src, key, &d, size, false)?;
            dir.put_blob(&path, Blob { digest: &d, size }, key, true, stats)?;
        }
        if dir.index.entries.insert(key.clone(), e.clone()).is_none() {
            stats.new_entries += 1;
        }
    }
    Ok(())
}

/// The blob `d` of entry `key`: present, `size` bytes, and (unless `quick`) hashing to `d`.
fn check_blob(
    dir: &VendorDir,
    key: &str,
    d: &Digest,
    size: u64,
    quick: bool,
) -> Result<(), VendorError> {
    let path = dir.blob_path(d);
    let meta = match fs_err::metadata(&path) {
        Ok(m) if m.is_file() => m,
        _ => {
            return Err(VendorError::MissingBlob {
                dir: dir.root.clone(),
                entry: key.to_string(),
                digest: *d,
            })
        }
    };
    if !quick {
        let (found, n) = hash_file(&path)?;
        if found != *d {
            return Err(VendorError::Corrupt {
                dir: dir.root.clone(),
                entry: key.to_string(),
                digest: *d,
                found,
                size: n,
            });
        }
    }
    if meta.len() != size {
        return Err(VendorError::Size {
            dir: dir.root.clone(),
            entry: key.to_string(),
            digest: *d,
            expected: size,
            found: meta.len(),
        });
    }
    Ok(())
}

/// What [`check`] looked at.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    pub entries: usize,
    pub blobs: usize,
    pub bytes: u64,
    /// Files under `blobs/sha256/` no entry names (harmless; reported).
    pub unreferenced: Vec<String>,
}

/// Re-hash every blob every entry names; check sizes, and that an `oci` entry's manifest
/// names exactly its config and layers. The first problem is the error.
pub fn check(dir: &VendorDir) -> Result<CheckReport, VendorError> {
    let mut report = CheckReport {
        entries: dir.index.entries.len(),
        ..CheckReport::default()
    };
    let mut seen = std::collections::BTreeSet::new();
    for (key, e) in &dir.index.entries {
        for (d, size) in e.blobs() {
            if seen.insert(d) {
                check_blob(dir, key, &d, size, false)?;
                report.blobs += 1;
                report.bytes += size;
            } else {
                check_blob(dir, key, &d, size, true)?;
            }
        }
        if let Entry::Oci {
            reference,
            digest,
            config,
            layers,
            ..
        } = e
        {
            let bytes = fs_err::read(dir.blob_path(digest))?;
            let head = parse_manifest(&bytes, reference, digest)?;
            let named: Vec<BlobRef> = head.layers.iter().map(blob_ref).collect();
            if head.config.digest != config.digest
                || named
                    .iter()
                    .map(|b| b.digest)
                    .ne(layers.iter().map(|b| b.digest))
            {
                return Err(VendorError::BadEntry {
                    dir: dir.root.clone(),
                    entry: key.clone(),
                    problem: "its config or layers are not the ones its manifest names".into(),
                });
            }
        }
    }
    if let Ok(rd) = fs_err::read_dir(dir.blob_dir()) {
        let mut extra: Vec<String> = rd
            .filter_map(std::result::Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !seen.iter().any(|d| d.hex() == *n))
            .collect();
        extra.sort();
        report.unreferenced = extra;
    }
    Ok(report)
}
