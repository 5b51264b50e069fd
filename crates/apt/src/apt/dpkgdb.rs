//! dpkg's own database for an image whose base has none (`scratch`, or a distroless base with
//! `status.d` records only), written as dpkg writes it so that `dpkg -S`, `dpkg -l` and
//! `dpkg -L` work in the image: `var/lib/dpkg/status` (one paragraph per package, sorted by
//! name and architecture, fields in dpkg's order, `Status: install ok installed`),
//! `var/lib/dpkg/info/PKG.list` (`PKG:ARCH.list` for `Multi-Arch: same`: the data tar's paths
//! in its order, as the .deb names them, `/.` first, directories included), `PKG.md5sums` (the
//! .deb's), and `info/format` (`1`, the multiarch layout of those names). Not written:
//! `Conffiles` (their installed files' md5s), the maintainer scripts under `info/`,
//! `available`, `diversions`, `statoverride`, the alternatives' state.

use super::control::Paragraph;

/// Where dpkg keeps its database.
pub const INFO: &str = "var/lib/dpkg/info";
pub const STATUS: &str = "var/lib/dpkg/status";
/// `info/format`: the database layout (1: `PKG:ARCH.list` for `Multi-Arch: same`).
pub const FORMAT: &str = "var/lib/dpkg/info/format";

/// dpkg's order of the fields it knows (lib/dpkg/parse.c's `fieldinfos`); other fields follow
/// in the control file's order.
const ORDER: [&str; 29] = [
    "Package",
    "Essential",
    "Protected",
    "Status",
    "Priority",
    "Section",
    "Installed-Size",
    "Origin",
    "Maintainer",
    "Bugs",
    "Architecture",
    "Multi-Arch",
    "Source",
    "Version",
    "Config-Version",
    "Replaces",
    "Provides",
    "Depends",
    "Pre-Depends",
    "Recommends",
    "Suggests",
    "Breaks",
    "Conflicts",
    "Enhances",
    "Conffiles",
    "Filename",
    "Size",
    "MD5sum",
    "Description",
];

/// The package's name in `info/` (`libc6:amd64` for `Multi-Arch: same`).
pub fn info_name(p: &Paragraph) -> String {
    let name = p.get("Package").unwrap_or_default();
    match (p.get("Multi-Arch"), p.get("Architecture")) {
        (Some(m), Some(a)) if m.eq_ignore_ascii_case("same") => format!("{name}:{a}"),
        _ => name.to_string(),
    }
}

/// The package's paragraph in the status file, as dpkg writes it (ends with a newline; the
/// file puts a blank line after each).
pub fn status_paragraph(p: &Paragraph) -> String {
    let mut out = Paragraph::default();
    for name in ORDER {
        if name == "Status" {
            out.set("Status", "install ok installed");
        } else if let Some(v) = p.get(name) {
            out.set(name, v);
        }
    }
    for (k, v) in p.fields() {
        if !ORDER.iter().any(|o| o.eq_ignore_ascii_case(k)) {
            out.set(k, v);
        }
    }
    out.to_text()
}

/// The status file: the paragraphs, sorted by (package, architecture), each followed by a
/// blank line.
pub fn status_file(paragraphs: &[&Paragraph]) -> String {
    let mut ps: Vec<(&str, &str, String)> = paragraphs
        .iter()
        .map(|p| {
            (
                p.get("Package").unwrap_or_default(),
                p.get("Architecture").unwrap_or_default(),
                status_paragraph(p),
            )
        })
        .collect();
    ps.sort();
    let mut out = String::new();
    for (_, _, text) in ps {
        out.push_str(&text);
        out.push('\n');
    }
    out
}

/// `info/PKG.list`: `/.`, then each path of the data tar (normalized, not rewritten) in the
/// tar's order, once.
pub fn list_file<'a>(paths: impl IntoIterator<Item = &'a str>) -> String {
    let mut seen = std::collections::HashSet::new();
    let mut out = String::from("/.\n");
    for p in paths {
        if seen.insert(p) {
            out.push('/');
            out.push_str(p);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apt::control::parse_paragraphs;

    #[test]
    fn status_and_list_as_dpkg_writes_them() {
        let ps = parse_paragraphs(
            "Package: libc6\nSource: glibc\nVersion: 2.41-12\nArchitecture: amd64\n\
             Multi-Arch: same\nMaintainer: m\nInstalled-Size: 12\nDepends: libgcc-s1\n\
             Section: libs\nPriority: optional\nHomepage: h\nDescription: C\n more\n\n\
             Package: dash\nVersion: 0.5.12-12\nArchitecture: amd64\nEssential: yes\n\
             Description: sh\n",
        )
        .unwrap();
        assert_eq!(info_name(&ps[0]), "libc6:amd64");
        assert_eq!(info_name(&ps[1]), "dash");
        assert_eq!(
            status_file(&[&ps[0], &ps[1]]),
            "Package: dash\nEssential: yes\nStatus: install ok installed\nArchitecture: amd64\n\
             Version: 0.5.12-12\nDescription: sh\n\n\
             Package: libc6\nStatus: install ok installed\nPriority: optional\nSection: libs\n\
             Installed-Size: 12\nMaintainer: m\nArchitecture: amd64\nMulti-Arch: same\n\
             Source: glibc\nVersion: 2.41-12\nDepends: libgcc-s1\nDescription: C\n more\n\
             Homepage: h\n\n"
        );
        assert_eq!(
            list_file(["usr", "usr/bin", "usr/bin/dash", "usr/bin"]),
            "/.\n/usr\n/usr/bin\n/usr/bin/dash\n"
        );
    }
}
