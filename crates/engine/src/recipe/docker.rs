//! The config keys only Docker's image format has (`Volumes` is in both): `[config] volumes`,
//! `shell` and `[config.healthcheck]`, checked with their positions. How each is written into
//! the config is `build`'s; which outputs carry what is docs/recipe.md's.

use std::collections::BTreeSet;

use toml::Spanned;

use super::grammar::normalize_abs;
use super::raw::RawHealthcheck;
use super::{Ctx, Healthcheck, RecipeError};

type Result<T> = std::result::Result<T, RecipeError>;

/// `volumes = ["/data", "/cache/"]`: normalized like `dest`, deduplicated, sorted.
pub(super) fn volumes(ctx: &Ctx<'_>, raw: Option<Vec<Spanned<String>>>) -> Result<Vec<String>> {
    let mut out = BTreeSet::new();
    for v in raw.unwrap_or_default() {
        let p = normalize_abs(v.get_ref()).map_err(|m| {
            ctx.err(
                v.span(),
                format!("[config]: invalid volume `{}`: {m}", v.get_ref()),
            )
        })?;
        out.insert(p);
    }
    Ok(out.into_iter().collect())
}

/// `shell = ["/bin/bash", "-c"]`: not empty, the program an absolute path.
pub(super) fn shell(
    ctx: &Ctx<'_>,
    raw: Option<Spanned<Vec<Spanned<String>>>>,
) -> Result<Option<Vec<String>>> {
    let Some(raw) = raw else { return Ok(None) };
    let span = raw.span();
    let items = raw.into_inner();
    let Some(first) = items.first() else {
        return Err(ctx.err(
            span,
            "[config]: `shell` is empty; give the shell's argv, like [\"/bin/bash\", \"-c\"]",
        ));
    };
    if !first.get_ref().starts_with('/') || first.get_ref().contains('\0') {
        return Err(ctx.err(
            first.span(),
            format!(
                "[config]: invalid shell `{}`: expected an absolute path to the shell, like \
                 \"/bin/bash\"",
                first.get_ref()
            ),
        ));
    }
    Ok(Some(items.into_iter().map(Spanned::into_inner).collect()))
}

/// `[config.healthcheck]`: `test` as Docker takes it, durations in Go's syntax.
pub(super) fn healthcheck(
    ctx: &Ctx<'_>,
    raw: Option<Spanned<RawHealthcheck>>,
) -> Result<Option<Healthcheck>> {
    const WHAT: &str = "[config.healthcheck]";
    let Some(raw) = raw else { return Ok(None) };
    let span = raw.span();
    let h = raw.into_inner();
    let Some(test) = h.test else {
        return Err(ctx.err(
            span,
            format!(
                "{WHAT}: missing required key `test` (like [\"CMD\", \"/bin/check\"], \
                 [\"CMD-SHELL\", \"curl -f http://localhost/\"] or [\"NONE\"])"
            ),
        ));
    };
    let test_span = test.span();
    let test: Vec<String> = test
        .into_inner()
        .into_iter()
        .map(Spanned::into_inner)
        .collect();
    let problem = match test.first().map(String::as_str) {
        None => Some("is empty".to_string()),
        Some("NONE") if test.len() > 1 => Some("[\"NONE\"] takes nothing after it".into()),
        Some("NONE") => None,
        Some("CMD") if test.len() < 2 => Some("[\"CMD\"] needs the command's argv after it".into()),
        Some("CMD") => None,
        Some("CMD-SHELL") if test.len() != 2 => {
            Some("[\"CMD-SHELL\"] takes one shell line after it".into())
        }
        Some("CMD-SHELL") => None,
        Some(other) => Some(format!("starts with `{other}`")),
    };
    if let Some(p) = problem {
        return Err(ctx.err(
            test_span,
            format!(
                "{WHAT}: `test` {p}: expected [\"CMD\", argv…], [\"CMD-SHELL\", \"line\"] or \
                 [\"NONE\"]"
            ),
        ));
    }
    if test.iter().any(|t| t.contains('\0')) {
        return Err(ctx.err(test_span, format!("{WHAT}: `test` must not contain NUL")));
    }
    let none = test[0] == "NONE";
    let dur = |key: &str, v: Option<Spanned<String>>| -> Result<Option<u64>> {
        let Some(v) = v else { return Ok(None) };
        if none {
            return Err(ctx.err(
                v.span(),
                format!("{WHAT}: `{key}` has no use with test = [\"NONE\"] (no check): remove it"),
            ));
        }
        parse_duration(v.get_ref()).map(Some).map_err(|m| {
            ctx.err(
                v.span(),
                format!("{WHAT}: invalid {key} `{}`: {m}", v.get_ref()),
            )
        })
    };
    let interval_ns = dur("interval", h.interval)?;
    let timeout_ns = dur("timeout", h.timeout)?;
    let start_period_ns = dur("start-period", h.start_period)?;
    let start_interval_ns = dur("start-interval", h.start_interval)?;
    let retries = match h.retries {
        None => None,
        Some(r) if none => {
            return Err(ctx.err(
                r.span(),
                format!(
                    "{WHAT}: `retries` has no use with test = [\"NONE\"] (no check): remove it"
                ),
            ))
        }
        Some(r) => Some(u32::try_from(*r.get_ref()).map_err(|_| {
            ctx.err(
                r.span(),
                format!(
                    "{WHAT}: invalid retries `{}`: expected 0 to 4294967295",
                    r.get_ref()
                ),
            )
        })?),
    };
    Ok(Some(Healthcheck {
        test,
        interval_ns,
        timeout_ns,
        start_period_ns,
        start_interval_ns,
        retries,
    }))
}

impl Healthcheck {
    /// The config's `Healthcheck`, as Docker and BuildKit write it: `Test`, then only what the
    /// recipe gives (`Interval`, `Timeout`, `StartPeriod`, `StartInterval` in nanoseconds,
    /// `Retries`).
    pub fn config_value(&self) -> serde_json::Value {
        let mut v = serde_json::Map::new();
        v.insert("Test".into(), serde_json::json!(self.test));
        for (key, ns) in [
            ("Interval", self.interval_ns),
            ("Timeout", self.timeout_ns),
            ("StartPeriod", self.start_period_ns),
            ("StartInterval", self.start_interval_ns),
        ] {
            if let Some(ns) = ns {
                v.insert(key.into(), serde_json::json!(ns));
            }
        }
        if let Some(r) = self.retries {
            v.insert("Retries".into(), serde_json::json!(r));
        }
        serde_json::Value::Object(v)
    }
}

/// The largest duration Docker stores (an int64 of nanoseconds).
const MAX_NS: u128 = i64::MAX as u128;

/// A duration as Go's `time.ParseDuration` (and so `docker build`'s HEALTHCHECK) reads it, in
/// nanoseconds: `30s`, `1m30s`, `500ms`, `1.5h`; units `ns`, `us` (`µs`), `ms`, `s`, `m`, `h`.
/// No sign; at least 1ms, as Docker requires of a health check's durations.
pub(super) fn parse_duration(s: &str) -> std::result::Result<u64, String> {
    const EXPECTED: &str = "expected a duration like \"30s\", \"1m30s\" or \"500ms\" (units ns, us, ms, s, m, h), at least 1ms";
    let mut rest = s;
    let mut total: u128 = 0;
    if rest.is_empty() {
        return Err(EXPECTED.into());
    }
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int, after) = rest.split_at(int_len);
        let (frac, after) = match after.strip_prefix('.') {
            Some(a) => {
                let n = a.bytes().take_while(u8::is_ascii_digit).count();
                a.split_at(n)
            }
            None => ("", after),
        };
        if int.is_empty() && frac.is_empty() {
            return Err(EXPECTED.into());
        }
        let unit_len = after
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '.')
            .map_or(after.len(), |(i, _)| i);
        let (unit, after) = after.split_at(unit_len);
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(EXPECTED.into()),
        };
        let too_long = || format!("is longer than Docker can store ({MAX_NS}ns)");
        let whole: u128 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| too_long())?
        };
        let mut part = whole.checked_mul(scale).ok_or_else(too_long)?;
        // The fraction, digit by digit, truncated below a nanosecond as Go does.
        let mut unit_frac = scale;
        for d in frac.bytes().take(20) {
            unit_frac /= 10;
            part += u128::from(d - b'0') * unit_frac;
        }
        total = total.checked_add(part).ok_or_else(too_long)?;
        if total > MAX_NS {
            return Err(too_long());
        }
        rest = after;
    }
    if total < 1_000_000 {
        return Err(EXPECTED.into());
    }
    u64::try_from(total).map_err(|_| EXPECTED.into())
}

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn durations_as_go_reads_them() {
        assert_eq!(parse_duration("30s"), Ok(30_000_000_000));
        assert_eq!(parse_duration("1m30s"), Ok(90_000_000_000));
        assert_eq!(parse_duration("500ms"), Ok(500_000_000));
        assert_eq!(parse_duration("1.5h"), Ok(5_400_000_000_000));
        assert_eq!(parse_duration(".5s"), Ok(500_000_000));
        assert_eq!(parse_duration("1h2m3s4ms"), Ok(3_723_004_000_000));
        assert_eq!(parse_duration("1000us"), Ok(1_000_000));
        assert_eq!(parse_duration("1000µs"), Ok(1_000_000));
        for bad in [
            "", "30", "s", "1x", "-1s", "1s ", " 1s", "0s", "999us", ".s", "1..5s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
        assert!(parse_duration("9999999999h").is_err());
        assert!(parse_duration("99999999999999999999999999999999999999999s").is_err());
    }
}
