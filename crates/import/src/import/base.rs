//! What a `FROM` image says about its distribution: the archive, suite and key an
//! `[[apt.source]]` needs, and the Python and glibc versions `uv pip compile` targets.

/// A distribution release that `[apt]` can install from.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Distro {
    pub ubuntu: bool,
    pub suite: &'static str,
    /// The distribution's python3 (`3.12`).
    pub python: &'static str,
    /// Its glibc (`2.39`): the manylinux tag wheels may need.
    pub glibc: &'static str,
    /// The release was assumed, not read from the tag.
    pub assumed: bool,
}

const RELEASES: &[(bool, &str, &[&str], &str, &str)] = &[
    (
        true,
        "noble",
        &["ubuntu24.04", "ubuntu:24.04", "noble"],
        "3.12",
        "2.39",
    ),
    (
        true,
        "jammy",
        &["ubuntu22.04", "ubuntu:22.04", "jammy"],
        "3.10",
        "2.35",
    ),
    (
        true,
        "focal",
        &["ubuntu20.04", "ubuntu:20.04", "focal"],
        "3.8",
        "2.31",
    ),
    (false, "trixie", &["trixie", "debian:13"], "3.13", "2.41"),
    (
        false,
        "bookworm",
        &["bookworm", "debian:12"],
        "3.11",
        "2.36",
    ),
    (false, "bullseye", &["bullseye", "debian:11"], "3.9", "2.31"),
];

fn release(ubuntu: bool, suite: &str, assumed: bool) -> Option<Distro> {
    RELEASES
        .iter()
        .find(|r| r.0 == ubuntu && r.1 == suite)
        .map(|r| Distro {
            ubuntu: r.0,
            suite: r.1,
            python: r.3,
            glibc: r.4,
            assumed,
        })
}

/// The distribution of `image`, from its name and tag; `None` when they do not say.
pub(super) fn distro(image: &str) -> Option<Distro> {
    let lower = image.to_ascii_lowercase();
    for r in RELEASES {
        if r.2.iter().any(|m| lower.contains(m)) {
            return release(r.0, r.1, false);
        }
    }
    let name = repo_name(&lower);
    match name {
        "ubuntu" => release(true, "noble", true),
        "debian" | "python" | "buildpack-deps" => release(false, "trixie", true),
        _ => None,
    }
}

/// The last path component of the repository, without tag or digest: `nvidia/cuda:12` →
/// `cuda`.
pub(super) fn repo_name(image: &str) -> &str {
    let no_digest = image.split('@').next().unwrap_or(image);
    let last = no_digest.rsplit('/').next().unwrap_or(no_digest);
    last.split(':').next().unwrap_or(last)
}

/// `python:3.12-slim` → `3.12`: the Python a python image ships (in /usr/local).
pub(super) fn python_image_version(image: &str) -> Option<String> {
    let lower = image.to_ascii_lowercase();
    if repo_name(&lower) != "python" {
        return tagged_python(&lower);
    }
    let tag = lower.split('@').next()?.rsplit_once(':')?.1;
    let v: String = tag
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let mut parts = v.split('.').filter(|p| !p.is_empty());
    match (parts.next(), parts.next()) {
        (Some(a), Some(b)) => Some(format!("{a}.{b}")),
        _ => None,
    }
}

/// A Python version another image's tag names: `…:python3.11-slim`, `…:2.35.0-py311-gpu`,
/// `…-py3.10`.
fn tagged_python(image: &str) -> Option<String> {
    let tag = image.split('@').next()?.rsplit_once(':')?.1;
    for part in tag.split(['-', '_']) {
        let Some(v) = part
            .strip_prefix("python")
            .or_else(|| part.strip_prefix("py"))
        else {
            continue;
        };
        let digits: String = v.chars().filter(char::is_ascii_digit).collect();
        if v.contains('.') {
            let mut it = v.split('.');
            if let (Some(a), Some(b)) = (it.next(), it.next()) {
                if a == "3" && !b.is_empty() && b.chars().all(|c| c.is_ascii_digit()) {
                    return Some(format!("3.{b}"));
                }
            }
        } else if digits.len() >= 3 && digits.starts_with('3') && digits == v {
            return Some(format!("3.{}", &digits[1..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_from_tags() {
        let cuda = distro("nvidia/cuda:12.8.1-runtime-ubuntu24.04").map(|d| (d.suite, d.python));
        assert_eq!(cuda, Some(("noble", "3.12")));
        assert_eq!(
            distro("python:3.11-slim-bookworm").map(|d| d.suite),
            Some("bookworm")
        );
        assert!(distro("python:3.12-slim").is_some_and(|d| d.assumed));
        assert_eq!(distro("ghcr.io/x/y:1"), None);
        assert_eq!(
            python_image_version("python:3.12-slim"),
            Some("3.12".into())
        );
        assert_eq!(
            python_image_version("docker.io/library/python:3.9.18"),
            Some("3.9".into())
        );
    }
}
