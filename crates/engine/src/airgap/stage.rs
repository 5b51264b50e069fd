//! Staging for a build: the lock's inputs the store lacks, copied in from a vendor directory
//! (verified), all or nothing.

use super::inputs::{deb_url, parse_manifest};
use super::*;

// ---------------------------------------------------------------------------------------------
// Staging for a build

/// What [`stage`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Staged {
    /// Blobs copied from the vendor directory into the store.
    pub blobs: usize,
    pub bytes: u64,
}

struct Pending {
    writer: BlobWriter,
    digest: Digest,
}

/// Copy into `store` every blob of `inputs` it lacks, from `vendor` (each verified against the
/// lock's digest, through the index entry for the input's origin, which must agree with the
/// lock). All or nothing: blobs are committed to the store only when every one was found and
/// verified. `offline`: an input in neither place is an error naming it; online, it is left
/// for the build to fetch.
pub fn stage(
    inputs: &[Input],
    vendor: Option<&VendorDir>,
    store: &Store,
    offline: bool,
) -> Result<Staged, VendorError> {
    let mut pending: Vec<Pending> = Vec::new();
    let mut staged = Staged::default();
    let missing = |what: String| -> Result<(), VendorError> {
        if offline {
            Err(VendorError::Offline { input: what })
        } else {
            Ok(())
        }
    };
    for input in inputs {
        let key = match input {
            Input::Base(b) => format!("oci {}@{}", b.reference, b.manifest_digest),
            Input::Deb(d) => format!(
                "deb {} {} {} {}",
                d.name,
                d.version,
                d.architecture,
                deb_url(d)
            ),
            Input::Archive { url, .. } => format!("url {url}"),
            Input::Wheel(w) => format!("wheel {} {} {} {}", w.name, w.version, w.filename, w.url),
        };
        let entry = vendor.and_then(|v| v.index.entries.get(&key).map(|e| (v, e)));
        let expected = match input {
            Input::Base(b) => b.manifest_digest,
            Input::Deb(d) => d.sha256,
            Input::Archive { sha256, .. } => *sha256,
            Input::Wheel(w) => w.sha256,
        };
        if let Some((v, e)) = entry {
            if e.digest() != expected {
                return Err(VendorError::Disagrees {
                    dir: v.root.clone(),
                    entry: key,
                    expected,
                    found: e.digest(),
                });
            }
        }
        // Copy one blob from the vendor directory into a pending store writer, verified.
        let mut take = |d: &Digest, what: String| -> Result<Option<Vec<u8>>, VendorError> {
            if store.has_blob(d) || pending.iter().any(|p| p.digest == *d) {
                return Ok(None);
            }
            let Some((v, e)) = entry else {
                missing(what)?;
                return Ok(None);
            };
            let declared = e.blobs().into_iter().find(|(b, _)| b == d).map(|(_, n)| n);
            let f = open_blob(v, &key, d, declared)?;
            let mut w = store.blob_writer()?;
            // No more than the index declares (a file growing meanwhile is cut, then caught
            // by its digest).
            let f = f.take(declared.unwrap_or(u64::MAX));
            let mut r = HashingReader::new(io::BufReader::new(f));
            let mut small = Vec::new();
            io::copy(&mut (&mut r).take(1 << 22), &mut small)?;
            io::Write::write_all(&mut w, &small)?;
            io::copy(&mut r, &mut w)?;
            let (_, found, size) = r.finish();
            if found != *d {
                return Err(VendorError::Corrupt {
                    dir: v.root.clone(),
                    entry: key.clone(),
                    digest: *d,
                    found,
                    size,
                });
            }
            staged.blobs += 1;
            staged.bytes += size;
            pending.push(Pending {
                writer: w,
                digest: *d,
            });
            Ok(Some(small))
        };
        match input {
            Input::Base(b) => {
                let d = b.manifest_digest;
                let bytes = if store.has_blob(&d) {
                    Some(store.read_blob(&d)?)
                } else {
                    take(&d, format!("base {key} manifest {d}", key = &key[4..]))?
                };
                let Some(bytes) = bytes else { continue };
                let head = parse_manifest(&bytes, &b.reference, &d)?;
                for blob in std::iter::once(&head.config).chain(&head.layers) {
                    take(
                        &blob.digest,
                        format!("base {} blob {}", &key[4..], blob.digest),
                    )?;
                }
            }
            _ => {
                take(&expected, input.describe())?;
            }
        }
    }
    for p in pending {
        p.writer.commit(Some(p.digest))?;
    }
    Ok(staged)
}

/// Opens vendor blob `d` of entry `key` for reading: a regular file (not a symlink, a FIFO, a
/// device: opened without following a link or blocking, and checked through the handle), of
/// the size the index declares for it when it declares one.
fn open_blob(
    v: &VendorDir,
    key: &str,
    d: &Digest,
    declared: Option<u64>,
) -> Result<std::fs::File, VendorError> {
    // Nothing below the vendor directory is followed: a symlinked blob or `blobs/sha256` is
    // refused, naming it ([`crate::fsat`]); a FIFO is opened without blocking, then refused.
    let hex = d.hex();
    let f = match crate::fsat::open_regular_beneath(&v.root, &["blobs", "sha256", &hex]) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(VendorError::MissingBlob {
                dir: v.root.clone(),
                entry: key.to_string(),
                digest: *d,
            })
        }
        Err(e) => {
            return Err(VendorError::BadEntry {
                dir: v.root.clone(),
                entry: key.to_string(),
                problem: format!("blob {d}: {e}; vendor the input again"),
            })
        }
    };
    let m = f.metadata()?;
    if let Some(expected) = declared.filter(|n| *n != m.len()) {
        return Err(VendorError::Size {
            dir: v.root.clone(),
            entry: key.to_string(),
            digest: *d,
            expected,
            found: m.len(),
        });
    }
    Ok(f)
}
