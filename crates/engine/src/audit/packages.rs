//! Packages installed in two images, compared: what `diff` and `report --against` list first
//! (added, removed, changed, with versions), before any file.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::change::Change;

/// A package installed in an image (read from its dpkg status or a wheel's METADATA).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstalledPackage {
    /// `deb` or `wheel`.
    pub kind: &'static str,
    pub name: String,
    pub version: Option<String>,
    pub architecture: Option<String>,
}

/// A package added, removed or changed between two images.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageChange {
    pub kind: &'static str,
    pub name: String,
    pub change: Change,
    /// The version in the old image (none when added); a deb's as `VERSION (ARCH)`; several
    /// (a package installed twice) joined with `, `.
    pub old: Option<String>,
    /// The version in the new image (none when removed).
    pub new: Option<String>,
}

/// Package changes from `old` to `new`, by kind and name; sorted by kind, then name.
pub fn package_changes(old: &[InstalledPackage], new: &[InstalledPackage]) -> Vec<PackageChange> {
    let versions = |ps: &[InstalledPackage]| {
        let mut m: BTreeMap<(&'static str, String), BTreeSet<String>> = BTreeMap::new();
        for p in ps {
            let v = p.version.clone().unwrap_or_default();
            let label = match &p.architecture {
                Some(a) if p.kind == "deb" => format!("{v} ({a})"),
                _ => v,
            };
            m.entry((p.kind, p.name.clone())).or_default().insert(label);
        }
        m
    };
    let (a, b) = (versions(old), versions(new));
    let joined = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(", ");
    let keys: BTreeSet<&(&'static str, String)> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let (old, new) = (a.get(k), b.get(k));
            let change = match (old, new) {
                (Some(x), Some(y)) if x == y => return None,
                (Some(_), Some(_)) => Change::Changed,
                (Some(_), None) => Change::Removed,
                (None, _) => Change::Added,
            };
            Some(PackageChange {
                kind: k.0,
                name: k.1.clone(),
                change,
                old: old.map(joined),
                new: new.map(joined),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(kind: &'static str, name: &str, version: &str, arch: Option<&str>) -> InstalledPackage {
        InstalledPackage {
            kind,
            name: name.into(),
            version: Some(version.into()),
            architecture: arch.map(str::to_string),
        }
    }

    #[test]
    fn packages_added_removed_changed() {
        let old = [
            pkg("deb", "libc6", "2.41-12", Some("amd64")),
            pkg("deb", "tar", "1.35", Some("amd64")),
            pkg("wheel", "numpy", "2.3.0", None),
            pkg("wheel", "click", "8.1.0", None),
        ];
        let new = [
            pkg("deb", "libc6", "2.41-12+deb13u1", Some("amd64")),
            pkg("deb", "tar", "1.35", Some("amd64")),
            pkg("wheel", "numpy", "2.3.0", None),
            pkg("wheel", "pillow", "11.0.0", None),
        ];
        let row = |c: &PackageChange| {
            (
                c.name.clone(),
                c.change,
                c.old.clone().unwrap_or_default(),
                c.new.clone().unwrap_or_default(),
            )
        };
        let rows: Vec<_> = package_changes(&old, &new).iter().map(row).collect();
        let s = |x: &str| x.to_string();
        assert_eq!(
            rows,
            [
                (
                    s("libc6"),
                    Change::Changed,
                    s("2.41-12 (amd64)"),
                    s("2.41-12+deb13u1 (amd64)")
                ),
                (s("click"), Change::Removed, s("8.1.0"), s("")),
                (s("pillow"), Change::Added, s(""), s("11.0.0")),
            ]
        );
        assert!(package_changes(&old, &old).is_empty());
    }
}
