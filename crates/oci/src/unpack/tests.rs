//! Every trick an archive can play on an unpacker, and that nothing outside the root changes.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use tar::EntryType as T;

use super::*;

/// A member: (path, type, mode, body, link target).
type Member<'a> = (&'a str, T, u32, &'a [u8], Option<&'a str>);

/// A tar of members.
fn tar_of(entries: &[Member]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, kind, mode, body, link) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(*kind);
        h.set_mode(*mode);
        h.set_size(body.len() as u64);
        if let Some(l) = link {
            h.set_link_name(l).unwrap();
        }
        // set_path refuses `..`; write the name bytes directly, as a hostile archive would.
        let name = &mut h.as_old_mut().name;
        name[..path.len()].copy_from_slice(path.as_bytes());
        h.set_cksum();
        b.append(&h, *body).unwrap();
    }
    b.into_inner().unwrap()
}

fn mode_of(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// A host directory with a file in it, and its state to compare against afterwards.
struct Host {
    _t: tempfile::TempDir,
    dir: PathBuf,
    root: PathBuf,
}

impl Host {
    fn new() -> Host {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("host");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("secret"), b"secret").unwrap();
        fs::set_permissions(&dir, PermissionsExt::from_mode(0o750)).unwrap();
        fs::set_permissions(dir.join("secret"), PermissionsExt::from_mode(0o640)).unwrap();
        let root = t.path().join("root");
        fs::create_dir(&root).unwrap();
        Host { _t: t, dir, root }
    }

    fn target(&self) -> String {
        self.dir.to_str().unwrap().to_string()
    }

    fn unpack(&self, entries: &[Member]) -> Result<(), UnpackError> {
        unpack_tar(&tar_of(entries)[..], 0, &self.root)
    }

    /// Nothing outside the root changed: same names, bytes and modes.
    fn untouched(&self) {
        let names: Vec<_> = fs::read_dir(&self.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["secret"]);
        assert_eq!(fs::read(self.dir.join("secret")).unwrap(), b"secret");
        assert_eq!(mode_of(&self.dir), 0o750);
        assert_eq!(mode_of(&self.dir.join("secret")), 0o640);
    }
}

#[test]
fn a_directory_entry_over_a_symlink_replaces_it_and_chmods_nothing_outside() {
    // The case: `python/evil -> /host/dir`, then `python/evil/` 0777.
    let h = Host::new();
    let t = h.target();
    h.unpack(&[
        ("python/", T::Directory, 0o755, b"", None),
        ("python/evil", T::Symlink, 0o777, b"", Some(&t)),
        ("python/evil/", T::Directory, 0o777, b"", None),
    ])
    .unwrap();
    h.untouched();
    let evil = h.root.join("python/evil");
    assert!(fs::symlink_metadata(&evil).unwrap().is_dir());
    assert_eq!(mode_of(&evil), 0o777);
    // And through a chain of links.
    let h = Host::new();
    let t = h.target();
    h.unpack(&[
        ("b", T::Symlink, 0o777, b"", Some(&t)),
        ("a", T::Symlink, 0o777, b"", Some("b")),
        ("a/", T::Directory, 0o777, b"", None),
    ])
    .unwrap();
    h.untouched();
}

#[test]
fn nothing_is_written_or_linked_through_a_symlink() {
    let h = Host::new();
    let t = h.target();
    let secret = format!("{t}/secret");
    // A symlink, then a regular file at the same path: the link is replaced, never followed.
    h.unpack(&[
        ("x", T::Symlink, 0o777, b"", Some(&secret)),
        ("x", T::Regular, 0o644, b"mine", None),
    ])
    .unwrap();
    h.untouched();
    assert_eq!(fs::read(h.root.join("x")).unwrap(), b"mine");

    let cases: &[(&[Member], &str)] = &[
        // A file under a symlinked directory.
        (
            &[
                ("d", T::Symlink, 0o777, b"", Some(&t)),
                ("d/new", T::Regular, 0o644, b"x", None),
            ],
            "lies under a symlink (`d`)",
        ),
        // Deeper: a directory under it.
        (
            &[
                ("d", T::Symlink, 0o777, b"", Some(&t)),
                ("d/sub/", T::Directory, 0o777, b"", None),
            ],
            "lies under a symlink (`d`)",
        ),
        // A hard link through a symlinked directory.
        (
            &[
                ("d", T::Symlink, 0o777, b"", Some(&t)),
                ("y", T::Link, 0o644, b"", Some("d/secret")),
            ],
            "not a file unpacked before it",
        ),
        // A hard link to a host path, and one to a symlink of the archive.
        (
            &[("y", T::Link, 0o644, b"", Some(&secret))],
            "absolute or `..` path",
        ),
        (
            &[
                ("s", T::Symlink, 0o777, b"", Some(&secret)),
                ("y", T::Link, 0o644, b"", Some("s")),
            ],
            "not a file unpacked before it",
        ),
        // A hard link to a file that a later entry replaced by a symlink.
        (
            &[
                ("f", T::Regular, 0o644, b"x", None),
                ("f", T::Symlink, 0o777, b"", Some(&secret)),
                ("y", T::Link, 0o644, b"", Some("f")),
            ],
            "not a file unpacked before it",
        ),
        // `..` and absolute names.
        (
            &[("../escape", T::Regular, 0o644, b"x", None)],
            "absolute or `..` path",
        ),
        (
            &[("a/../../escape", T::Regular, 0o644, b"x", None)],
            "absolute or `..` path",
        ),
        (
            &[(&secret, T::Regular, 0o644, b"x", None)],
            "absolute or `..` path",
        ),
        // A file under a file.
        (
            &[
                ("f", T::Regular, 0o644, b"x", None),
                ("f/g", T::Regular, 0o644, b"x", None),
            ],
            "lies under a file (`f`)",
        ),
        // A symlink or file over a directory.
        (
            &[
                ("d/", T::Directory, 0o755, b"", None),
                ("d", T::Symlink, 0o777, b"", Some(&t)),
            ],
            "would replace a directory",
        ),
        // Devices and FIFOs.
        (&[("null", T::Char, 0o666, b"", None)], "unsupported type"),
        (&[("fifo", T::Fifo, 0o666, b"", None)], "unsupported type"),
        (&[("blk", T::Block, 0o666, b"", None)], "unsupported type"),
    ];
    for (entries, expected) in cases {
        let h = Host::new();
        let e = h.unpack(entries).unwrap_err().to_string();
        assert!(e.contains(expected), "{entries:?}: {e}");
        h.untouched();
        assert!(!h.root.parent().unwrap().join("escape").exists());
    }
}

#[test]
fn modes_strip_and_implicit_parents() {
    let h = Host::new();
    let tar = tar_of(&[
        ("top/", T::Directory, 0o755, b"", None),
        ("top/ro/", T::Directory, 0o555, b"", None),
        ("top/ro/f", T::Regular, 0o755, b"#!", None),
        ("top/deep/er/g", T::Regular, 0o600, b"g", None),
        ("top/ro/h", T::Link, 0o644, b"", Some("top/ro/f")),
        ("top/sticky/", T::Directory, 0o1777, b"", None),
    ]);
    unpack_tar(&tar[..], 1, &h.root).unwrap();
    let r = &h.root;
    assert_eq!(mode_of(&r.join("ro")), 0o555);
    assert_eq!(mode_of(&r.join("ro/f")), 0o755);
    assert_eq!(mode_of(&r.join("sticky")), 0o1777);
    // Directories the archive does not list get 0755, whatever the umask.
    assert_eq!(mode_of(&r.join("deep")), 0o755);
    assert_eq!(mode_of(&r.join("deep/er")), 0o755);
    assert_eq!(mode_of(&r.join("deep/er/g")), 0o600);
    assert_eq!(fs::read(r.join("ro/h")).unwrap(), b"#!");
    // The stripped prefix itself is not created.
    assert!(!r.join("top").exists());
}

#[test]
fn a_long_name_record_declaring_gigabytes_is_refused_before_it_is_read() {
    let h = Host::new();
    let mut tar = tar_of(&[("python/ok", T::Regular, 0o644, b"ok", None)]);
    tar.truncate(tar.len() - 1024);
    let mut rec = tar::Header::new_gnu();
    rec.set_entry_type(T::GNULongName);
    rec.set_path("././@LongLink").unwrap();
    rec.set_size(1_500_000_000);
    rec.set_cksum();
    tar.extend_from_slice(rec.as_bytes());
    tar.extend_from_slice(&[b'a'; 8192]);
    let e = unpack_tar(&tar[..], 0, &h.root).unwrap_err();
    let UnpackError::Read(io) = &e else {
        panic!("{e}")
    };
    assert!(
        matches!(
            crate::tarbound::as_bound_error(io),
            Some(crate::tarbound::Error::RecordTooLarge {
                offset: 1024,
                size: 1_500_000_000,
                ..
            })
        ),
        "{e}"
    );
    h.untouched();
}
