//! Image references, parsed and normalized the way docker and podman do.
//!
//! `[REGISTRY/]REPOSITORY[:TAG][@DIGEST]`:
//! - The first `/`-separated component is a registry when it contains `.` or `:`, is
//!   `localhost`, or has an upper-case letter (as docker's `splitDockerDomain` decides); otherwise
//!   the registry is `docker.io`. `index.docker.io` and `registry-1.docker.io` become `docker.io`.
//! - On `docker.io`, a single-component repository gets `library/` (`ubuntu` →
//!   `docker.io/library/ubuntu`).
//! - Without a tag or a digest the tag is `latest`; with a digest alone there is no tag.
//! - Repository components: lower-case `[a-z0-9]+` joined by `.`, `_`, `__` or runs of `-`;
//!   the whole name (registry included) at most 255 characters. Tags: `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
//! - Digests: `sha256:` + 64 lower-case hex digits (the only algorithm ocibuild verifies).

use std::fmt;
use std::str::FromStr;

use crate::digest::Digest;

pub use crate::defaults::{DEFAULT_REGISTRY, DOCKER_HUB_API_HOST};
/// The tag used when a reference has neither tag nor digest.
pub const DEFAULT_TAG: &str = "latest";

const MAX_NAME_LEN: usize = 255;
const MAX_TAG_LEN: usize = 128;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    #[error("image reference is empty: write e.g. `docker.io/library/ubuntu:24.04`")]
    Empty,
    #[error("image reference `{input}`: {problem}")]
    Invalid { input: String, problem: String },
}

/// A normalized image reference: registry, repository and a tag and/or a digest.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reference {
    registry: String,
    repository: String,
    tag: Option<String>,
    digest: Option<Digest>,
}

impl Reference {
    /// Parse and normalize `input` (see the module docs).
    pub fn parse(input: &str) -> Result<Reference, ReferenceError> {
        let bad = |problem: String| ReferenceError::Invalid {
            input: shown(input),
            problem,
        };
        if input.is_empty() {
            return Err(ReferenceError::Empty);
        }
        if login_end(input).is_some() {
            return Err(bad(LOGIN_PROBLEM.into()));
        }
        if input.trim() != input || input.chars().any(char::is_whitespace) {
            return Err(bad("contains white space".into()));
        }
        if input.contains("://") {
            return Err(bad(
                "a reference has no scheme: drop `https://` (write `registry.example.com/repo:tag`)"
                    .into(),
            ));
        }

        // Digest: everything after the first `@`.
        let (rest, digest) = match input.split_once('@') {
            Some((rest, d)) => (rest, Some(parse_digest(d).map_err(bad)?)),
            None => (input, None),
        };

        // Tag: after the last `:` that follows the last `/` (a `:` before it is a port).
        let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match rest[last_slash..].rfind(':') {
            Some(i) => {
                let i = last_slash + i;
                (&rest[..i], Some(&rest[i + 1..]))
            }
            None => (rest, None),
        };
        if let Some(tag) = tag {
            check_tag(tag).map_err(bad)?;
        }
        if name.is_empty() {
            return Err(bad("the repository name is missing".into()));
        }

        // Registry: the first component, when it looks like a host.
        let (registry, path) = match name.split_once('/') {
            Some((first, path))
                if first.contains(['.', ':'])
                    || first == "localhost"
                    || first.chars().any(|c| c.is_ascii_uppercase()) =>
            {
                check_registry(first).map_err(bad)?;
                (first.to_string(), path)
            }
            _ => (DEFAULT_REGISTRY.to_string(), name),
        };
        let registry = match registry.as_str() {
            "index.docker.io" | DOCKER_HUB_API_HOST => DEFAULT_REGISTRY.to_string(),
            _ => registry,
        };
        check_repository(path).map_err(bad)?;
        let repository = if registry == DEFAULT_REGISTRY && !path.contains('/') {
            format!("library/{path}")
        } else {
            path.to_string()
        };
        if registry.len() + 1 + repository.len() > MAX_NAME_LEN {
            return Err(bad(format!(
                "the name is longer than {MAX_NAME_LEN} characters"
            )));
        }
        let tag = match (tag, digest) {
            (Some(t), _) => Some(t.to_string()),
            (None, Some(_)) => None,
            (None, None) => Some(DEFAULT_TAG.to_string()),
        };
        Ok(Reference {
            registry,
            repository,
            tag,
            digest,
        })
    }

    /// A reference from parts already known to be valid names (e.g. from another reference).
    pub fn from_parts(
        registry: &str,
        repository: &str,
        tag: Option<&str>,
        digest: Option<Digest>,
    ) -> Result<Reference, ReferenceError> {
        let mut s = format!("{registry}/{repository}");
        if let Some(t) = tag {
            s.push(':');
            s.push_str(t);
        }
        if let Some(d) = digest {
            s.push('@');
            s.push_str(&d.to_string());
        }
        let r = Reference::parse(&s)?;
        if r.registry != registry || r.repository != repository {
            return Err(ReferenceError::Invalid {
                input: s,
                problem: format!(
                    "normalizes to {}/{}; pass the normalized registry and repository",
                    r.registry, r.repository
                ),
            });
        }
        Ok(r)
    }

    /// The registry as written in references (`docker.io`, `ghcr.io`, `localhost:5000`).
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The host (and port) that serves the registry API: `registry-1.docker.io` for docker.io.
    pub fn api_host(&self) -> &str {
        api_host(&self.registry)
    }

    /// The repository path, e.g. `library/ubuntu`.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    pub fn digest(&self) -> Option<Digest> {
        self.digest
    }

    /// What to ask the registry for: the digest when there is one, else the tag.
    pub fn manifest_reference(&self) -> String {
        match (&self.digest, &self.tag) {
            (Some(d), _) => d.to_string(),
            (None, Some(t)) => t.clone(),
            (None, None) => DEFAULT_TAG.to_string(),
        }
    }

    /// `registry/repository`, without tag or digest.
    pub fn name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The same repository, pinned to `digest` (the tag is kept for display).
    pub fn with_digest(&self, digest: Digest) -> Reference {
        Reference {
            digest: Some(digest),
            ..self.clone()
        }
    }

    /// The same repository by `digest` alone (no tag): what a manifest pushed or fetched
    /// by digest is named as.
    pub fn by_digest(&self, digest: Digest) -> Reference {
        Reference {
            tag: None,
            digest: Some(digest),
            ..self.clone()
        }
    }

    /// The same repository with `tag` and no digest.
    pub fn with_tag(&self, tag: &str) -> Result<Reference, ReferenceError> {
        check_tag(tag).map_err(|problem| ReferenceError::Invalid {
            input: format!("{}:{tag}", self.name()),
            problem,
        })?;
        Ok(Reference {
            tag: Some(tag.to_string()),
            digest: None,
            ..self.clone()
        })
    }
}

/// The host serving the API for a registry name (docker.io → registry-1.docker.io).
pub fn api_host(registry: &str) -> &str {
    if registry == DEFAULT_REGISTRY {
        DOCKER_HUB_API_HOST
    } else {
        registry
    }
}

impl fmt::Display for Reference {
    /// The canonical form: `registry/repository[:tag][@digest]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Reference({self})")
    }
}

impl FromStr for Reference {
    type Err = ReferenceError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Reference::parse(s)
    }
}

/// What a reference with a login is told.
pub const LOGIN_PROBLEM: &str = "a login (`user:password@`) does not belong in an image reference \
     (it would be shown in messages and logs): remove it and put the login in an auth file \
     (`podman login` / `skopeo login` write one; REGISTRY_AUTH_FILE names it)";

/// Where the `user:password@` a user pasted before the registry ends (the index of its `@`),
/// if `input` (with or without `docker://`) has one. A digest is the only other thing an `@`
/// introduces, and it has no `/` and is `algorithm:encoded`: an `@` followed by a `/` (the
/// repository's) ends a login; so does an `@` after a `:` (`user:pw@host:5000`) when what
/// follows the last `@` is not digest-like. (`name@latest` and `name@md5:…` stay digest
/// errors: with no password, there is no secret to hide.)
pub fn login_end(input: &str) -> Option<usize> {
    let start = input.find("://").map_or(0, |i| i + 3);
    let text = &input[start..];
    let ats: Vec<usize> = text.match_indices('@').map(|(i, _)| i).collect();
    if let Some(&i) = ats.iter().rev().find(|&&i| text[i + 1..].contains('/')) {
        return Some(start + i);
    }
    let (&first, &last) = (ats.first()?, ats.last()?);
    if !text[..first].contains(':') {
        return None;
    }
    if !digest_like(&text[last + 1..]) {
        return Some(start + last);
    }
    // A digest-like end: the login, if any, ends at the `@` before it.
    ats.iter().rev().nth(1).map(|&i| start + i)
}

/// `algorithm:encoded` as a digest is written (OCI's grammar), told apart from `host:port`:
/// a `sha…`/`blake…` algorithm, or one without a `.` whose encoded part is not a port number.
fn digest_like(s: &str) -> bool {
    let Some((alg, enc)) = s.split_once(':') else {
        return false;
    };
    let grammar = !alg.is_empty()
        && !enc.is_empty()
        && alg
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+._-".contains(&b))
        && enc
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"=_-".contains(&b));
    grammar
        && (alg.starts_with("sha")
            || alg.starts_with("blake")
            || (!alg.contains('.') && !enc.bytes().all(|b| b.is_ascii_digit())))
}

/// `input` as messages quote a reference a user wrote: a login before the registry as `***@`,
/// and clipped when long ([`crate::bounded::clip`]).
pub fn shown(input: &str) -> String {
    let masked = match login_end(input) {
        Some(at) => {
            let start = input.find("://").map_or(0, |i| i + 3).min(at);
            format!("{}***{}", &input[..start], &input[at..])
        }
        None => input.to_string(),
    };
    crate::bounded::clip(&masked).into_owned()
}

fn parse_digest(d: &str) -> Result<Digest, String> {
    match d.split_once(':') {
        None => Err(format!(
            "`{d}` after `@` is not a digest: expected sha256:<64 hex digits>"
        )),
        Some((alg, _)) if alg != "sha256" => Err(format!(
            "digest algorithm `{alg}` is not supported: use a sha256 digest"
        )),
        Some(_) => d.parse::<Digest>().map_err(|_| {
            format!("`{d}` is not a valid digest: expected sha256:<64 lower-case hex digits>")
        }),
    }
}

fn check_tag(tag: &str) -> Result<(), String> {
    let ok_first = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let ok = |c: char| ok_first(c) || c == '.' || c == '-';
    if tag.is_empty() {
        return Err("the tag after `:` is empty".into());
    }
    if tag.len() > MAX_TAG_LEN {
        return Err(format!("the tag is longer than {MAX_TAG_LEN} characters"));
    }
    let mut chars = tag.chars();
    if !chars.next().is_some_and(ok_first) || !chars.all(ok) {
        return Err(format!(
            "invalid tag `{tag}`: letters, digits, `_`, `.` and `-` only, not starting with `.` or `-`"
        ));
    }
    Ok(())
}

fn check_registry(host: &str) -> Result<(), String> {
    let bad = || {
        Err(format!(
            "invalid registry `{host}`: expected a host name or IP address with an optional :port"
        ))
    };
    // `[v6addr]:port` or `host:port`.
    let (hostname, port) = if let Some(rest) = host.strip_prefix('[') {
        let Some((addr, after)) = rest.split_once(']') else {
            return bad();
        };
        if addr.is_empty() || !addr.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return bad();
        }
        match after {
            "" => return Ok(()),
            p => match p.strip_prefix(':') {
                Some(p) => (None, Some(p)),
                None => return bad(),
            },
        }
    } else {
        match host.split_once(':') {
            Some((h, p)) => (Some(h), Some(p)),
            None => (Some(host), None),
        }
    };
    if let Some(p) = port {
        if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return bad();
        }
    }
    if let Some(h) = hostname {
        let label_ok = |l: &str| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        };
        if h.is_empty() || !h.split('.').all(label_ok) {
            return bad();
        }
    }
    Ok(())
}

fn check_repository(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("the repository name is missing".into());
    }
    for comp in path.split('/') {
        if comp.is_empty() {
            return Err(format!(
                "repository `{}` has an empty path component (`//` or a trailing `/`)",
                crate::bounded::clip(path)
            ));
        }
        if comp.chars().any(|c| c.is_ascii_uppercase()) {
            return Err(format!(
                "repository name must be lowercase: `{}` (write `{}`)",
                crate::bounded::clip(path),
                crate::bounded::clip(&path.to_ascii_lowercase())
            ));
        }
        if !component_ok(comp) {
            return Err(format!(
                "invalid repository component `{}`: lower-case letters and digits, \
                 separated by `.`, `_`, `__` or dashes",
                crate::bounded::clip(comp)
            ));
        }
    }
    Ok(())
}

/// Whether `c` is a valid repository path component: lower-case letters and digits, separated
/// by single `.`, `_`, `__` or runs of `-` (the distribution grammar).
pub fn component_ok(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if b.is_empty() || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|x| x == b'-')) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn norm(s: &str) -> String {
        Reference::parse(s)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .to_string()
    }

    fn err(s: &str) -> String {
        match Reference::parse(s) {
            Ok(r) => panic!("{s} parsed as {r}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn docker_hub_normalization() {
        assert_eq!(norm("ubuntu"), "docker.io/library/ubuntu:latest");
        assert_eq!(norm("ubuntu:24.04"), "docker.io/library/ubuntu:24.04");
        assert_eq!(norm("nvidia/cuda"), "docker.io/nvidia/cuda:latest");
        assert_eq!(
            norm("docker.io/nvidia/cuda:12.8.1-runtime-ubuntu24.04"),
            "docker.io/nvidia/cuda:12.8.1-runtime-ubuntu24.04"
        );
        assert_eq!(norm("docker.io/ubuntu"), "docker.io/library/ubuntu:latest");
        assert_eq!(
            norm("index.docker.io/ubuntu"),
            "docker.io/library/ubuntu:latest"
        );
        assert_eq!(
            norm("registry-1.docker.io/library/ubuntu:22.04"),
            "docker.io/library/ubuntu:22.04"
        );
        assert_eq!(
            norm("library/ubuntu:22.04"),
            "docker.io/library/ubuntu:22.04"
        );
        let r = Reference::parse("ubuntu").unwrap();
        assert_eq!(r.registry(), "docker.io");
        assert_eq!(r.api_host(), "registry-1.docker.io");
        assert_eq!(r.repository(), "library/ubuntu");
        assert_eq!(r.tag(), Some("latest"));
        assert_eq!(r.digest(), None);
        assert_eq!(r.manifest_reference(), "latest");
        assert_eq!(r.name(), "docker.io/library/ubuntu");
    }

    #[test]
    fn other_registries() {
        assert_eq!(norm("ghcr.io/owner/app:v1"), "ghcr.io/owner/app:v1");
        // No `library/` outside docker.io.
        assert_eq!(norm("quay.io/app"), "quay.io/app:latest");
        assert_eq!(norm("localhost/app"), "localhost/app:latest");
        assert_eq!(norm("localhost:5000/a/b/c:t"), "localhost:5000/a/b/c:t");
        assert_eq!(norm("127.0.0.1:5000/repo:tag"), "127.0.0.1:5000/repo:tag");
        assert_eq!(norm("[::1]:5000/repo"), "[::1]:5000/repo:latest");
        assert_eq!(norm("[fe80::1]/repo"), "[fe80::1]/repo:latest");
        let r = Reference::parse("localhost:5000/a/b").unwrap();
        assert_eq!(r.registry(), "localhost:5000");
        assert_eq!(r.api_host(), "localhost:5000");
        assert_eq!(r.repository(), "a/b");
        // A first component without `.`/`:` that is not localhost is a namespace on docker.io.
        assert_eq!(norm("myhost/app"), "docker.io/myhost/app:latest");
        // ...unless it has upper case (docker treats it as a host).
        assert_eq!(norm("MyHost/app"), "MyHost/app:latest");
    }

    #[test]
    fn digests_and_tags() {
        assert_eq!(
            norm(&format!("ubuntu@{D}")),
            format!("docker.io/library/ubuntu@{D}")
        );
        let r = Reference::parse(&format!("ubuntu@{D}")).unwrap();
        assert_eq!(r.tag(), None);
        assert_eq!(r.digest(), Some(D.parse().unwrap()));
        assert_eq!(r.manifest_reference(), D);
        // Tag and digest: both kept, the digest is what is fetched.
        let r = Reference::parse(&format!("ghcr.io/a/b:1.0@{D}")).unwrap();
        assert_eq!(r.tag(), Some("1.0"));
        assert_eq!(r.manifest_reference(), D);
        assert_eq!(r.to_string(), format!("ghcr.io/a/b:1.0@{D}"));
        // A port is not a tag.
        let r = Reference::parse(&format!("localhost:5000/x@{D}")).unwrap();
        assert_eq!(r.registry(), "localhost:5000");
        assert_eq!(r.tag(), None);
        // Tag characters.
        assert_eq!(norm("a:V1_x.y-z"), "docker.io/library/a:V1_x.y-z");
        assert_eq!(norm("a:_x"), "docker.io/library/a:_x");
        let long = "t".repeat(128);
        assert_eq!(
            norm(&format!("a:{long}")),
            format!("docker.io/library/a:{long}")
        );
    }

    #[test]
    fn repository_components() {
        for ok in ["a.b", "a_b", "a__b", "a---b", "a1/b2/c3", "0"] {
            assert!(Reference::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["a..b", "a___b", "-a", "a-", "_a", "a.", "a/.b", "a+b"] {
            assert!(
                err(bad).contains("invalid repository component"),
                "{bad}: {}",
                err(bad)
            );
        }
    }

    #[test]
    fn errors_are_clear() {
        assert_eq!(Reference::parse("").unwrap_err(), ReferenceError::Empty);
        assert!(
            err("Ubuntu").contains("must be lowercase"),
            "{}",
            err("Ubuntu")
        );
        assert!(err("ghcr.io/Owner/app").contains("write `owner/app`"));
        assert!(err("ubuntu:").contains("tag after `:` is empty"));
        assert!(err("ubuntu:-x").contains("invalid tag"));
        // `ubuntu:a/b`: `ubuntu:a` is taken as a host with a bad port.
        assert!(err("ubuntu:a/b").contains("invalid registry"));
        assert!(err(&format!("a:{}", "t".repeat(129))).contains("longer than 128"));
        assert!(err("ubuntu@sha256:abc").contains("not a valid digest"));
        assert!(err("ubuntu@md5:abc").contains("algorithm `md5` is not supported"));
        assert!(err("ubuntu@latest").contains("not a digest"));
        assert!(err(&format!(
            "ubuntu@{}",
            D.to_uppercase().replace("SHA", "sha")
        ))
        .contains("not a valid digest"));
        assert!(err("https://ghcr.io/a/b").contains("no scheme"));
        assert!(err("ubuntu latest").contains("white space"));
        assert!(err(" ubuntu").contains("white space"));
        assert!(err("ghcr.io/").contains("repository name is missing"));
        assert!(err(":tag").contains("repository name is missing"));
        assert!(err("ghcr.io//a").contains("empty path component"));
        assert!(err("ghcr.io/a/").contains("empty path component"));
        assert!(err("host:port/a").contains("invalid registry"));
        assert!(err("host:123456/a").contains("invalid registry"));
        assert!(err("-bad.com/a").contains("invalid registry"));
        assert!(err("[::1/a").contains("invalid registry"));
        assert!(err("[::1]x/a").contains("invalid registry"));
        let long = format!("ghcr.io/{}", "a".repeat(250));
        assert!(err(&long).contains("longer than 255"));
        // The input is named in the message.
        assert!(err("Ubuntu").contains("`Ubuntu`"));
        // A long input is clipped.
        let long = format!("ghcr.io/a/{}", "B".repeat(20_000));
        assert!(err(&long).len() < 1000, "{}", err(&long).len());
    }

    #[test]
    fn a_login_is_refused_and_never_shown() {
        for (input, shown_as) in [
            ("user:s3cret@127.0.0.1:5000/x", "***@127.0.0.1:5000/x"),
            (
                "user:s3%40cret@127.0.0.1:5000/x:1",
                "***@127.0.0.1:5000/x:1",
            ),
            ("user:s3@cret@ghcr.io/a/b", "***@ghcr.io/a/b"),
            (
                &format!("user:s3cret@ghcr.io/a@{D}"),
                &format!("***@ghcr.io/a@{D}"),
            ),
            ("user:s3cret@localhost:5000", "***@localhost:5000"),
            ("user:s3cret@registry.example", "***@registry.example"),
            ("user:s3cret@", "***@"),
            (
                "docker://user:s3cret@h.example/x",
                "docker://***@h.example/x",
            ),
            ("https://user:s3cret@h.example/x", "https://***@h.example/x"),
            ("user:s3 cret@h.example/x", "***@h.example/x"),
        ] {
            assert!(login_end(input).is_some(), "{input}");
            assert_eq!(shown(input), shown_as);
            if input.starts_with("docker://") {
                continue;
            }
            let e = err(input);
            assert!(!e.contains("s3") && !e.contains("cret"), "{e}");
            assert!(
                e.contains(shown_as) && e.contains("a login (`user:password@`) does not belong"),
                "{e}"
            );
        }
        // References with a digest, or `@` and no password, are no logins.
        for input in [
            &format!("ghcr.io/a/b:1@{D}"),
            &format!("ubuntu:24.04@{D}"),
            "ubuntu@latest",
            "ubuntu@md5:abc",
            "ubuntu:1@sha256:abc",
        ] {
            assert_eq!(login_end(input), None, "{input}");
            assert_eq!(shown(input), input);
        }
    }

    #[test]
    fn parts_and_helpers() {
        let r = Reference::from_parts("127.0.0.1:5000", "team/app", Some("v1"), None).unwrap();
        assert_eq!(r.to_string(), "127.0.0.1:5000/team/app:v1");
        let p = r.with_digest(D.parse().unwrap());
        assert_eq!(p.to_string(), format!("127.0.0.1:5000/team/app:v1@{D}"));
        assert_eq!(p.manifest_reference(), D);
        let t = p.with_tag("v2").unwrap();
        assert_eq!(t.to_string(), "127.0.0.1:5000/team/app:v2");
        assert!(t.with_tag("bad tag").is_err());
        // from_parts refuses parts that would be normalized into something else.
        assert!(Reference::from_parts("docker.io", "ubuntu", None, None).is_err());
        assert!(Reference::from_parts("docker.io", "library/ubuntu", None, None).is_ok());
        assert_eq!(
            format!("{:?}", Reference::parse("ubuntu").unwrap()),
            "Reference(docker.io/library/ubuntu:latest)"
        );
        assert_eq!(api_host("docker.io"), "registry-1.docker.io");
        assert_eq!(api_host("ghcr.io"), "ghcr.io");
        // Round trip through Display.
        for s in [
            "docker.io/library/ubuntu:latest",
            "localhost:5000/a/b:c",
            &format!("ghcr.io/a/b:1@{D}"),
        ] {
            assert_eq!(norm(s), s);
            assert_eq!(norm(&norm(s)), s);
        }
    }
}
