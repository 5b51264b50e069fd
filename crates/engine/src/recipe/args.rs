//! `[args]`: build arguments, Dockerfile's `ARG`. Each `NAME = "default"`, overridden by
//! `--build-arg NAME=VALUE` ([`ArgOverride`]), is substituted into a fixed set of the recipe's
//! strings before they are checked (`${NAME}`, `${NAME:-default}`, `$NAME`; `$$` is a `$`), so
//! every later check and message sees the value, at the position of the string written. Only
//! declared names are replaced: any other `$…` is left as written. A recipe without `[args]`
//! is never touched. The set is docs/recipe.md's ("Build arguments").

use std::collections::BTreeMap;

use toml::Spanned;

use super::raw::{Argv, RawRecipe, SpannedMap};
use super::{Ctx, RecipeError};

type Result<T> = std::result::Result<T, RecipeError>;

/// `--build-arg NAME=VALUE`, or `--build-arg NAME` with the value the environment had
/// (`None`: unset there, so the default stays, as docker does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgOverride {
    pub name: String,
    pub value: Option<String>,
}

impl ArgOverride {
    /// `NAME=VALUE` as given, or `NAME` with `from_env`'s value.
    pub fn parse(text: &str, from_env: impl FnOnce(&str) -> Option<String>) -> ArgOverride {
        match text.split_once('=') {
            Some((name, value)) => ArgOverride {
                name: name.to_string(),
                value: Some(value.to_string()),
            },
            None => ArgOverride {
                name: text.to_string(),
                value: from_env(text),
            },
        }
    }
}

/// A Dockerfile ARG name: `[A-Za-z_][A-Za-z0-9_]*`.
pub(super) fn is_arg_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The resolved `[args]`: the defaults with the overrides over them. `None` without `[args]`
/// (then an override is an error too).
pub(super) fn resolve(
    ctx: &Ctx<'_>,
    raw: Option<Spanned<SpannedMap>>,
    overrides: &[ArgOverride],
) -> Result<Option<BTreeMap<String, String>>> {
    let mut out = BTreeMap::new();
    let declared = raw.is_some();
    for (k, v) in raw.map(Spanned::into_inner).unwrap_or_default() {
        if !is_arg_name(k.get_ref()) {
            return Err(ctx.err(
                k.span(),
                format!(
                    "[args]: invalid name `{}`: expected a letter or `_`, then letters, digits \
                     or `_` (a Dockerfile ARG name)",
                    k.get_ref()
                ),
            ));
        }
        if v.get_ref().contains('\0') {
            return Err(ctx.err(
                v.span(),
                format!("[args]: `{}`: value must not contain NUL", k.get_ref()),
            ));
        }
        out.insert(k.into_inner(), v.into_inner());
    }
    for o in overrides {
        let Some(slot) = out.get_mut(&o.name) else {
            let message = if declared {
                let hint = crate::diag::closest(&o.name, out.keys().map(String::as_str))
                    .map(|c| format!("did you mean `{c}`? "))
                    .unwrap_or_default();
                let names: Vec<&str> = out.keys().map(String::as_str).collect();
                format!(
                    "not declared in [args]: {hint}the recipe declares {}",
                    super::fields::backticked(&names)
                )
            } else {
                "the recipe declares no [args]".to_string()
            };
            return Err(RecipeError::Override {
                path: ctx.path.to_path_buf(),
                flag: "--build-arg",
                value: crate::bounded::clip(&o.name).into_owned(),
                message,
            });
        };
        if let Some(v) = &o.value {
            if v.contains('\0') {
                return Err(RecipeError::Override {
                    path: ctx.path.to_path_buf(),
                    flag: "--build-arg",
                    value: crate::bounded::clip(&o.name).into_owned(),
                    message: "the value must not contain NUL".into(),
                });
            }
            *slot = v.clone();
        }
    }
    Ok(declared.then_some(out))
}

/// `text` with the declared arguments substituted; an error message for a `${NAME…}` of a
/// declared name in a form other than `${NAME}` and `${NAME:-default}`.
pub(super) fn substitute(
    text: &str,
    args: &BTreeMap<String, String>,
) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
            continue;
        }
        if let Some(inner) = after.strip_prefix('{') {
            let name_len = inner
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(inner.len());
            let name = &inner[..name_len];
            let Some(value) = args.get(name) else {
                out.push('$');
                rest = after;
                continue;
            };
            let tail = &inner[name_len..];
            if let Some(r) = tail.strip_prefix('}') {
                out.push_str(value);
                rest = r;
            } else if let Some(d) = tail.strip_prefix(":-") {
                let Some(end) = d.find('}') else {
                    return Err(format!("`${{{name}:-` is not closed with `}}`"));
                };
                let default = &d[..end];
                out.push_str(if value.is_empty() { default } else { value });
                rest = &d[end + 1..];
            } else {
                return Err(format!(
                    "`${{{name}` takes the forms `${{{name}}}` and `${{{name}:-default}}` only"
                ));
            }
            continue;
        }
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        if let Some(value) = args.get(&after[..name_len]) {
            out.push_str(value);
            rest = &after[name_len..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Substitutes the arguments into the recipe's strings that take them, in place: the spans
/// stay those of the strings as written, so later errors point there.
pub(super) fn apply(
    ctx: &Ctx<'_>,
    raw: &mut RawRecipe,
    args: &BTreeMap<String, String>,
) -> Result<()> {
    let s = Subst { ctx, args };
    if let Some(tag) = raw.image.as_mut().and_then(|i| i.get_mut().tag.as_mut()) {
        s.spanned("[image] tag", tag)?;
    }
    if let Some(c) = &mut raw.config {
        s.map("[config] env", &mut c.env)?;
        s.map("[config] labels", &mut c.labels)?;
        s.argv("[config] entrypoint", c.entrypoint.as_mut())?;
        s.argv("[config] cmd", c.cmd.as_mut())?;
        s.opt("[config] workdir", &mut c.workdir)?;
        s.opt("[config] user", &mut c.user)?;
    }
    for step in &mut raw.step {
        let st = step.get_mut();
        s.argv("[[step]] run", st.run.as_mut())?;
        s.map("[[step]] env", &mut st.env)?;
        s.opt("[[step]] workdir", &mut st.workdir)?;
    }
    for test in &mut raw.test {
        let t = test.get_mut();
        s.argv("[[test]] run", t.run.as_mut())?;
        s.map("[[test]] env", &mut t.env)?;
    }
    if let Some(apt) = &mut raw.apt {
        for p in apt.get_mut().packages.iter_mut().flatten() {
            s.spanned("[apt] packages", p)?;
        }
    }
    if let Some(py) = &mut raw.python {
        s.opt("[python] version", &mut py.get_mut().version)?;
    }
    Ok(())
}

struct Subst<'a, 'b> {
    ctx: &'a Ctx<'b>,
    args: &'a BTreeMap<String, String>,
}

impl Subst<'_, '_> {
    fn spanned(&self, what: &str, v: &mut Spanned<String>) -> Result<()> {
        let new = substitute(v.get_ref(), self.args)
            .map_err(|m| self.ctx.err(v.span(), format!("{what}: {m}")))?;
        *v.get_mut() = new;
        Ok(())
    }

    fn opt(&self, what: &str, v: &mut Option<Spanned<String>>) -> Result<()> {
        match v {
            Some(v) => self.spanned(what, v),
            None => Ok(()),
        }
    }

    fn map(&self, what: &str, m: &mut Option<SpannedMap>) -> Result<()> {
        let Some(map) = m.take() else { return Ok(()) };
        let mut out = SpannedMap::new();
        for (k, mut v) in map {
            self.spanned(what, &mut v)?;
            out.insert(k, v);
        }
        *m = Some(out);
        Ok(())
    }

    fn argv(&self, what: &str, v: Option<&mut Spanned<Argv>>) -> Result<()> {
        let Some(v) = v else { return Ok(()) };
        let span = v.span();
        for item in &mut v.get_mut().0 {
            *item = substitute(item, self.args)
                .map_err(|m| self.ctx.err(span.clone(), format!("{what}: {m}")))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> BTreeMap<String, String> {
        BTreeMap::from([
            ("VERSION".to_string(), "1.2".to_string()),
            ("EMPTY".to_string(), String::new()),
        ])
    }

    #[test]
    fn substitutes_declared_names_only() {
        let a = args();
        let s = |t: &str| substitute(t, &a);
        assert_eq!(s("v${VERSION}-x").as_deref(), Ok("v1.2-x"));
        assert_eq!(s("$VERSION/$VERSIONS").as_deref(), Ok("1.2/$VERSIONS"));
        assert_eq!(s("${EMPTY:-dflt}").as_deref(), Ok("dflt"));
        assert_eq!(s("${VERSION:-dflt}").as_deref(), Ok("1.2"));
        assert_eq!(s("$$VERSION costs $$5").as_deref(), Ok("$VERSION costs $5"));
        assert_eq!(
            s("$HOME ${PATH} ${X:-y} $ $").as_deref(),
            Ok("$HOME ${PATH} ${X:-y} $ $")
        );
        assert_eq!(s("${VERSION").as_deref().map_err(|_| ()), Err(()));
        assert!(s("${VERSION:-x").is_err());
        assert!(s("${VERSION:+x}").is_err());
        assert_eq!(s("end$").as_deref(), Ok("end$"));
        assert_eq!(s("é$VERSIONé").as_deref(), Ok("é1.2é"));
    }

    #[test]
    fn names_and_overrides() {
        assert!(is_arg_name("_A9"));
        assert!(is_arg_name("pip_version"));
        assert!(!is_arg_name("9A"));
        assert!(!is_arg_name("A-B"));
        assert!(!is_arg_name(""));
        let o = ArgOverride::parse("A=b=c", |_| None);
        assert_eq!(o.value.as_deref(), Some("b=c"));
        let o = ArgOverride::parse("A", |n| Some(format!("env-{n}")));
        assert_eq!(o.value.as_deref(), Some("env-A"));
        assert_eq!(ArgOverride::parse("A", |_| None).value, None);
    }
}
