//! Platforms: `os/arch[/variant]`, the one type for a recipe's target, a descriptor's
//! `platform` in an image index, and the host.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An OCI platform. What [`Platform::parse`] and [`Platform::host`] return is normalized:
/// `architecture` is the GOARCH spelling (`amd64`, `arm64`, ...), `arm64` always carries
/// variant `v8` unless another one is given, `arm` defaults to `v7`. Read from an index, it
/// is as the index wrote it (missing fields empty: registries and layouts are lenient).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Platform {
    #[serde(default)]
    pub os: String,
    #[serde(default)]
    pub architecture: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

/// Architectures a recipe may target, in GOARCH spelling.
const ARCHES: &[&str] = &[
    "amd64", "arm64", "arm", "386", "ppc64le", "s390x", "riscv64", "mips64le", "loong64",
];

impl Platform {
    /// The platform whose binaries this host runs natively. The os is always `linux`: ocibuild
    /// builds Linux images, also on other hosts (as docker does on macOS).
    pub fn host() -> Platform {
        let (arch, variant) = match std::env::consts::ARCH {
            "x86_64" => ("amd64", None),
            "aarch64" => ("arm64", Some("v8")),
            "x86" => ("386", None),
            "arm" => ("arm", Some("v7")),
            "powerpc64" if cfg!(target_endian = "little") => ("ppc64le", None),
            "powerpc64" => ("ppc64", None),
            "s390x" => ("s390x", None),
            "riscv64" => ("riscv64", None),
            "loongarch64" => ("loong64", None),
            "mips64" if cfg!(target_endian = "little") => ("mips64le", None),
            other => (other, None),
        };
        Platform {
            os: "linux".to_string(),
            architecture: arch.to_string(),
            variant: variant.map(str::to_string),
        }
    }

    /// Parses `os/arch[/variant]`, e.g. `linux/amd64`, `linux/arm64/v8`, `linux/arm/v7`.
    /// Accepts common aliases (`x86_64`, `aarch64`, `armhf`, `i386`, ...) and any case; the result
    /// is normalized (`linux/arm64` → `linux/arm64/v8`, `linux/amd64/v1` → `linux/amd64`).
    /// The error is a message without the input, for the caller to put in context.
    pub fn parse(s: &str) -> Result<Platform, String> {
        let lower = s.to_ascii_lowercase();
        let parts: Vec<&str> = lower.split('/').collect();
        if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.is_empty()) {
            return Err(
                "expected `os/arch[/variant]`, like `linux/amd64` or `linux/arm64/v8`".into(),
            );
        }
        let os = parts[0];
        if os != "linux" {
            return Err(format!(
                "unsupported os `{os}`: ocibuild builds `linux` images"
            ));
        }
        let given_variant = parts.get(2).copied();
        let (arch, implied) = match parts[1] {
            "amd64" | "x86_64" | "x86-64" => ("amd64", None),
            "arm64" | "aarch64" => ("arm64", Some("v8")),
            "arm" => ("arm", Some("v7")),
            "armhf" => ("arm", Some("v7")),
            "armel" => ("arm", Some("v6")),
            "386" | "i386" | "i686" | "x86" => ("386", None),
            "ppc64le" | "ppc64el" => ("ppc64le", None),
            "s390x" => ("s390x", None),
            "riscv64" => ("riscv64", None),
            "mips64le" | "mips64el" => ("mips64le", None),
            "loong64" | "loongarch64" => ("loong64", None),
            other => {
                return Err(format!(
                    "unknown architecture `{other}`, expected one of {}",
                    ARCHES
                        .iter()
                        .map(|a| format!("`{a}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
        };
        if let (Some(implied), Some(_), "armhf" | "armel") = (implied, given_variant, parts[1]) {
            // `armhf/v6` contradicts itself.
            return Err(format!(
                "`{}` already implies variant `{implied}`; write `{os}/{arch}/<variant>` instead",
                parts[1]
            ));
        }
        let variant = match (arch, given_variant) {
            (_, None) => implied.map(str::to_string),
            ("arm64", Some(v)) => Some(version_variant(v, &["8", "8.0"], "v8", arch)?),
            ("arm", Some(v)) => Some(version_variant(v, &[], "", arch)?),
            ("amd64", Some("v1" | "1")) => None,
            ("amd64", Some(v)) => {
                let v = version_variant(v, &[], "", arch)?;
                if !matches!(v.as_str(), "v2" | "v3" | "v4") {
                    return Err(format!(
                        "unknown variant `{v}` for `amd64`, expected `v1`, `v2`, `v3` or `v4`"
                    ));
                }
                Some(v)
            }
            (_, Some(v)) => {
                if !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') {
                    return Err(format!("invalid variant `{v}`"));
                }
                Some(v.to_string())
            }
        };
        Ok(Platform {
            os: os.to_string(),
            architecture: arch.to_string(),
            variant,
        })
    }
}

impl Platform {
    /// Whether `self` (as an index wrote it) is the platform `wanted`: the same os and
    /// architecture, and the same variant once defaults are filled in (`arm64` is `v8`, `arm`
    /// is `v7`, `amd64/v1` is `amd64`), so a lenient index entry still matches.
    pub fn matches(&self, wanted: &Platform) -> bool {
        self.os == wanted.os
            && self.architecture == wanted.architecture
            && default_variant(self) == default_variant(wanted)
    }

    /// An index entry that is not an image of a platform: buildkit's attestation manifests
    /// (`unknown/unknown`).
    pub fn is_unknown(&self) -> bool {
        self.os == "unknown" && self.architecture == "unknown"
    }
}

/// The variant with the defaults filled in, for [`Platform::matches`].
fn default_variant(p: &Platform) -> Option<&str> {
    match (p.architecture.as_str(), p.variant.as_deref()) {
        ("arm64", Some("v8") | None) | ("amd64", Some("v1")) => None,
        ("arm", None) => Some("v7"),
        (_, v) => v,
    }
}

/// `v8`, `8`, `v8.2` → `v8`, `v8`, `v8.2`; `aliases` map to `canonical`.
fn version_variant(
    v: &str,
    aliases: &[&str],
    canonical: &str,
    arch: &str,
) -> Result<String, String> {
    if aliases.contains(&v) {
        return Ok(canonical.to_string());
    }
    let digits = v.strip_prefix('v').unwrap_or(v);
    let ok = !digits.is_empty()
        && digits.split('.').count() <= 2
        && digits
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    if !ok {
        return Err(format!(
            "invalid variant `{v}` for `{arch}`, expected a version like `v7` or `v8`"
        ));
    }
    if digits == "8.0" && arch == "arm64" {
        return Ok("v8".to_string());
    }
    Ok(format!("v{digits}"))
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_entries_match_with_default_variants() {
        let entry = |os: &str, arch: &str, v: Option<&str>| Platform {
            os: os.into(),
            architecture: arch.into(),
            variant: v.map(str::to_string),
        };
        let arm64 = Platform::parse("linux/arm64").unwrap();
        assert!(entry("linux", "arm64", None).matches(&arm64));
        assert!(entry("linux", "arm64", Some("v8")).matches(&arm64));
        let v7 = Platform::parse("linux/arm/v7").unwrap();
        assert!(entry("linux", "arm", None).matches(&v7));
        assert!(!entry("linux", "arm", Some("v6")).matches(&v7));
        let amd64 = Platform::parse("linux/amd64").unwrap();
        assert!(entry("linux", "amd64", Some("v1")).matches(&amd64));
        assert!(!entry("linux", "amd64", Some("v3")).matches(&amd64));
        assert!(entry("unknown", "unknown", None).is_unknown());
    }

    fn p(s: &str) -> String {
        match Platform::parse(s) {
            Ok(p) => p.to_string(),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn parse_normalizes() {
        assert_eq!(p("linux/amd64"), "linux/amd64");
        assert_eq!(p("linux/x86_64"), "linux/amd64");
        assert_eq!(p("Linux/AMD64"), "linux/amd64");
        assert_eq!(p("linux/amd64/v1"), "linux/amd64");
        assert_eq!(p("linux/amd64/v3"), "linux/amd64/v3");
        assert_eq!(p("linux/arm64"), "linux/arm64/v8");
        assert_eq!(p("linux/aarch64"), "linux/arm64/v8");
        assert_eq!(p("linux/arm64/8"), "linux/arm64/v8");
        assert_eq!(p("linux/arm64/v8.0"), "linux/arm64/v8");
        assert_eq!(p("linux/arm64/v9"), "linux/arm64/v9");
        assert_eq!(p("linux/arm"), "linux/arm/v7");
        assert_eq!(p("linux/arm/6"), "linux/arm/v6");
        assert_eq!(p("linux/armhf"), "linux/arm/v7");
        assert_eq!(p("linux/i386"), "linux/386");
        assert_eq!(p("linux/ppc64el"), "linux/ppc64le");
    }

    #[test]
    fn parse_errors() {
        assert_eq!(
            p("linux"),
            "error: expected `os/arch[/variant]`, like `linux/amd64` or `linux/arm64/v8`"
        );
        assert_eq!(
            p("linux/amd64/"),
            "error: expected `os/arch[/variant]`, like `linux/amd64` or `linux/arm64/v8`"
        );
        assert_eq!(
            p("linux/a/b/c"),
            "error: expected `os/arch[/variant]`, like `linux/amd64` or `linux/arm64/v8`"
        );
        assert_eq!(
            p("windows/amd64"),
            "error: unsupported os `windows`: ocibuild builds `linux` images"
        );
        assert_eq!(
            p("linux/amd46"),
            "error: unknown architecture `amd46`, expected one of `amd64`, `arm64`, `arm`, \
             `386`, `ppc64le`, `s390x`, `riscv64`, `mips64le`, `loong64`"
        );
        assert_eq!(
            p("linux/amd64/v7"),
            "error: unknown variant `v7` for `amd64`, expected `v1`, `v2`, `v3` or `v4`"
        );
        assert_eq!(
            p("linux/arm/x"),
            "error: invalid variant `x` for `arm`, expected a version like `v7` or `v8`"
        );
        assert_eq!(
            p("linux/armhf/v6"),
            "error: `armhf` already implies variant `v7`; write `linux/arm/<variant>` instead"
        );
    }

    #[test]
    fn host_round_trips() {
        let h = Platform::host();
        assert_eq!(h.os, "linux");
        if ARCHES.contains(&h.architecture.as_str()) {
            assert_eq!(Platform::parse(&h.to_string()), Ok(h));
        }
    }
}
