//! Per-file metadata of a layer tar, read in one streaming pass, and the comparison of two
//! entries. Only metadata and content digests are kept, never contents, so memory grows with
//! the number of entries, not with the layer's size.

use std::collections::BTreeMap;
use std::io::{self, Read};

use serde::Serialize;

use crate::digest::{Digest, Hasher};

/// One entry of a layer, as the tar stream describes it (PAX records applied).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileMeta {
    /// `file`, `dir`, `symlink`, `hardlink`, `char`, `block`, `fifo` (else `type X`).
    pub kind: String,
    /// Permission bits (and setuid/setgid/sticky), as four octal digits.
    #[serde(serialize_with = "octal")]
    pub mode: u32,
    pub uid: u64,
    pub gid: u64,
    pub uname: String,
    pub gname: String,
    /// Seconds since the epoch, as written (a PAX `mtime` may have a fraction).
    pub mtime: String,
    pub size: u64,
    /// sha256 of a regular file's content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Digest>,
    /// Symlink or hard-link target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// Extended attributes (PAX `SCHILY.xattr.*` / `LIBARCHIVE.xattr.*`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub xattrs: BTreeMap<String, String>,
    /// PAX records not reflected in the fields above (atime, ctime, comment, …).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub pax: BTreeMap<String, String>,
    /// Header format (`ustar`, `gnu`, `v7`), then `+pax(KEYS)` for the PAX keys the entry had
    /// and `+longname` / `+longlink` for GNU long-name records.
    pub encoding: String,
    /// Position of the entry in the stream (0 = first).
    #[serde(skip)]
    pub position: u64,
}

fn octal<S: serde::Serializer>(mode: &u32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{mode:04o}"))
}

/// The entries of one layer, by normalized path (a later entry for the same path wins).
#[derive(Clone, Debug, Default)]
pub struct LayerIndex {
    pub files: BTreeMap<String, FileMeta>,
    /// Entries read, including repeated paths.
    pub entries: u64,
}

/// PAX keys that the fields of [`FileMeta`] already carry.
const PAX_IN_FIELDS: &[&str] = &[
    "path", "linkpath", "size", "uid", "gid", "uname", "gname", "mtime",
];
/// PAX keys that are timestamps (ignored by a semantic comparison).
const PAX_TIMES: &[&str] = &["atime", "ctime"];

/// `./a/b/`, `/a/b` → `a/b`; the root is `.`.
pub fn normalize_path(p: &str) -> String {
    let mut s = p;
    loop {
        let t = s.trim_start_matches("./").trim_start_matches('/');
        if t == s {
            break;
        }
        s = t;
    }
    let s = s.trim_end_matches('/');
    if s.is_empty() || s == "." {
        ".".to_string()
    } else {
        s.to_string()
    }
}

fn kind_name(t: tar::EntryType) -> String {
    use tar::EntryType as T;
    match t {
        T::Regular | T::Continuous => "file".into(),
        T::Directory => "dir".into(),
        T::Symlink => "symlink".into(),
        T::Link => "hardlink".into(),
        T::Char => "char".into(),
        T::Block => "block".into(),
        T::Fifo => "fifo".into(),
        other => format!("type {}", other.as_byte() as char),
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Read a layer tar once and record every entry's metadata and content digest.
pub fn index_layer(reader: impl Read) -> io::Result<LayerIndex> {
    let mut archive = crate::tarbound::archive(reader);
    let mut index = LayerIndex::default();
    let mut buf = vec![0u8; 256 * 1024];
    for entry in archive.entries()? {
        let mut entry = entry?;
        let t = entry.header().entry_type();
        if matches!(t, tar::EntryType::XGlobalHeader) {
            continue;
        }
        let pax: Vec<(String, Vec<u8>)> = match entry.pax_extensions()? {
            Some(exts) => exts
                .map(|e| e.map(|e| (e.key().unwrap_or("?").to_string(), e.value_bytes().to_vec())))
                .collect::<io::Result<_>>()?,
            None => Vec::new(),
        };
        let pax_map: BTreeMap<&str, &[u8]> = pax
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_slice()))
            .collect();
        let h = entry.header();
        let mut encoding = if h.as_ustar().is_some() {
            "ustar".to_string()
        } else if h.as_gnu().is_some() {
            "gnu".to_string()
        } else {
            "v7".to_string()
        };
        if !pax_map.is_empty() {
            let keys: Vec<&str> = pax_map.keys().copied().collect();
            encoding.push_str(&format!("+pax({})", keys.join(",")));
        }
        let path_bytes = entry.path_bytes().into_owned();
        if !pax_map.contains_key("path") && path_bytes != h.path_bytes().as_ref() {
            encoding.push_str("+longname");
        }
        let link_bytes = entry.link_name_bytes().map(std::borrow::Cow::into_owned);
        if !pax_map.contains_key("linkpath")
            && link_bytes.as_deref() != h.link_name_bytes().as_deref()
        {
            encoding.push_str("+longlink");
        }
        let num = |key: &str, header: io::Result<u64>| -> u64 {
            pax_map
                .get(key)
                .and_then(|v| std::str::from_utf8(v).ok())
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| header.unwrap_or(0))
        };
        let uid = num("uid", h.uid());
        let gid = num("gid", h.gid());
        let text = |key: &str, header: Option<&[u8]>| -> String {
            match pax_map.get(key) {
                Some(v) => lossy(v),
                None => header.map(lossy).unwrap_or_default(),
            }
        };
        let uname = text("uname", h.username_bytes());
        let gname = text("gname", h.groupname_bytes());
        let mtime = match pax_map.get("mtime") {
            Some(v) => lossy(v),
            None => h.mtime().unwrap_or(0).to_string(),
        };
        let mode = h.mode().unwrap_or(0) & 0o7777;
        let mut xattrs = BTreeMap::new();
        let mut other = BTreeMap::new();
        for (k, v) in &pax {
            if let Some(name) = k
                .strip_prefix("SCHILY.xattr.")
                .or_else(|| k.strip_prefix("LIBARCHIVE.xattr."))
            {
                let value = match std::str::from_utf8(v) {
                    Ok(s) if !s.contains('\0') => s.to_string(),
                    _ => format!("hex:{}", crate::digest::hex(v)),
                };
                xattrs.insert(name.to_string(), value);
            } else if !PAX_IN_FIELDS.contains(&k.as_str()) {
                other.insert(k.clone(), lossy(v));
            }
        }
        let kind = kind_name(t);
        let link = match t {
            tar::EntryType::Symlink | tar::EntryType::Link => {
                Some(link_bytes.map(|b| lossy(&b)).unwrap_or_default())
            }
            _ => None,
        };
        let size = entry.size();
        let content = if t.is_file() || matches!(t, tar::EntryType::Continuous) {
            let mut hasher = Hasher::new();
            loop {
                let n = entry.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
            }
            Some(hasher.finish().0)
        } else {
            None
        };
        let meta = FileMeta {
            kind,
            mode,
            uid,
            gid,
            uname,
            gname,
            mtime,
            size,
            content,
            link,
            xattrs,
            pax: other,
            encoding,
            position: index.entries,
        };
        index
            .files
            .insert(normalize_path(&lossy(&path_bytes)), meta);
        index.entries += 1;
    }
    Ok(index)
}

/// The contents of the regular files at `wanted` (normalized paths) in a layer tar, each read
/// up to `max` bytes; the last entry of a path wins, as in `index_layer`.
pub fn read_contents(
    reader: impl Read,
    wanted: &std::collections::BTreeSet<String>,
    max: u64,
) -> io::Result<BTreeMap<String, Vec<u8>>> {
    let mut archive = crate::tarbound::archive(reader);
    let mut out = BTreeMap::new();
    for entry in archive.entries()? {
        let entry = entry?;
        let t = entry.header().entry_type();
        if !(t.is_file() || matches!(t, tar::EntryType::Continuous)) {
            continue;
        }
        let path = normalize_path(&lossy(&entry.path_bytes()));
        if !wanted.contains(&path) {
            continue;
        }
        let mut bytes = Vec::new();
        entry.take(max).read_to_end(&mut bytes)?;
        out.insert(path, bytes);
    }
    Ok(out)
}

/// One attribute that differs between two entries of the same path. Values are strings:
/// digests in full, modes as four octal digits, sizes in bytes, owners as `UID:GID` with
/// ` (UNAME:GNAME)` when names are recorded, maps as `{k=v, …}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AttrDiff {
    /// `type`, `content`, `size`, `mode`, `owner`, `link`, `xattrs`, `pax`, `mtime`,
    /// `encoding`, in that order.
    pub attribute: &'static str,
    pub a: String,
    pub b: String,
}

fn owner(m: &FileMeta) -> String {
    if m.uname.is_empty() && m.gname.is_empty() {
        format!("{}:{}", m.uid, m.gid)
    } else {
        format!("{}:{} ({}:{})", m.uid, m.gid, m.uname, m.gname)
    }
}

fn map_text(m: &BTreeMap<String, String>) -> String {
    let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{{{}}}", parts.join(", "))
}

fn opt_text<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map(ToString::to_string)
        .unwrap_or_else(|| "(none)".into())
}

/// What differs between `a` and `b`. A semantic comparison ignores mtime, the header encoding,
/// and the PAX atime/ctime records.
pub fn compare(a: &FileMeta, b: &FileMeta, semantic: bool) -> Vec<AttrDiff> {
    let mut out = Vec::new();
    let mut push = |attribute: &'static str, x: String, y: String| {
        if x != y {
            out.push(AttrDiff {
                attribute,
                a: x,
                b: y,
            });
        }
    };
    push("type", a.kind.clone(), b.kind.clone());
    push("content", opt_text(&a.content), opt_text(&b.content));
    push("size", a.size.to_string(), b.size.to_string());
    push("mode", format!("{:04o}", a.mode), format!("{:04o}", b.mode));
    push("owner", owner(a), owner(b));
    push("link", opt_text(&a.link), opt_text(&b.link));
    push("xattrs", map_text(&a.xattrs), map_text(&b.xattrs));
    let pax = |m: &FileMeta| {
        let mut p = m.pax.clone();
        if semantic {
            p.retain(|k, _| !PAX_TIMES.contains(&k.as_str()));
        }
        map_text(&p)
    };
    push("pax", pax(a), pax(b));
    if !semantic {
        push("mtime", a.mtime.clone(), b.mtime.clone());
        push("encoding", a.encoding.clone(), b.encoding.clone());
    }
    out
}

/// The first path (in `a`'s order) that `b` has in another relative order, when the entries
/// both layers have are not in the same order.
pub fn first_out_of_order(a: &LayerIndex, b: &LayerIndex) -> Option<String> {
    let mut common: Vec<(u64, u64, &str)> = a
        .files
        .iter()
        .filter_map(|(p, ma)| {
            b.files
                .get(p)
                .map(|mb| (ma.position, mb.position, p.as_str()))
        })
        .collect();
    common.sort_unstable();
    let mut last = None;
    for (_, pb, p) in common {
        if last.is_some_and(|l| pb < l) {
            return Some(p.to_string());
        }
        last = Some(pb);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: tar::EntryType, mode: u32, size: u64, gnu: bool) -> tar::Header {
        let mut h = if gnu {
            tar::Header::new_gnu()
        } else {
            tar::Header::new_ustar()
        };
        h.set_entry_type(kind);
        h.set_mode(mode);
        h.set_size(size);
        h.set_uid(0);
        h.set_gid(0);
        h.set_mtime(0);
        h
    }

    /// A tar of `(path, content, mode, mtime)` files, ustar or gnu headers.
    fn tar_of(files: &[(&str, &[u8], u32, u64)], gnu: bool) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (path, content, mode, mtime) in files {
            let mut h = header(tar::EntryType::Regular, *mode, content.len() as u64, gnu);
            h.set_mtime(*mtime);
            b.append_data(&mut h, path, *content).unwrap();
        }
        b.into_inner().unwrap()
    }

    fn one(data: &[u8]) -> FileMeta {
        let ix = index_layer(data).unwrap();
        assert_eq!(ix.files.len(), 1);
        ix.files.into_values().next().unwrap()
    }

    #[test]
    fn paths_are_normalized() {
        assert_eq!(normalize_path("./a/b/"), "a/b");
        assert_eq!(normalize_path("/a"), "a");
        assert_eq!(normalize_path("./"), ".");
        assert_eq!(normalize_path("././x"), "x");
    }

    #[test]
    fn records_metadata_and_content_digest() {
        let m = one(&tar_of(&[("./app/x.txt", b"hello", 0o644, 7)], false));
        assert_eq!(m.kind, "file");
        assert_eq!(m.mode, 0o644);
        assert_eq!(m.size, 5);
        assert_eq!(m.mtime, "7");
        assert_eq!(m.content, Some(Digest::of(b"hello")));
        assert_eq!(m.encoding, "ustar");
        let ix = index_layer(&tar_of(&[("./app/x.txt", b"hello", 0o644, 7)], false)[..]).unwrap();
        assert!(ix.files.contains_key("app/x.txt"));
    }

    #[test]
    fn content_mode_and_mtime_differences() {
        let a = one(&tar_of(&[("f", b"one", 0o644, 0)], false));
        let b = one(&tar_of(&[("f", b"two", 0o755, 5)], false));
        let d = compare(&a, &b, false);
        let names: Vec<_> = d.iter().map(|x| x.attribute).collect();
        assert_eq!(names, ["content", "mode", "mtime"]);
        assert_eq!(d[1].a, "0644");
        assert_eq!(d[1].b, "0755");
        assert_eq!(d[0].b, Digest::of(b"two").to_string());
        // Semantic: mtime is not a difference, content and mode are.
        let names: Vec<_> = compare(&a, &b, true).iter().map(|x| x.attribute).collect();
        assert_eq!(names, ["content", "mode"]);
    }

    #[test]
    fn header_encoding_is_recorded_and_ignored_semantically() {
        let a = one(&tar_of(&[("f", b"x", 0o644, 0)], false));
        let b = one(&tar_of(&[("f", b"x", 0o644, 0)], true));
        assert_eq!(b.encoding, "gnu");
        let d = compare(&a, &b, false);
        assert_eq!(
            d,
            vec![AttrDiff {
                attribute: "encoding",
                a: "ustar".into(),
                b: "gnu".into()
            }]
        );
        assert!(compare(&a, &b, true).is_empty());
    }

    #[test]
    fn pax_records_xattrs_and_owner() {
        let mut b = tar::Builder::new(Vec::new());
        b.append_pax_extensions([
            ("SCHILY.xattr.user.k", b"v".as_slice()),
            ("uname", b"app".as_slice()),
            ("atime", b"5".as_slice()),
        ])
        .unwrap();
        let mut h = header(tar::EntryType::Regular, 0o600, 1, false);
        h.set_uid(1000);
        b.append_data(&mut h, "f", &b"x"[..]).unwrap();
        let m = one(&b.into_inner().unwrap());
        assert_eq!(m.xattrs.get("user.k").map(String::as_str), Some("v"));
        assert_eq!(m.uname, "app");
        assert_eq!(m.encoding, "ustar+pax(SCHILY.xattr.user.k,atime,uname)");
        assert_eq!(m.pax.get("atime").map(String::as_str), Some("5"));
        let plain = one(&tar_of(&[("f", b"x", 0o600, 0)], false));
        let names: Vec<_> = compare(&plain, &m, false)
            .iter()
            .map(|x| x.attribute)
            .collect();
        assert_eq!(names, ["owner", "xattrs", "pax", "encoding"]);
        // Semantic: atime goes, the xattr and the owner stay.
        let names: Vec<_> = compare(&plain, &m, true)
            .iter()
            .map(|x| x.attribute)
            .collect();
        assert_eq!(names, ["owner", "xattrs"]);
        assert_eq!(compare(&plain, &m, true)[0].b, "1000:0 (app:)");
    }

    #[test]
    fn symlink_targets_and_long_names() {
        let link = |target: &str| {
            let mut b = tar::Builder::new(Vec::new());
            let mut h = header(tar::EntryType::Symlink, 0o777, 0, true);
            b.append_link(&mut h, "l", target).unwrap();
            one(&b.into_inner().unwrap())
        };
        let (a, b) = (link("x"), link("y"));
        assert_eq!(a.kind, "symlink");
        let d = compare(&a, &b, true);
        assert_eq!(d.len(), 1);
        assert_eq!(
            (d[0].attribute, d[0].a.as_str(), d[0].b.as_str()),
            ("link", "x", "y")
        );
        // A name too long for the header: a GNU long-name record.
        let long = "d/".repeat(80) + "f";
        let m = one(&tar_of(&[(&long, b"", 0o644, 0)], true));
        assert_eq!(m.encoding, "gnu+longname");
    }

    #[test]
    fn entry_order() {
        let a =
            index_layer(&tar_of(&[("a", b"", 0o644, 0), ("b", b"", 0o644, 0)], false)[..]).unwrap();
        let b =
            index_layer(&tar_of(&[("b", b"", 0o644, 0), ("a", b"", 0o644, 0)], false)[..]).unwrap();
        assert_eq!(first_out_of_order(&a, &a), None);
        assert_eq!(first_out_of_order(&a, &b).as_deref(), Some("b"));
    }
}
