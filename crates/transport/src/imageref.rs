//! Image references as the command line writes them: one parser for every command that names
//! an image (`diff`, `verify --against`, `attest --image`, `push SRC`, `mirror SRC`, `build` and
//! `test -o`, and every registry destination: `push DEST`, `build --push`, `sign`, `plan
//! --against`).
//!
//! The rule, in order (the first that applies decides):
//! 1. A transport prefix names the transport: `oci:PATH[:TAG]` (an OCI image layout),
//!    `oci-archive:FILE`, `docker-archive:FILE`, `docker://REF` (a registry) and `vendor:DIR`
//!    (a vendor directory, only for `mirror`). What follows the prefix must not be empty.
//! 2. `sha256:…` that is no existing path is a manifest digest (64 lower-case hex digits, or
//!    the string is refused); only `verify --against` takes one.
//! 3. A string without a prefix:
//!    - where a registry reference is wanted ([`Role::Registry`]), it is one (`docker://` may
//!      be left out, as crane and `docker push` write it), whatever directories exist;
//!    - an existing directory is that layout, with no tag, whatever colons its name has;
//!    - `user:password@host/…` (a login pasted into a reference) that is no existing path is
//!      refused before anything quotes it ([`crate::registry::reference::LOGIN_PROBLEM`]);
//!    - otherwise it is a layout path, with the `:TAG` split off as in rule 4 (outputs take no
//!      tag: the whole string is the path). When that path does not exist and the string
//!      starts `NAME:` with NAME a transport-like word (a letter, then letters, digits and
//!      `-`) that is no directory either, it is an unknown transport (skopeo's rule:
//!      `docker-daemon:x`, `tar:x`, `localhost:5000/a:b` without `docker://`), not a path.
//! 4. A layout's `:TAG` is split at the last `:` after the last `/` (`dir:with:colons:tag` is
//!    `dir:with:colons` tagged `tag`; `./x:y/dir` has no tag); a `:` first in the string is
//!    part of the path; an empty tag (`DIR:`) is no tag, which is how a directory whose name
//!    has a colon is named with `oci:` (`oci:a:b:`). `oci:` forces a layout, and its `:TAG` is
//!    split even when the whole is an existing directory. Outputs (`build -o`) take no tag: all
//!    of `oci:a:b` is the directory `a:b`.
//! 5. Registry references are [`crate::registry::Reference`]'s grammar: `[REGISTRY/]REPOSITORY
//!    [:TAG][@sha256:HEX]`, lower-case repositories, a digest of 64 lower-case hex digits; a
//!    port (`localhost:5000/a/b:tag`) is no tag.
//!
//! Paths are the user's own and are not confined (`..` is a path like any other); nothing is
//! opened here, only `is_dir`/`exists` asked. Each [`Role`] then accepts some of the parsed
//! forms; any other transport is refused as unknown for that command.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::digest::Digest;
use crate::registry::reference::{login_end, shown, LOGIN_PROBLEM};
use crate::registry::{Reference, ReferenceError};

/// Where an image is (or goes), parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageRef {
    /// `DIR`, `DIR:TAG`, `oci:DIR` or `oci:DIR:TAG`: an OCI image layout.
    Layout { dir: PathBuf, tag: Option<String> },
    /// `oci-archive:FILE`: a tar of an OCI image layout.
    OciArchive(PathBuf),
    /// `docker-archive:FILE`: a `docker save` tar.
    DockerArchive(PathBuf),
    /// `docker://REF` (or a bare `REF` where a registry is wanted): by tag or by digest.
    Registry(Reference),
    /// `sha256:HEX`: a manifest digest only (for `verify --against`).
    Digest(Digest),
    /// `vendor:DIR`: every base image of a vendor directory (for `mirror`).
    Vendor(PathBuf),
}

/// What a command takes, which decides the forms accepted and the words of its errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// An image read (`diff`, `verify --against`, `attest --image`): a layout, an archive or
    /// `docker://REF`; with `digest`, also `sha256:DIGEST`.
    Source { digest: bool },
    /// Where a build is written (`build -o`, `test -o`): a layout (no tag) or an archive.
    Output,
    /// `push SRC`: a layout, with an optional tag, or an archive.
    Push,
    /// `mirror SRC`: a layout with an optional tag, or `vendor:DIR`.
    Mirror,
    /// A registry reference: `[docker://]REF`.
    Registry,
}

impl Role {
    fn what(self) -> &'static str {
        match self {
            Role::Output => "output",
            Role::Registry => "registry reference",
            _ => "image",
        }
    }

    fn expected(self) -> &'static str {
        match self {
            Role::Source { digest: false } => {
                "DIR, oci:DIR[:TAG], oci-archive:FILE, docker-archive:FILE, docker://REF"
            }
            Role::Source { digest: true } => {
                "DIR, oci:DIR[:TAG], oci-archive:FILE, docker-archive:FILE, docker://REF or \
                 sha256:DIGEST"
            }
            Role::Output => "DIR, oci:DIR, oci-archive:FILE or docker-archive:FILE",
            Role::Push => "DIR[:TAG], oci:DIR[:TAG], oci-archive:FILE or docker-archive:FILE",
            Role::Mirror => "DIR[:TAG], oci:DIR[:TAG] or vendor:DIR",
            Role::Registry => "[docker://]REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST]",
        }
    }

    fn accepts(self, r: &ImageRef) -> bool {
        match (self, r) {
            (Role::Source { digest }, ImageRef::Digest(_)) => digest,
            (Role::Source { .. }, ImageRef::Vendor(_)) => false,
            (Role::Source { .. }, _) => true,
            (
                Role::Output,
                ImageRef::Layout { tag: None, .. }
                | ImageRef::OciArchive(_)
                | ImageRef::DockerArchive(_),
            ) => true,
            (Role::Push | Role::Mirror, ImageRef::Layout { .. }) => true,
            (Role::Push, ImageRef::OciArchive(_) | ImageRef::DockerArchive(_)) => true,
            (Role::Mirror, ImageRef::Vendor(_)) => true,
            (Role::Registry, ImageRef::Registry(_)) => true,
            _ => false,
        }
    }

    /// What follows an unknown transport's message.
    fn hint(self, transport: &str) -> &'static str {
        match (self, transport) {
            (Role::Output, "docker" | "containers-storage" | "docker-daemon") => {
                "; to send the image to a registry, use --push REF"
            }
            (Role::Output, _) => {
                "; a directory whose name has a colon is written ./NAME or oci:NAME"
            }
            (Role::Source { .. }, _) => "; a registry image is written docker://REF",
            (Role::Push | Role::Mirror, _) => "; no such layout directory either",
            (Role::Registry, _) => "",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageRefError {
    /// A form this parser does not know, or an empty path after a transport.
    #[error("unknown {what} `{input}`: expected {expected}")]
    Unknown {
        what: &'static str,
        input: String,
        expected: &'static str,
    },
    /// A `NAME:` prefix that names no transport the command takes.
    #[error("unknown {what} transport `{transport}:` in `{input}`: expected {expected}{hint}")]
    UnknownTransport {
        what: &'static str,
        transport: String,
        input: String,
        expected: &'static str,
        hint: &'static str,
    },
    #[error("`{input}` names only a manifest digest: it can be compared with, not read (give an image: oci:DIR, an archive or docker://REF)")]
    DigestOnly { input: String },
    /// A registry reference that is not one (its message quotes it, a login masked).
    #[error(transparent)]
    Reference(#[from] ReferenceError),
}

impl ImageRef {
    /// Parse `s` for `role` (the module docs give the rule).
    pub fn parse(s: &str, role: Role) -> Result<ImageRef, ImageRefError> {
        let parsed = parse_any(s, role)?;
        if role.accepts(&parsed) {
            return Ok(parsed);
        }
        Err(match parsed {
            ImageRef::Digest(_) if matches!(role, Role::Source { .. }) => {
                ImageRefError::DigestOnly { input: shown(s) }
            }
            other => transport_error(s, other.transport(), role),
        })
    }

    /// `push SRC`: the layout directory and the tag, if one is named.
    pub fn parse_layout(s: &str) -> Result<(PathBuf, Option<String>), ImageRefError> {
        match ImageRef::parse(s, Role::Push)? {
            ImageRef::Layout { dir, tag } => Ok((dir, tag)),
            _ => Err(unknown(s, Role::Push)),
        }
    }

    /// A registry destination: `[docker://]REF`.
    pub fn parse_registry(s: &str) -> Result<Reference, ImageRefError> {
        match ImageRef::parse(s, Role::Registry)? {
            ImageRef::Registry(r) => Ok(r),
            _ => Err(unknown(s, Role::Registry)),
        }
    }

    /// The transport's name, as its prefix writes it (without the `:`).
    pub fn transport(&self) -> &'static str {
        match self {
            ImageRef::Layout { .. } => "oci",
            ImageRef::OciArchive(_) => "oci-archive",
            ImageRef::DockerArchive(_) => "docker-archive",
            ImageRef::Registry(_) => "docker",
            ImageRef::Digest(_) => "sha256",
            ImageRef::Vendor(_) => "vendor",
        }
    }
}

impl ImageRefError {
    /// `s` is no form `role` takes: what a caller says of a parsed form it has no use for.
    pub fn unknown(s: &str, role: Role) -> ImageRefError {
        ImageRefError::Unknown {
            what: role.what(),
            input: shown(s),
            expected: role.expected(),
        }
    }
}

fn unknown(s: &str, role: Role) -> ImageRefError {
    ImageRefError::unknown(s, role)
}

fn transport_error(s: &str, transport: &str, role: Role) -> ImageRefError {
    ImageRefError::UnknownTransport {
        what: role.what(),
        transport: transport.to_string(),
        input: shown(s),
        expected: role.expected(),
        hint: role.hint(transport),
    }
}

/// Rules 1 to 5, before the role picks what it takes.
fn parse_any(s: &str, role: Role) -> Result<ImageRef, ImageRefError> {
    let nonempty = |p: &str| {
        if p.is_empty() {
            Err(unknown(s, role))
        } else {
            Ok(PathBuf::from(p))
        }
    };
    if let Some(p) = s.strip_prefix("oci-archive:") {
        return Ok(ImageRef::OciArchive(nonempty(p)?));
    }
    if let Some(p) = s.strip_prefix("docker-archive:") {
        return Ok(ImageRef::DockerArchive(nonempty(p)?));
    }
    if let Some(p) = s.strip_prefix("vendor:") {
        return Ok(ImageRef::Vendor(nonempty(p)?));
    }
    if let Some(r) = s.strip_prefix("docker://") {
        if !matches!(role, Role::Source { .. } | Role::Registry) {
            // Refused unparsed: the command writes or reads no registry.
            return Err(transport_error(s, "docker", role));
        }
        if r.is_empty() {
            return Err(unknown(s, role));
        }
        return Ok(ImageRef::Registry(Reference::parse(r)?));
    }
    if let Some(rest) = s.strip_prefix("oci:") {
        if rest.is_empty() {
            return Err(unknown(s, role));
        }
        return Ok(layout(rest, role));
    }
    if s.starts_with("sha256:") && !Path::new(s).exists() {
        return s
            .parse::<Digest>()
            .map(ImageRef::Digest)
            .map_err(|_| unknown(s, role));
    }
    if s.is_empty() {
        return Err(unknown(s, role));
    }
    if role == Role::Registry {
        return Ok(ImageRef::Registry(Reference::parse(s)?));
    }
    if Path::new(s).is_dir() {
        return Ok(ImageRef::Layout {
            dir: PathBuf::from(s),
            tag: None,
        });
    }
    if login_end(s).is_some() && !Path::new(s).exists() {
        let input = shown(s);
        return Err(ReferenceError::Invalid {
            input,
            problem: LOGIN_PROBLEM.into(),
        }
        .into());
    }
    let parsed = layout(s, role);
    if let (ImageRef::Layout { dir, .. }, Some(name)) = (&parsed, transport_prefix(s)) {
        if !dir.exists() && !Path::new(name).is_dir() {
            return Err(transport_error(s, name, role));
        }
    }
    Ok(parsed)
}

/// A layout path, `:TAG` split off (rule 4) except for outputs.
fn layout(rest: &str, role: Role) -> ImageRef {
    if role == Role::Output {
        return ImageRef::Layout {
            dir: PathBuf::from(rest),
            tag: None,
        };
    }
    let slash = rest.rfind('/').map_or(0, |i| i + 1);
    match rest[slash..].rfind(':') {
        Some(i) if slash + i > 0 => ImageRef::Layout {
            dir: PathBuf::from(&rest[..slash + i]),
            tag: Some(rest[slash + i + 1..].to_string()).filter(|t| !t.is_empty()),
        },
        _ => ImageRef::Layout {
            dir: PathBuf::from(rest),
            tag: None,
        },
    }
}

/// The `name` of `name:rest` when `name` looks like a transport (a letter, then letters,
/// digits and `-`): what skopeo would take as one.
fn transport_prefix(s: &str) -> Option<&str> {
    let (name, _) = s.split_once(':')?;
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-');
    ok.then_some(name)
}

impl fmt::Display for ImageRef {
    /// The canonical spelling, with its transport: what messages name the image by.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageRef::Layout { dir, tag: None } => write!(f, "oci:{}", dir.display()),
            ImageRef::Layout { dir, tag: Some(t) } => write!(f, "oci:{}:{t}", dir.display()),
            ImageRef::OciArchive(p) => write!(f, "oci-archive:{}", p.display()),
            ImageRef::DockerArchive(p) => write!(f, "docker-archive:{}", p.display()),
            ImageRef::Registry(r) => write!(f, "docker://{r}"),
            ImageRef::Digest(d) => write!(f, "{d}"),
            ImageRef::Vendor(p) => write!(f, "vendor:{}", p.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: Role = Role::Source { digest: false };
    const VERIFY: Role = Role::Source { digest: true };

    fn lay(dir: &str, tag: Option<&str>) -> ImageRef {
        ImageRef::Layout {
            dir: dir.into(),
            tag: tag.map(str::to_string),
        }
    }

    fn reg(s: &str) -> ImageRef {
        ImageRef::Registry(s.parse().unwrap())
    }

    fn err(s: &str, role: Role) -> String {
        ImageRef::parse(s, role).unwrap_err().to_string()
    }

    #[test]
    fn the_table() {
        let d = Digest::of(b"x");
        let ds = d.to_string();
        let by_digest = format!("docker://h.io/a@{ds}");
        let tagged_digest = format!("h.io/a:t@{ds}");
        let rows: Vec<(&str, Role, ImageRef)> = vec![
            // Layouts: the tag after the last `/`, never a leading colon, empty is none.
            ("oci:out/app.oci:v1", SRC, lay("out/app.oci", Some("v1"))),
            ("/nonexistent/a.oci", SRC, lay("/nonexistent/a.oci", None)),
            (
                "/nonexistent/a.oci:v1",
                SRC,
                lay("/nonexistent/a.oci", Some("v1")),
            ),
            ("a.oci:v1", SRC, lay("a.oci", Some("v1"))),
            ("oci:out:v1", Role::Push, lay("out", Some("v1"))),
            (
                "/a/b.oci:latest",
                Role::Push,
                lay("/a/b.oci", Some("latest")),
            ),
            ("./x:y/dir", Role::Push, lay("./x:y/dir", None)),
            (
                "./dir:with:colons:tag",
                Role::Mirror,
                lay("./dir:with:colons", Some("tag")),
            ),
            (
                "oci:dir:with:colons:tag",
                SRC,
                lay("dir:with:colons", Some("tag")),
            ),
            ("oci:a:b:", SRC, lay("a:b", None)),
            ("/x/out:", Role::Push, lay("/x/out", None)),
            ("oci::v1", SRC, lay(":v1", None)),
            ("..", SRC, lay("..", None)),
            ("oci:..", Role::Push, lay("..", None)),
            ("../x.oci:t", Role::Mirror, lay("../x.oci", Some("t"))),
            ("oci:../../etc:t", SRC, lay("../../etc", Some("t"))),
            // Outputs take no tag.
            ("out", Role::Output, lay("out", None)),
            ("oci:/a/b", Role::Output, lay("/a/b", None)),
            ("./a:b", Role::Output, lay("./a:b", None)),
            ("oci:a:b", Role::Output, lay("a:b", None)),
            // Archives.
            (
                "oci-archive:x.tar",
                SRC,
                ImageRef::OciArchive("x.tar".into()),
            ),
            (
                "oci-archive:x.tar",
                Role::Output,
                ImageRef::OciArchive("x.tar".into()),
            ),
            (
                "docker-archive:d.tar",
                SRC,
                ImageRef::DockerArchive("d.tar".into()),
            ),
            (
                "docker-archive:a:b",
                Role::Output,
                ImageRef::DockerArchive("a:b".into()),
            ),
            // Registries: docker:// for reads, optional for destinations.
            (
                "docker://localhost:5000/a/b:1",
                SRC,
                reg("localhost:5000/a/b:1"),
            ),
            (
                "localhost:5000/a/b:tag",
                Role::Registry,
                reg("localhost:5000/a/b:tag"),
            ),
            (
                "docker://localhost:5000/a/b:tag",
                Role::Registry,
                reg("localhost:5000/a/b:tag"),
            ),
            (
                "ubuntu",
                Role::Registry,
                reg("docker.io/library/ubuntu:latest"),
            ),
            ("oci", Role::Registry, reg("docker.io/library/oci:latest")),
            // By digest.
            (&by_digest, SRC, reg(&format!("h.io/a@{ds}"))),
            (
                &tagged_digest,
                Role::Registry,
                reg(&format!("h.io/a:t@{ds}")),
            ),
            (&ds, VERIFY, ImageRef::Digest(d)),
            // Vendor directories, for mirror.
            ("vendor:v", Role::Mirror, ImageRef::Vendor("v".into())),
        ];
        for (input, role, want) in rows {
            assert_eq!(
                ImageRef::parse(input, role).as_ref(),
                Ok(&want),
                "{input} ({role:?})"
            );
        }
    }

    #[test]
    fn existing_directories() {
        let t = tempfile::tempdir().unwrap();
        let colon = t.path().join("a:b");
        fs_err::create_dir(&colon).unwrap();
        let c = colon.to_str().unwrap();
        // A plain existing directory is itself, colon and all; `oci:` splits; `:TAG` after it.
        for role in [SRC, Role::Push, Role::Mirror, Role::Output] {
            assert_eq!(ImageRef::parse(c, role), Ok(lay(c, None)), "{role:?}");
        }
        let parent = t.path().join("a");
        let p = parent.to_str().unwrap();
        assert_eq!(
            ImageRef::parse(&format!("oci:{c}"), SRC),
            Ok(lay(p, Some("b")))
        );
        assert_eq!(ImageRef::parse(&format!("oci:{c}:"), SRC), Ok(lay(c, None)));
        assert_eq!(
            ImageRef::parse(&format!("{c}:v1"), Role::Push),
            Ok(lay(c, Some("v1")))
        );
        // A digest-named path that exists is a path.
        let d = Digest::of(b"y").to_string();
        let named = t.path().join(&d);
        fs_err::create_dir(&named).unwrap();
        let n = named.to_str().unwrap();
        assert_eq!(ImageRef::parse(n, VERIFY), Ok(lay(n, None)));
        // A destination is a reference whatever directories exist.
        assert!(ImageRef::parse(c, Role::Registry).is_err());
    }

    #[test]
    fn refusals() {
        let d = Digest::of(b"x").to_string();
        let expected_src =
            "expected DIR, oci:DIR[:TAG], oci-archive:FILE, docker-archive:FILE, docker://REF";
        for (input, role) in [
            ("", SRC),
            ("oci:", SRC),
            ("oci:", Role::Push),
            ("oci-archive:", SRC),
            ("docker-archive:", SRC),
            ("docker://", SRC),
            ("vendor:", Role::Mirror),
            ("sha256:abc", VERIFY),
        ] {
            let e = err(input, role);
            assert!(
                e.starts_with(&format!("unknown image `{input}`: expected")),
                "{e}"
            );
        }
        assert_eq!(
            err("oci-archive:", SRC),
            format!("unknown image `oci-archive:`: {expected_src}")
        );
        assert_eq!(
            err("sha256:abc", VERIFY),
            format!("unknown image `sha256:abc`: {expected_src} or sha256:DIGEST")
        );
        assert_eq!(
            err("oci-archive:", Role::Output),
            "unknown output `oci-archive:`: expected DIR, oci:DIR, oci-archive:FILE or docker-archive:FILE"
        );
        assert!(err("", Role::Output).starts_with("unknown output ``"));
        // A digest where an image is read.
        assert!(matches!(
            ImageRef::parse(&d, SRC),
            Err(ImageRefError::DigestOnly { .. })
        ));
        // Unknown transports, and known ones the command does not take.
        for (input, role, transport) in [
            ("tar:x", Role::Output, "tar"),
            ("oci-archiv:y.tar", Role::Output, "oci-archiv"),
            ("docker://host/x:1", Role::Output, "docker"),
            ("docker://Not A Ref", Role::Output, "docker"),
            ("containers-storage:x", Role::Output, "containers-storage"),
            ("vendor:v", Role::Output, "vendor"),
            ("docker-daemon:x", SRC, "docker-daemon"),
            ("localhost:5000/a/b:tag", SRC, "localhost"),
            ("vendor:v", SRC, "vendor"),
            ("vendor:x", Role::Push, "vendor"),
            ("docker://h/x", Role::Push, "docker"),
            ("docker-archive:x.tar", Role::Mirror, "docker-archive"),
            ("oci:x", Role::Registry, "oci"),
            ("oci-archive:x", Role::Registry, "oci-archive"),
            ("vendor:x", Role::Registry, "vendor"),
        ] {
            let e = err(input, role);
            assert!(
                e.starts_with(&format!(
                    "unknown {} transport `{transport}:` in `{input}`: expected",
                    role.what()
                )),
                "{e}"
            );
        }
        assert_eq!(
            err(&d, Role::Registry),
            format!("unknown registry reference transport `sha256:` in `{d}`: expected [docker://]REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST]")
        );
        assert!(err("docker://h/x", Role::Output).ends_with("use --push REF"));
        assert!(err("tar:x", Role::Output).ends_with("written ./NAME or oci:NAME"));
        assert!(err("localhost:5000/a:b", SRC).ends_with("written docker://REF"));
        // Registry references: the grammar's refusals.
        for input in [
            "docker://library/Ubuntu",
            "docker://h.io/a@sha256:xyz",
            &format!("docker://h.io/a@{}", &d[..70]),
            "docker://h.io/a:",
            "docker://https://h.io/a",
        ] {
            assert!(
                matches!(
                    ImageRef::parse(input, SRC),
                    Err(ImageRefError::Reference(_))
                ),
                "{input}"
            );
        }
        for input in ["library/Ubuntu", "h.io/a@sha256:nothex", "Has Space"] {
            assert!(
                matches!(
                    ImageRef::parse(input, Role::Registry),
                    Err(ImageRefError::Reference(_))
                ),
                "{input}"
            );
        }
        // A bare `name@sha256:…` read is a path (registries are docker://).
        assert_eq!(
            ImageRef::parse("name@sha256:bad", SRC),
            Ok(lay("name@sha256", Some("bad")))
        );
    }

    #[test]
    fn logins_are_refused_unquoted() {
        for role in [
            SRC,
            VERIFY,
            Role::Push,
            Role::Mirror,
            Role::Output,
            Role::Registry,
        ] {
            for input in [
                "user:s3cret@127.0.0.1:5000/team/x",
                "docker://user:s3cret@127.0.0.1:5000/team/x",
                "user:s3cret@127.0.0.1:5000/team/x:1",
            ] {
                let e = err(input, role);
                assert!(!e.contains("s3cret"), "{role:?} {input}: {e}");
                // A command that takes no registry refuses `docker://` unparsed (masked).
                let registry = matches!(role, Role::Source { .. } | Role::Registry);
                if registry || !input.starts_with("docker://") {
                    assert!(e.contains(LOGIN_PROBLEM), "{role:?} {input}: {e}");
                }
            }
        }
    }

    #[test]
    fn display() {
        let d = Digest::of(b"x");
        for (input, role, shown) in [
            ("oci:a.oci:v1", SRC, "oci:a.oci:v1"),
            ("a.oci", SRC, "oci:a.oci"),
            ("oci-archive:x.tar", SRC, "oci-archive:x.tar"),
            ("docker-archive:x.tar", SRC, "docker-archive:x.tar"),
            (
                "docker://ubuntu",
                SRC,
                "docker://docker.io/library/ubuntu:latest",
            ),
            ("vendor:v", Role::Mirror, "vendor:v"),
        ] {
            assert_eq!(ImageRef::parse(input, role).unwrap().to_string(), shown);
        }
        assert_eq!(ImageRef::Digest(d).to_string(), d.to_string());
        assert_eq!(
            ImageRef::parse_layout("oci:out:v1"),
            Ok(("out".into(), Some("v1".into())))
        );
        assert_eq!(
            ImageRef::parse_registry("docker://h.io/a:1").map(|r| r.to_string()),
            Ok("h.io/a:1".to_string())
        );
    }
}
