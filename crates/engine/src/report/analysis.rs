//! From the layers' scans to the report of one image: origins, the filesystem as run (whiteouts
//! applied), each layer's files grouped by owner (Debian package, wheel, directory), shadowed
//! bytes, identical content at different paths, and the installed packages.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::model::{
    DuplicatePath, DuplicateSet, Duplicates, FileEntry, Group, GroupKind, LayerReport, LeftOut,
    Origin, Package, MAX_FILES, MAX_GROUPS, MAX_LISTED,
};
use super::scan::{Kind, LayerScan};
use crate::digest::Digest;

/// What a layer's annotation says it is; `steps` are the recipe's step names (a step's
/// layers are `NAME`, or `NAME.1`, `NAME.2`, … for several outputs).
pub fn origin_of(name: Option<&str>, below_first_named: bool, steps: &[String]) -> Origin {
    let is_step = |n: &str| {
        steps.iter().any(|s| {
            n == s
                || n.strip_prefix(s.as_str())
                    .and_then(|r| r.strip_prefix('.'))
                    .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    match name {
        None if below_first_named => Origin::Base,
        None => Origin::Unknown,
        Some(crate::audit::attest::APT_LAYER) => Origin::Packages,
        Some(crate::audit::attest::PYTHON_LAYER) => Origin::Interpreter,
        Some(crate::rootfs::LAYER_NAME) => Origin::System,
        Some(crate::recipe::PATHS_LAYER) => Origin::Paths,
        Some(n) if crate::python::plan::is_wheel_layer(n) => Origin::Wheels,
        Some(n) if is_step(n) => Origin::Steps,
        Some(_) => Origin::App,
    }
}

/// A path of the filesystem as run: the layer (0-based) that last wrote it.
#[derive(Clone, Debug)]
pub struct Present {
    pub layer: usize,
    pub kind: Kind,
    pub size: u64,
}

/// The filesystem as run, and the regular-file bytes of each layer that later layers replace
/// or remove.
pub struct Merged {
    pub files: BTreeMap<String, Present>,
    pub shadowed: Vec<u64>,
}

fn remove_under(m: &mut Merged, dir: &str, below: usize, with_self: bool) {
    let prefix = if dir == "." {
        String::new()
    } else {
        format!("{dir}/")
    };
    let mut gone: Vec<String> = m
        .files
        .range(prefix.clone()..)
        .take_while(|(k, _)| k.starts_with(&prefix))
        .filter(|(_, p)| p.layer < below)
        .map(|(k, _)| k.clone())
        .collect();
    if with_self && m.files.get(dir).is_some_and(|p| p.layer < below) {
        gone.push(dir.to_string());
    }
    for k in gone {
        if let Some(p) = m.files.remove(&k) {
            if p.kind == Kind::File {
                m.shadowed[p.layer] += p.size;
            }
        }
    }
}

/// Apply the layers in order (OCI whiteouts: `.wh.NAME` removes `NAME` of the layers below,
/// `.wh..wh..opq` everything below in its directory).
pub fn merge(scans: &[LayerScan]) -> Merged {
    let mut m = Merged {
        files: BTreeMap::new(),
        shadowed: vec![0; scans.len()],
    };
    for (i, scan) in scans.iter().enumerate() {
        for e in &scan.entries {
            let (dir, base) = match e.path.rsplit_once('/') {
                Some((d, b)) => (d, b),
                None => (".", e.path.as_str()),
            };
            if base == ".wh..wh..opq" {
                remove_under(&mut m, dir, i, false);
            } else if let Some(target) = base.strip_prefix(".wh.") {
                let target = if dir == "." {
                    target.to_string()
                } else {
                    format!("{dir}/{target}")
                };
                remove_under(&mut m, &target, i, true);
            } else {
                let new = Present {
                    layer: i,
                    kind: e.kind,
                    size: e.size,
                };
                if let Some(old) = m.files.insert(e.path.clone(), new) {
                    if old.kind == Kind::File && old.layer < i {
                        m.shadowed[old.layer] += old.size;
                    }
                }
            }
        }
    }
    m
}

/// `a/../b/./c` → `b/c` (never above the root).
fn clean(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            p => out.push(p),
        }
    }
    out.join("/")
}

/// The first field of a RECORD row (CSV, possibly quoted).
fn record_path(line: &str) -> Option<String> {
    if let Some(rest) = line.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    out.push('"');
                }
                '"' => return Some(out),
                c => out.push(c),
            }
        }
        None
    } else {
        line.split(',').next().map(str::to_string)
    }
}

/// The contents of the kept files of the filesystem as run, by path.
fn kept<'a>(scans: &'a [LayerScan], merged: &Merged) -> Vec<(&'a str, usize, &'a [u8])> {
    let mut out = Vec::new();
    for (i, scan) in scans.iter().enumerate() {
        for (path, bytes) in &scan.kept {
            if merged.files.get(path).is_some_and(|p| p.layer == i) {
                out.push((path.as_str(), i, bytes.as_slice()));
            }
        }
    }
    out
}

/// Which package or wheel owns each path (dpkg's `info/*.list`, wheels' `RECORD`). A path that
/// several lists claim (the `nvidia/__init__.py` that eleven CUDA wheels ship, each in its own
/// layer) belongs, in each layer, to the list of that layer; elsewhere to the last one.
#[derive(Debug, Default)]
pub struct Owners {
    by_layer: HashMap<(usize, String), (GroupKind, String)>,
    last: HashMap<String, (GroupKind, String)>,
}

impl Owners {
    fn claim(&mut self, layer: usize, path: String, owner: (GroupKind, String)) {
        self.last.insert(path.clone(), owner.clone());
        self.by_layer.insert((layer, path), owner);
    }

    /// The owner of `path` as it is in layer `layer`.
    pub fn of(&self, layer: usize, path: &str) -> Option<&(GroupKind, String)> {
        self.by_layer
            .get(&(layer, path.to_string()))
            .or_else(|| self.last.get(path))
    }
}

pub fn owners(scans: &[LayerScan], merged: &Merged) -> Owners {
    let mut map = Owners::default();
    for (path, layer, bytes) in kept(scans, merged) {
        let text = String::from_utf8_lossy(bytes);
        if let Some(file) = path.strip_prefix("var/lib/dpkg/info/") {
            let Some(stem) = file.strip_suffix(".list") else {
                continue;
            };
            let name = stem.split(':').next().unwrap_or(stem).to_string();
            for line in text.lines() {
                let p = clean(line);
                if !p.is_empty() {
                    map.claim(layer, p, (GroupKind::Deb, name.clone()));
                }
            }
        } else if let Some(dist_info) = path.strip_suffix("/RECORD") {
            let site = dist_info.rsplit_once('/').map(|(s, _)| s).unwrap_or("");
            let dir = dist_info.rsplit('/').next().unwrap_or(dist_info);
            let name = dir
                .strip_suffix(".dist-info")
                .and_then(|s| s.split('-').next())
                .unwrap_or(dir)
                .to_string();
            for line in text.lines() {
                if let Some(rel) = record_path(line) {
                    map.claim(
                        layer,
                        clean(&format!("{site}/{rel}")),
                        (GroupKind::Wheel, name.clone()),
                    );
                }
            }
        }
    }
    map
}

fn dir_group(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').collect();
    match parts.as_slice() {
        [_] => "/".to_string(),
        [a, _] => format!("{a}/"),
        [a, b, ..] => format!("{a}/{b}/"),
        [] => "/".to_string(),
    }
}

/// The inputs of one layer's report besides its scan.
pub struct LayerFacts {
    pub position: usize,
    pub digest: Option<String>,
    pub diff_id: Option<String>,
    pub name: Option<String>,
    pub origin: Origin,
    pub compressed: Option<u64>,
    pub shadowed_bytes: u64,
}

/// One layer's report: its files by owner, its largest files.
pub fn layer_report(facts: LayerFacts, scan: &LayerScan, owners: &Owners) -> LayerReport {
    let mut groups: BTreeMap<(GroupKind, String), (u64, u64)> = BTreeMap::new();
    let mut files: Vec<FileEntry> = Vec::new();
    let mut whiteouts = 0;
    // `position` counts from 1, the scans from 0.
    let layer = facts.position.saturating_sub(1);
    for e in &scan.entries {
        if e.is_whiteout() {
            whiteouts += 1;
            continue;
        }
        if !matches!(e.kind, Kind::File | Kind::Symlink | Kind::Hardlink) {
            continue;
        }
        let key = owners
            .of(layer, &e.path)
            .cloned()
            .unwrap_or_else(|| (GroupKind::Dir, dir_group(&e.path)));
        let g = groups.entry(key).or_default();
        g.0 += 1;
        g.1 += e.size;
        if e.kind == Kind::File {
            files.push(FileEntry {
                path: e.path.clone(),
                size: e.size,
            });
        }
    }
    let file_count = files.len() as u64;
    let file_bytes = files.iter().map(|f| f.size).sum();
    files.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.path.cmp(&b.path)));
    let rest = files.split_off(files.len().min(MAX_FILES));
    let mut groups: Vec<Group> = groups
        .into_iter()
        .map(|((kind, name), (files, bytes))| Group {
            kind,
            name,
            files,
            bytes,
        })
        .collect();
    groups.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    let rest_groups = groups.split_off(groups.len().min(MAX_GROUPS));
    LayerReport {
        position: facts.position,
        digest: facts.digest,
        diff_id: facts.diff_id,
        name: facts.name,
        origin: facts.origin,
        compressed: facts.compressed,
        uncompressed: scan.tar_bytes,
        entries: scan.entries.len() as u64,
        files: file_count,
        file_bytes,
        whiteouts,
        shadowed_bytes: facts.shadowed_bytes,
        groups,
        groups_left_out: LeftOut {
            count: rest_groups.len() as u64,
            bytes: rest_groups.iter().map(|g| g.bytes).sum(),
        },
        largest_files: files,
        files_left_out: LeftOut {
            count: rest.len() as u64,
            bytes: rest.iter().map(|f| f.size).sum(),
        },
    }
}

/// Regular files (not empty) of the same sha256 at two or more paths, in any layers.
pub fn duplicates(scans: &[LayerScan]) -> Duplicates {
    let mut by_content: HashMap<Digest, (u64, BTreeSet<DuplicatePath>)> = HashMap::new();
    for (i, scan) in scans.iter().enumerate() {
        for e in &scan.entries {
            if let (Kind::File, Some(d), true) = (e.kind, e.content, e.size > 0) {
                by_content
                    .entry(d)
                    .or_insert_with(|| (e.size, BTreeSet::new()))
                    .1
                    .insert(DuplicatePath {
                        layer: i + 1,
                        path: e.path.clone(),
                    });
            }
        }
    }
    let mut sets: Vec<DuplicateSet> = by_content
        .into_iter()
        .filter_map(|(digest, (size, paths))| {
            let distinct = paths
                .iter()
                .map(|p| p.path.as_str())
                .collect::<BTreeSet<&str>>()
                .len() as u64;
            (distinct >= 2).then(|| DuplicateSet {
                sha256: digest.to_string(),
                size,
                extra_bytes: size * (distinct - 1),
                paths: paths.into_iter().collect(),
            })
        })
        .collect();
    sets.sort_by(|a, b| {
        b.extra_bytes
            .cmp(&a.extra_bytes)
            .then_with(|| a.sha256.cmp(&b.sha256))
    });
    let extra_bytes = sets.iter().map(|s| s.extra_bytes).sum();
    let count = sets.len() as u64;
    let rest = sets.split_off(sets.len().min(MAX_LISTED));
    Duplicates {
        extra_bytes,
        sets: count,
        listed: sets,
        left_out: LeftOut {
            count: rest.len() as u64,
            bytes: rest.iter().map(|s| s.extra_bytes).sum(),
        },
    }
}

/// RFC 822-style fields of one paragraph (continuation lines joined with `\n`).
fn fields(paragraph: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in paragraph.lines() {
        if line.starts_with([' ', '\t']) {
            if let Some(last) = out.last_mut() {
                last.1.push('\n');
                last.1.push_str(line.trim());
            }
        } else if let Some((k, v)) = line.split_once(':') {
            out.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    out
}

fn field<'a>(f: &'a [(String, String)], key: &str) -> Option<&'a str> {
    f.iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v.as_str())
}

fn deb_packages(text: &str, layer: usize, out: &mut Vec<Package>) {
    for paragraph in text.split("\n\n") {
        let f = fields(paragraph);
        let Some(name) = field(&f, "Package") else {
            continue;
        };
        // distroless' status.d/ paragraphs have no Status field.
        if field(&f, "Status").is_some_and(|s| !s.ends_with(" installed")) {
            continue;
        }
        let version = field(&f, "Version").map(str::to_string);
        let arch = field(&f, "Architecture").map(str::to_string);
        let purl = version.as_ref().map(|v| {
            format!(
                "pkg:deb/debian/{}@{}?arch={}",
                crate::audit::attest::purl_encode(name, false),
                crate::audit::attest::purl_encode(v, true),
                crate::audit::attest::purl_encode(arch.as_deref().unwrap_or("all"), false)
            )
        });
        out.push(Package {
            kind: GroupKind::Deb,
            name: name.to_string(),
            version,
            architecture: arch,
            licence: None,
            licence_spdx: None,
            layer: Some(layer + 1),
            source_url: None,
            sha256: None,
            purl,
            from: "image",
        });
    }
}

fn wheel_package(text: &str, layer: usize) -> Option<Package> {
    let head = text.split("\n\n").next().unwrap_or("");
    let f = fields(head);
    let name = field(&f, "Name")?;
    let version = field(&f, "Version").map(str::to_string);
    let classifiers: Vec<&str> = f
        .iter()
        .filter(|(k, v)| k.eq_ignore_ascii_case("Classifier") && v.starts_with("License ::"))
        .map(|(_, v)| v.as_str())
        .collect();
    let licence = field(&f, "License-Expression")
        .or(field(&f, "License").filter(|l| !l.is_empty() && *l != "UNKNOWN"))
        .map(str::to_string)
        .or_else(|| (!classifiers.is_empty()).then(|| classifiers.join("; ")));
    let normalized = crate::python::tags::normalize_name(name);
    let purl = version.as_ref().map(|v| {
        format!(
            "pkg:pypi/{}@{}",
            crate::audit::attest::purl_encode(&normalized, false),
            crate::audit::attest::purl_encode(v, true)
        )
    });
    Some(Package {
        kind: GroupKind::Wheel,
        name: normalized,
        version,
        architecture: None,
        licence_spdx: crate::audit::license::metadata_expression(text),
        licence,
        layer: Some(layer + 1),
        source_url: None,
        sha256: None,
        purl,
        from: "image",
    })
}

/// The packages installed in the filesystem as run: dpkg's status (and `status.d/`), wheels'
/// METADATA. Sorted by kind, name, version.
pub fn packages(scans: &[LayerScan], merged: &Merged) -> (Vec<Package>, bool) {
    let mut out = Vec::new();
    let mut dpkg = false;
    let mut copyrights = HashMap::new();
    for (path, layer, bytes) in kept(scans, merged) {
        if let Some(pkg) = super::scan::copyright_package(path) {
            copyrights.insert(pkg.to_string(), bytes);
            continue;
        }
        let text = String::from_utf8_lossy(bytes);
        let status_d = path
            .strip_prefix("var/lib/dpkg/status.d/")
            .is_some_and(|f| !f.contains('/') && !f.ends_with(".md5sums"));
        if path == "var/lib/dpkg/status" || status_d {
            dpkg = true;
            deb_packages(&text, layer, &mut out);
        } else if path.ends_with(".dist-info/METADATA") {
            out.extend(wheel_package(&text, layer));
        }
    }
    out.sort_by(|a, b| {
        (a.kind, &a.name, &a.version, &a.architecture).cmp(&(
            b.kind,
            &b.name,
            &b.version,
            &b.architecture,
        ))
    });
    // ocibuild writes both dpkg's status and distroless' status.d/: each package once.
    out.dedup_by(|a, b| {
        (a.kind, &a.name, &a.version, &a.architecture)
            == (b.kind, &b.name, &b.version, &b.architecture)
    });
    // A deb's licence: its DEP-5 copyright file, as SPDX (an `arch`-qualified name shares it).
    for p in out.iter_mut().filter(|p| p.kind == GroupKind::Deb) {
        let name = p.name.split(':').next().unwrap_or(&p.name);
        if let Some(bytes) = copyrights.get(name) {
            p.licence_spdx =
                crate::audit::license::dep5_expression(&String::from_utf8_lossy(bytes));
        }
    }
    (out, dpkg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_from_layer_names() {
        let steps = ["build".to_string()];
        assert_eq!(origin_of(None, true, &steps), Origin::Base);
        assert_eq!(origin_of(None, false, &steps), Origin::Unknown);
        assert_eq!(origin_of(Some("apt"), false, &steps), Origin::Packages);
        assert_eq!(
            origin_of(Some("wheels-a-and-2-more"), false, &steps),
            Origin::Wheels
        );
        assert_eq!(origin_of(Some("build.2"), false, &steps), Origin::Steps);
        assert_eq!(origin_of(Some("build"), false, &steps), Origin::Steps);
        assert_eq!(origin_of(Some("builder"), false, &steps), Origin::App);
        assert_eq!(origin_of(Some("build.x"), false, &steps), Origin::App);
    }

    #[test]
    fn record_paths_resolve_against_site_packages() {
        assert_eq!(
            record_path("\"a,b.py\",sha256=x,3").as_deref(),
            Some("a,b.py")
        );
        assert_eq!(clean("usr/lib/site/../../../bin/x"), "bin/x");
        assert_eq!(dir_group("srv/app/main.py"), "srv/app/");
        assert_eq!(dir_group("etc/passwd"), "etc/");
    }

    #[test]
    fn a_path_two_wheels_claim_belongs_to_the_record_of_its_own_layer() {
        let mut o = Owners::default();
        let init = "site/nvidia/__init__.py".to_string();
        o.claim(
            1,
            init.clone(),
            (GroupKind::Wheel, "nvidia_cublas_cu12".into()),
        );
        o.claim(
            2,
            init.clone(),
            (GroupKind::Wheel, "nvidia_nccl_cu12".into()),
        );
        assert_eq!(o.of(1, &init).unwrap().1, "nvidia_cublas_cu12");
        assert_eq!(o.of(2, &init).unwrap().1, "nvidia_nccl_cu12");
        // A layer without its own list (a later copy) takes the last claim.
        assert_eq!(o.of(5, &init).unwrap().1, "nvidia_nccl_cu12");
        assert!(o.of(1, "site/other.py").is_none());
    }

    #[test]
    fn dpkg_status_lists_installed_packages_only() {
        let text = "Package: a\nStatus: install ok installed\nVersion: 1:2.0\n\
                    Architecture: amd64\n\nPackage: b\nStatus: deinstall ok config-files\n";
        let mut out = Vec::new();
        deb_packages(text, 0, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].purl.as_deref(),
            Some("pkg:deb/debian/a@1:2.0?arch=amd64")
        );
    }

    #[test]
    fn metadata_licence_is_kept_verbatim() {
        let p = wheel_package(
            "Name: Foo_Bar\nVersion: 1.0\nLicense: Some odd text\n\nbody",
            2,
        )
        .unwrap();
        assert_eq!(p.name, "foo-bar");
        assert_eq!(p.licence.as_deref(), Some("Some odd text"));
        assert_eq!(p.layer, Some(3));
    }
}
