//! A .deb's `usr/share/doc/PKG/copyright`, read from its data member (never installed or
//! extracted): what the SBOMs' declared licences come from ([`crate::audit::license`]).

use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use super::deb::{ar_members, io_err, member_files};
use super::release::decoder;
use super::AptError;

/// The most bytes of the decompressed data tar read while looking for the file.
const MAX_DATA: u64 = 4 << 30;
/// The most bytes of the copyright file read.
const MAX_COPYRIGHT: u64 = 1 << 20;
/// The most bytes of the decompressed control tar read for its `control` file.
const MAX_CONTROL: u64 = 16 << 20;

/// The text of `package`'s `usr/share/doc/PACKAGE/copyright` in the .deb at `path`; None when
/// it has none as a regular file (a symlink to another package's is not followed).
pub fn read(path: &Path, package: &str) -> Result<Option<String>, AptError> {
    let mut f = fs_err::File::open(path).map_err(io_err(path))?;
    let members = ar_members(&mut f, package)?;
    let data = members
        .iter()
        .find(|m| m.name.starts_with("data.tar"))
        .ok_or_else(|| AptError::Deb {
            package: package.to_string(),
            reason: "no data.tar member".into(),
        })?;
    f.seek(SeekFrom::Start(data.offset)).map_err(io_err(path))?;
    let what = format!("package {package}: {}", data.name);
    let err = |source: std::io::Error| AptError::Decompress {
        what: what.clone(),
        source,
    };
    let raw = BufReader::with_capacity(256 * 1024, (&mut f).take(data.size));
    let dec = decoder(&data.name, Box::new(raw)).map_err(err)?;
    let mut archive = crate::tarbound::archive(dec.take(MAX_DATA));
    let wanted = format!("usr/share/doc/{package}/copyright");
    for entry in archive.entries().map_err(err)? {
        let entry = entry.map_err(err)?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        if name.trim_start_matches("./").trim_start_matches('/') != wanted {
            continue;
        }
        if entry.header().entry_type() != tar::EntryType::Regular {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        entry
            .take(MAX_COPYRIGHT)
            .read_to_end(&mut bytes)
            .map_err(err)?;
        return Ok(Some(String::from_utf8_lossy(&bytes).into_owned()));
    }
    Ok(None)
}

/// The text of the `control` file in the .deb at `path` (its control.tar member): what the
/// SBOMs' suppliers come from (`Maintainer:`).
pub fn control(path: &Path, package: &str) -> Result<Option<String>, AptError> {
    let mut f = fs_err::File::open(path).map_err(io_err(path))?;
    let members = ar_members(&mut f, package)?;
    let Some(m) = members.iter().find(|m| m.name.starts_with("control.tar")) else {
        return Ok(None);
    };
    let files = member_files(&mut f, m, package, MAX_CONTROL, &|n| n == "control")?;
    Ok(files
        .into_iter()
        .next()
        .map(|(_, bytes)| String::from_utf8_lossy(&bytes).into_owned()))
}
