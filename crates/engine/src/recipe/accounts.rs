//! `[accounts]`: `[[accounts.group]]` (`name`, `gid`) and `[[accounts.user]]` (`name`, `uid`,
//! `gid`, `home`, `shell`), checked against each other here; against the base's accounts at
//! build time (`rootfs`).

use std::collections::BTreeMap;

use toml::Spanned;

use super::grammar::normalize_abs;
use super::raw::RawAccounts;
use super::{Accounts, Ctx, Group, RecipeError, User};

type Result<T> = std::result::Result<T, RecipeError>;

/// The largest id: `(uid_t)-1` means "no id" to chown and setuid.
const MAX_ID: i64 = 4_294_967_294;
/// The shell a declared user gets by default.
pub(super) const DEFAULT_SHELL: &str = "/bin/sh";

/// A name as shadow's `useradd` takes it (its default `NAME_REGEX`, with `$` allowed last for
/// machine accounts): a lowercase letter or `_`, then lowercase letters, digits, `_` and `-`;
/// at most 32 characters.
pub(super) fn is_account_name(s: &str) -> bool {
    let body = s.strip_suffix('$').unwrap_or(s);
    let mut chars = body.chars();
    s.len() <= 32
        && matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// An absolute path for a `passwd` field: normalized, without `:` (the field separator) or
/// control characters (a newline would start another line, another account).
fn passwd_path(ctx: &Ctx<'_>, what: &str, key: &str, v: &Spanned<String>) -> Result<String> {
    let p = normalize_abs(v.get_ref()).map_err(|m| {
        ctx.err(
            v.span(),
            format!("{what}: invalid {key} `{}`: {m}", v.get_ref()),
        )
    })?;
    if p.contains(':') || p.chars().any(char::is_control) {
        return Err(ctx.err(
            v.span(),
            format!(
                "{what}: invalid {key} `{}`: must not contain `:` or control characters",
                v.get_ref().escape_debug()
            ),
        ));
    }
    Ok(p)
}

fn id(ctx: &Ctx<'_>, what: &str, key: &str, v: &Spanned<i64>) -> Result<u32> {
    let n = *v.get_ref();
    if !(0..=MAX_ID).contains(&n) {
        return Err(ctx.err(
            v.span(),
            format!("{what}: `{key}` {n} is out of range (0 to {MAX_ID})"),
        ));
    }
    Ok(n as u32)
}

fn name(
    ctx: &Ctx<'_>,
    what: &str,
    v: Option<Spanned<String>>,
    span: std::ops::Range<usize>,
) -> Result<String> {
    let v = v.ok_or_else(|| ctx.err(span, format!("{what}: missing `name`")))?;
    if !is_account_name(v.get_ref()) {
        return Err(ctx.err(
            v.span(),
            format!(
                "{what}: invalid name `{}`: expected a lowercase letter or `_`, then lowercase \
                 letters, digits, `_` or `-` (at most 32)",
                v.get_ref()
            ),
        ));
    }
    Ok(v.into_inner())
}

pub(super) fn accounts(ctx: &Ctx<'_>, raw: Option<RawAccounts>) -> Result<Accounts> {
    let Some(raw) = raw else {
        return Ok(Accounts::default());
    };
    let mut set = GroupSet::default();
    for (i, g) in raw.group.into_iter().enumerate() {
        let span = g.span();
        let g = g.into_inner();
        let what = format!("[[accounts.group]] #{}", i + 1);
        let name = name(ctx, &what, g.name, span.clone())?;
        let gid_v = g
            .gid
            .ok_or_else(|| ctx.err(span.clone(), format!("{what}: missing `gid`")))?;
        let gid = id(ctx, &what, "gid", &gid_v)?;
        if set.names.contains_key(&name) {
            return Err(ctx.err(span, format!("{what}: group `{name}` is declared twice")));
        }
        if let Some(other) = set.gids.get(&gid) {
            return Err(ctx.err(
                gid_v.span(),
                format!("{what}: gid {gid} is already group `{other}`'s"),
            ));
        }
        set.names.insert(name.clone(), gid);
        set.gids.insert(gid, name.clone());
        set.groups.push(Group {
            name,
            gid,
            at: ctx.at(span),
        });
    }
    let mut users: Vec<User> = Vec::new();
    let mut uids: BTreeMap<u32, String> = BTreeMap::new();
    for (i, u) in raw.user.into_iter().enumerate() {
        let span = u.span();
        let u = u.into_inner();
        let what = format!("[[accounts.user]] #{}", i + 1);
        let name = name(ctx, &what, u.name, span.clone())?;
        let uid_v = u
            .uid
            .ok_or_else(|| ctx.err(span.clone(), format!("{what}: missing `uid`")))?;
        let uid = id(ctx, &what, "uid", &uid_v)?;
        if users.iter().any(|x| x.name == name) {
            return Err(ctx.err(span, format!("{what}: user `{name}` is declared twice")));
        }
        if let Some(other) = uids.get(&uid) {
            return Err(ctx.err(
                uid_v.span(),
                format!("{what}: uid {uid} is already user `{other}`'s"),
            ));
        }
        let gid = match &u.gid {
            // A gid no declared group has: the image's group of that gid (the base's `users`),
            // else the user's own, named after it; decided when the image's groups are known.
            Some(g) => id(ctx, &what, "gid", g)?,
            None => {
                if let Some(&gid) = set.names.get(&name) {
                    gid
                } else {
                    set.imply(ctx, &what, &name, uid, uid_v.span())?;
                    uid
                }
            }
        };
        let home = match u.home {
            None => format!("/home/{name}"),
            Some(h) => {
                let p = passwd_path(ctx, &what, "home", &h)?;
                if p == "/" {
                    return Err(ctx.err(
                        h.span(),
                        format!("{what}: home `/` is not allowed: pick a directory like \"/home/{name}\""),
                    ));
                }
                p
            }
        };
        let shell = match u.shell {
            None => None,
            Some(s) => Some(passwd_path(ctx, &what, "shell", &s)?),
        };
        if let Some(other) = users.iter().find(|x| x.home == home) {
            return Err(ctx.err(
                span,
                format!("{what}: home `{home}` is already user `{}`'s", other.name),
            ));
        }
        uids.insert(uid, name.clone());
        users.push(User {
            name,
            uid,
            gid,
            home,
            shell,
            at: ctx.at(span),
        });
    }
    Ok(Accounts {
        groups: set.groups,
        users,
    })
}

/// The groups declared and implied so far: name → gid and gid → name, for the collision
/// messages.
#[derive(Default)]
struct GroupSet {
    groups: Vec<Group>,
    names: BTreeMap<String, u32>,
    gids: BTreeMap<u32, String>,
}

impl GroupSet {
    /// The group a user implies (its own name, `gid`), unless that name is another gid's.
    fn imply(
        &mut self,
        ctx: &Ctx<'_>,
        what: &str,
        name: &str,
        gid: u32,
        span: std::ops::Range<usize>,
    ) -> Result<()> {
        if let Some(&other) = self.names.get(name) {
            return Err(ctx.err(
                span,
                format!(
                    "{what}: its own group `{name}` would have gid {gid}, but group `{name}` has \
                     gid {other}: set `gid = {other}`"
                ),
            ));
        }
        if let Some(other) = self.gids.get(&gid) {
            return Err(ctx.err(
                span,
                format!(
                    "{what}: gid {gid} for its own group `{name}` is already group `{other}`'s"
                ),
            ));
        }
        self.names.insert(name.to_string(), gid);
        self.gids.insert(gid, name.to_string());
        self.groups.push(Group {
            name: name.to_string(),
            gid,
            at: ctx.at(span),
        });
        Ok(())
    }
}
