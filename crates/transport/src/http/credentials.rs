//! Logins for plain HTTP(S) fetches (apt archives, package indexes, wheels, interpreter
//! archives). They come from a URL's `user:password@`, taken out of the URL where the recipe
//! or the pylock is read ([`Credentials::take`]), and from netrc (`$NETRC`, else `~/.netrc`).
//! A request gets the login of its URL's origin (scheme, host, port) whose path prefix is the
//! longest match, else the first login given for that origin (so an index's login also opens
//! the files it links to on its own host), else netrc's `machine` for the host, else netrc's
//! `default`. The URL that is stored, locked, shown or reported never carries the login.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;

/// A user and password; `Debug` shows the user only.
#[derive(Clone, PartialEq, Eq)]
pub struct Login {
    pub user: String,
    pub password: String,
}

impl fmt::Debug for Login {
    /// Neither part: a token is often given as the user (`https://TOKEN@host/`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Login(***)")
    }
}

impl Login {
    /// The `Authorization` header value.
    pub fn basic(&self) -> String {
        let token = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", self.user, self.password));
        format!("Basic {token}")
    }
}

/// The logins of one session. `Debug` shows origins and paths, never a user or a password.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Credentials {
    /// Origin (`https://host:443`) → (path prefix, login), in the order given.
    origins: BTreeMap<String, Vec<(String, Login)>>,
    /// netrc: host → login; `default` under "".
    netrc: BTreeMap<String, Login>,
}

impl Credentials {
    /// These credentials plus the user's netrc file (`$NETRC`, else `~/.netrc`; none when it
    /// is missing or unreadable).
    pub fn with_netrc(mut self) -> Credentials {
        let path = std::env::var_os("NETRC")
            .map(std::path::PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".netrc")));
        if let Some(text) = path.and_then(|p| fs_err::read_to_string(p).ok()) {
            self.netrc = parse_netrc(&text);
        }
        self
    }

    /// `url` without its `user:password@`, which (when there) becomes the login of the URL's
    /// origin and path. A login already given for the same origin and path is kept.
    pub fn take(&mut self, url: &str) -> String {
        let (clean, login) = split_userinfo(url);
        if let (Some(login), Some((origin, path))) = (login, origin_and_path(&clean)) {
            let logins = self.origins.entry(origin).or_default();
            if !logins.iter().any(|(p, _)| *p == path) {
                logins.push((path, login));
            }
        }
        clean
    }

    /// Adds `other`'s logins where these have none for the same origin and path; netrc entries
    /// are taken where these have none for the host.
    pub fn extend(&mut self, other: &Credentials) {
        for (origin, logins) in &other.origins {
            let mine = self.origins.entry(origin.clone()).or_default();
            for (path, login) in logins {
                if !mine.iter().any(|(p, _)| p == path) {
                    mine.push((path.clone(), login.clone()));
                }
            }
        }
        for (host, login) in &other.netrc {
            self.netrc
                .entry(host.clone())
                .or_insert_with(|| login.clone());
        }
    }

    /// The login for a request to `url` (a URL without userinfo).
    pub fn login_for(&self, url: &str) -> Option<&Login> {
        let (origin, path) = origin_and_path(url)?;
        if let Some(logins) = self.origins.get(&origin) {
            // The login whose path the request is under (the longest), else the one whose
            // path shares the most leading segments with it (an index's login for the files
            // it links to beside it), the first of equals.
            let best = logins
                .iter()
                .filter(|(prefix, _)| under(&path, prefix))
                .max_by_key(|(prefix, _)| prefix.len())
                .or_else(|| {
                    let shared = |p: &str| {
                        p.split('/')
                            .zip(path.split('/'))
                            .take_while(|(a, b)| a == b)
                            .count()
                    };
                    let most = logins.iter().map(|(p, _)| shared(p)).max()?;
                    logins.iter().find(|(p, _)| shared(p) == most)
                });
            if let Some((_, login)) = best {
                return Some(login);
            }
        }
        let host = reqwest::Url::parse(url)
            .ok()?
            .host_str()?
            .to_ascii_lowercase();
        self.netrc.get(&host).or_else(|| self.netrc.get(""))
    }

    /// Every password, and every `Authorization` token these logins make: what a message must
    /// never show (see [`super::redact_text`]).
    pub fn secrets(&self) -> Vec<String> {
        let logins = self
            .origins
            .values()
            .flat_map(|l| l.iter().map(|(_, l)| l))
            .chain(self.netrc.values());
        let mut out = Vec::new();
        for l in logins {
            if !l.password.is_empty() {
                out.push(l.password.clone());
            } else if !l.user.is_empty() {
                // `https://TOKEN@host/`: the user is the secret.
                out.push(l.user.clone());
            }
            out.push(l.basic()["Basic ".len()..].to_string());
        }
        out
    }
}

/// Whether `path` is `prefix` or below it.
fn under(path: &str, prefix: &str) -> bool {
    path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| prefix.ends_with('/') || rest.starts_with('/'))
}

/// `https://host:443` (scheme and host lowercased, the port explicit) and the path, for a
/// URL that has a host.
fn origin_and_path(url: &str) -> Option<(String, String)> {
    let u = reqwest::Url::parse(url).ok()?;
    let host = u.host_str()?;
    let port = u.port_or_known_default()?;
    Some((
        format!("{}://{}:{port}", u.scheme(), host.to_ascii_lowercase()),
        u.path().to_string(),
    ))
}

/// Whether an `http(s)://` URL (with or without a login) parses once its login is taken out.
/// A login holding `/`, `?` or `#` ends the authority early (`https://u:ab/cd@host/`), so the
/// URL would mean another host with the secret in its path: refused, and the message must not
/// repeat the URL.
pub fn check_login(url: &str) -> Result<(), &'static str> {
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Ok(());
    }
    let (clean, _) = split_userinfo(url);
    match reqwest::Url::parse(&clean) {
        Ok(u) if u.username().is_empty() && u.password().is_none() => Ok(()),
        _ => Err(
            "is not a valid URL (not repeated here, in case it holds a login); in a login, \
             percent-encode `/`, `?`, `#` and `%` (`%2F`, `%3F`, `%23`, `%25`)",
        ),
    }
}

/// Splits `https://user:pass@host/path` into the URL without its userinfo (otherwise as
/// written) and the login (percent-decoded).
pub fn split_userinfo(url: &str) -> (String, Option<Login>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_string(), None);
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..end].rfind('@') else {
        return (url.to_string(), None);
    };
    let (user, password) = rest[..at].split_once(':').unwrap_or((&rest[..at], ""));
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    (
        format!("{scheme}://{}", &rest[at + 1..]),
        Some(Login {
            user: decode(user),
            password: decode(password),
        }),
    )
}

/// Parses netrc text: `machine H login L password P`, `default …`; `account` is skipped, and
/// so is a `macdef` body (up to the next empty line).
pub fn parse_netrc(text: &str) -> BTreeMap<String, Login> {
    let mut out = BTreeMap::new();
    let mut host: Option<String> = None;
    let mut login = Login {
        user: String::new(),
        password: String::new(),
    };
    let mut flush = |host: &mut Option<String>, login: &mut Login| {
        let l = std::mem::replace(
            login,
            Login {
                user: String::new(),
                password: String::new(),
            },
        );
        if let Some(h) = host.take() {
            out.entry(h.to_ascii_lowercase()).or_insert(l);
        }
    };
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut tokens = line.split_whitespace();
        while let Some(t) = tokens.next() {
            match t {
                "machine" => {
                    flush(&mut host, &mut login);
                    host = tokens.next().map(str::to_string);
                }
                "default" => {
                    flush(&mut host, &mut login);
                    host = Some(String::new());
                }
                "login" => login.user = tokens.next().unwrap_or_default().to_string(),
                "password" => login.password = tokens.next().unwrap_or_default().to_string(),
                "account" => {
                    tokens.next();
                }
                "macdef" => {
                    flush(&mut host, &mut login);
                    for body in lines.by_ref() {
                        if body.trim().is_empty() {
                            break;
                        }
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    flush(&mut host, &mut login);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn login(u: &str, p: &str) -> Login {
        Login {
            user: u.into(),
            password: p.into(),
        }
    }

    #[test]
    fn userinfo_is_taken_out_and_decoded() {
        assert_eq!(
            split_userinfo("https://a:p%40ss@h.example:8080/simple?q=x@y"),
            (
                "https://h.example:8080/simple?q=x@y".into(),
                Some(login("a", "p@ss"))
            )
        );
        assert_eq!(
            split_userinfo("https://h/a@b"),
            ("https://h/a@b".into(), None)
        );
        assert_eq!(
            split_userinfo("https://tok@[::1]:9/x"),
            ("https://[::1]:9/x".into(), Some(login("tok", "")))
        );
        assert_eq!(split_userinfo("file:///x@y"), ("file:///x@y".into(), None));
    }

    #[test]
    fn logins_by_origin_then_path_then_netrc() {
        let mut c = Credentials::default();
        assert_eq!(
            c.take("https://u:p@Pkgs.Example/simple/"),
            "https://Pkgs.Example/simple/"
        );
        assert_eq!(
            c.take("https://v:q@pkgs.example:443/private"),
            "https://pkgs.example:443/private"
        );
        // The same origin and path again: the first login stays.
        c.take("https://w:r@pkgs.example/simple/");
        assert_eq!(
            c.login_for("https://pkgs.example/simple/x/"),
            Some(&login("u", "p"))
        );
        assert_eq!(
            c.login_for("https://pkgs.example/private/x.whl"),
            Some(&login("v", "q"))
        );
        // `/privateer` is not under `/private`; a file elsewhere on the host gets the first.
        assert_eq!(
            c.login_for("https://pkgs.example/privateer"),
            Some(&login("u", "p"))
        );
        assert_eq!(
            c.login_for("https://pkgs.example/files/x.whl"),
            Some(&login("u", "p"))
        );
        // Another scheme or port is another origin.
        assert_eq!(c.login_for("http://pkgs.example/simple/"), None);
        assert_eq!(c.login_for("https://pkgs.example:8443/simple/"), None);
        let n = Credentials {
            netrc: parse_netrc(
                "machine other.example login m password s\ndefault login d password t\n",
            ),
            ..Credentials::default()
        };
        c.extend(&n);
        assert_eq!(
            c.login_for("https://OTHER.example/x"),
            Some(&login("m", "s"))
        );
        assert_eq!(
            c.login_for("http://third.example/x"),
            Some(&login("d", "t"))
        );
        let secrets = c.secrets();
        assert!(secrets.contains(&"p".to_string()) && secrets.contains(&"s".to_string()));
        assert!(secrets.contains(&login("u", "p").basic()[6..].to_string()));
        assert!(!format!("{c:?}").contains("\"p\""), "{c:?}");
    }

    #[test]
    fn the_nearest_login_opens_an_index_s_files() {
        // Artifactory: a Debian remote and a PyPI remote on one host, each with its login.
        let mut c = Credentials::default();
        c.take("https://u1:p1@art.example/artifactory/debian-remote");
        c.take("https://u2:t2@art.example/artifactory/api/pypi/pypi-remote/simple");
        assert_eq!(
            c.login_for("https://art.example/artifactory/api/pypi/pypi-remote/packages/x.whl"),
            Some(&login("u2", "t2"))
        );
        assert_eq!(
            c.login_for("https://art.example/artifactory/debian-remote/pool/x.deb"),
            Some(&login("u1", "p1"))
        );
        let mut t = Credentials::default();
        t.take("https://TOKEN123@pypi.example/simple/");
        assert!(t.secrets().contains(&"TOKEN123".to_string()));
        assert!(!format!("{t:?}").contains("TOKEN123"));
        assert!(check_login("https://u:p%2Fq@h/x").is_ok());
        assert!(check_login("https://u:ab/cd@h/x").is_err());
        assert!(check_login("file:///x@y").is_ok());
    }

    #[test]
    fn netrc_files() {
        let n = parse_netrc(
            "machine a.example\n  login u\n  password p\n  account x\nmacdef init\ncd /\nmachine evil login e password e\n\nmachine b.example login v password q\ndefault login d password r\n",
        );
        assert_eq!(n["a.example"], login("u", "p"));
        assert!(!n.contains_key("evil"), "a macdef body is not parsed");
        assert_eq!(n["b.example"], login("v", "q"));
        assert_eq!(n[""], login("d", "r"));
    }
}
