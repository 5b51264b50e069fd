//! `WWW-Authenticate` challenges, token scopes, and Bearer tokens (fetch and cache).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Read;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::{AuthError, Credential, Secret};

/// Tokens without `expires_in` live 60 s (the distribution token spec's default).
const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(60);
/// A token is renewed this long before it expires (at most half its lifetime).
const TOKEN_EXPIRY_MARGIN: Duration = Duration::from_secs(10);
/// Token responses larger than this are refused.
const MAX_TOKEN_RESPONSE: u64 = 1 << 20;

// ---------------------------------------------------------------------------------------------
// Challenges

/// One challenge of a `WWW-Authenticate` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Challenge {
    Basic {
        realm: Option<String>,
    },
    Bearer {
        realm: String,
        service: Option<String>,
        scope: Option<String>,
        /// `insufficient_scope`, `invalid_token`, …
        error: Option<String>,
    },
}

/// Parse a `WWW-Authenticate` header value into its Basic and Bearer challenges (other schemes
/// are skipped). Quoted values may hold commas (`scope="repository:a:pull,push"`).
pub fn parse_challenges(header: &str) -> Result<Vec<Challenge>, AuthError> {
    let bad = |problem: &str| AuthError::Challenge {
        header: header.chars().take(300).collect(),
        problem: problem.to_string(),
    };
    let b = header.as_bytes();
    let mut i = 0;
    let is_tchar = |c: u8| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~/:".contains(&c);
    let skip = |i: &mut usize, set: &[u8]| {
        while *i < b.len() && set.contains(&b[*i]) {
            *i += 1;
        }
    };
    let token = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && is_tchar(b[*i]) {
            *i += 1;
        }
        &header[start..*i]
    };
    let mut out = Vec::new();
    loop {
        skip(&mut i, b" \t,");
        if i >= b.len() {
            break;
        }
        let scheme = token(&mut i);
        if scheme.is_empty() {
            return Err(bad("expected an authentication scheme"));
        }
        let mut params: BTreeMap<String, String> = BTreeMap::new();
        loop {
            let save = i;
            skip(&mut i, b" \t,");
            let name = token(&mut i);
            skip(&mut i, b" \t");
            if name.is_empty() || i >= b.len() || b[i] != b'=' {
                i = save;
                break;
            }
            i += 1;
            skip(&mut i, b" \t");
            let value = if i < b.len() && b[i] == b'"' {
                i += 1;
                let mut v = String::new();
                let mut closed = false;
                while i < b.len() {
                    match b[i] {
                        b'\\' if i + 1 < b.len() => {
                            // The escaped character, whole: it may be more than one byte.
                            let ch = header[i + 1..].chars().next().unwrap_or('\u{fffd}');
                            v.push(ch);
                            i += 1 + ch.len_utf8();
                        }
                        b'"' => {
                            i += 1;
                            closed = true;
                            break;
                        }
                        _ => {
                            // Push the whole UTF-8 character.
                            let ch = header[i..].chars().next().unwrap_or('\u{fffd}');
                            v.push(ch);
                            i += ch.len_utf8();
                        }
                    }
                }
                if !closed {
                    return Err(bad("unterminated quoted string"));
                }
                v
            } else {
                let start = i;
                while i < b.len() && b[i] != b',' && b[i] != b' ' {
                    i += 1;
                }
                header[start..i].to_string()
            };
            params.insert(name.to_ascii_lowercase(), value);
        }
        // A token68 (`Basic abc==`) after the scheme: skip it.
        if params.is_empty() {
            let save = i;
            skip(&mut i, b" \t");
            let t = token(&mut i);
            skip(&mut i, b"=");
            if t.is_empty() {
                i = save;
            } else {
                skip(&mut i, b" \t");
                if i < b.len() && b[i] != b',' {
                    i = save;
                }
            }
        }
        match scheme.to_ascii_lowercase().as_str() {
            "basic" => out.push(Challenge::Basic {
                realm: params.remove("realm"),
            }),
            "bearer" => {
                let realm = params
                    .remove("realm")
                    .ok_or_else(|| bad("Bearer challenge without realm"))?;
                out.push(Challenge::Bearer {
                    realm,
                    service: params.remove("service"),
                    scope: params.remove("scope"),
                    error: params.remove("error"),
                });
            }
            _ => {}
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Scopes

/// A set of token scopes: resource (`repository`, name) → actions (`pull`, `push`, …).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scopes(BTreeMap<(String, String), BTreeSet<String>>);

impl Scopes {
    pub fn new() -> Self {
        Scopes::default()
    }

    /// `repository:NAME:ACTIONS`.
    pub fn repository(name: &str, actions: &[&str]) -> Self {
        let mut s = Scopes::new();
        s.add("repository", name, actions.iter().copied());
        s
    }

    pub fn add<'a>(&mut self, kind: &str, name: &str, actions: impl IntoIterator<Item = &'a str>) {
        self.0
            .entry((kind.to_string(), name.to_string()))
            .or_default()
            .extend(actions.into_iter().map(String::from));
    }

    /// Parse a space-separated scope list (`repository:a/b:pull,push registry:catalog:*`);
    /// malformed entries are skipped.
    pub fn parse(s: &str) -> Self {
        let mut out = Scopes::new();
        for item in s.split_whitespace() {
            let Some((kind, rest)) = item.split_once(':') else {
                continue;
            };
            let Some((name, actions)) = rest.rsplit_once(':') else {
                continue;
            };
            out.add(kind, name, actions.split(',').filter(|a| !a.is_empty()));
        }
        out
    }

    /// Add every scope of `other`.
    pub fn merge(&mut self, other: &Scopes) {
        for ((k, n), acts) in &other.0 {
            self.add(k, n, acts.iter().map(String::as_str));
        }
    }

    /// True if every action of `other` is in `self` (`*` covers every action).
    pub fn covers(&self, other: &Scopes) -> bool {
        other.0.iter().all(|(res, acts)| {
            self.0
                .get(res)
                .is_some_and(|have| have.contains("*") || acts.iter().all(|a| have.contains(a)))
        })
    }

    /// The scopes of `self` on the resources that `other` names.
    fn restricted_to(&self, other: &Scopes) -> Scopes {
        Scopes(
            self.0
                .iter()
                .filter(|(res, _)| other.0.contains_key(*res))
                .map(|(r, a)| (r.clone(), a.clone()))
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// One `type:name:a,b` string per resource (what the token endpoint's `scope` takes).
    pub fn to_params(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|((k, n), a)| {
                format!(
                    "{k}:{n}:{}",
                    a.iter().cloned().collect::<Vec<_>>().join(",")
                )
            })
            .collect()
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_params().join(" "))
    }
}

// ---------------------------------------------------------------------------------------------
// Tokens

/// A Bearer token and when to stop using it.
#[derive(Clone, Debug)]
pub struct Token {
    pub value: Secret,
    pub scopes: Scopes,
    pub renew_at: Instant,
}

#[derive(Deserialize)]
struct TokenAnswer {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// Fetch a token from a Bearer `realm` for `scopes`: anonymously, with Basic credentials (GET,
/// as docker does), or with an identity token (OAuth2 POST, `grant_type=refresh_token`).
pub fn fetch_token(
    http: &reqwest::blocking::Client,
    realm: &str,
    service: Option<&str>,
    scopes: &Scopes,
    credential: Option<&Credential>,
    timeout: Duration,
) -> Result<Token, AuthError> {
    let realm_err = |problem: String| AuthError::TokenResponse {
        realm: realm.to_string(),
        problem,
    };
    let mut url = reqwest::Url::parse(realm)
        .map_err(|e| realm_err(format!("the realm is not a URL ({e})")))?;
    if !matches!(url.scheme(), "https" | "http") {
        return Err(realm_err("the realm is not an http(s) URL".into()));
    }
    let started = Instant::now();
    let request = match credential {
        Some(Credential::IdentityToken(refresh)) => {
            let mut form =
                reqwest::Url::parse("http://form/").map_err(|e| realm_err(e.to_string()))?;
            {
                let mut q = form.query_pairs_mut();
                q.append_pair("grant_type", "refresh_token");
                q.append_pair("refresh_token", refresh.expose());
                q.append_pair("client_id", "ocibuild");
                if let Some(s) = service {
                    q.append_pair("service", s);
                }
                for s in scopes.to_params() {
                    q.append_pair("scope", &s);
                }
            }
            let body = form.query().unwrap_or_default().to_string();
            http.post(url)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .body(body)
        }
        other => {
            {
                let mut q = url.query_pairs_mut();
                if let Some(s) = service {
                    q.append_pair("service", s);
                }
                for s in scopes.to_params() {
                    q.append_pair("scope", &s);
                }
                if let Some(Credential::Basic { username, .. }) = other {
                    q.append_pair("account", username);
                }
            }
            let mut req = http.get(url);
            if let Some(h) = other.and_then(Credential::basic_header) {
                req = req.header("Authorization", h.expose());
            }
            req
        }
    };
    let resp = request
        .timeout(timeout)
        .send()
        .map_err(|source| AuthError::TokenTransport {
            realm: realm.to_string(),
            source: source.without_url(),
        })?;
    let status = resp.status();
    let mut body = Vec::new();
    resp.take(MAX_TOKEN_RESPONSE)
        .read_to_end(&mut body)
        .map_err(|e| realm_err(format!("reading the answer: {e}")))?;
    if !status.is_success() {
        return Err(AuthError::TokenStatus {
            realm: realm.to_string(),
            status: status.as_u16(),
            detail: crate::registry::client::error_detail(
                &body,
                &credential.map(Credential::secrets).unwrap_or_default(),
            ),
        });
    }
    let answer: TokenAnswer = serde_json::from_slice(&body)
        .map_err(|e| realm_err(format!("the answer is not token JSON ({e})")))?;
    let value = answer
        .token
        .filter(|t| !t.is_empty())
        .or(answer.access_token.filter(|t| !t.is_empty()))
        .ok_or_else(|| realm_err("the answer has neither `token` nor `access_token`".into()))?;
    let lifetime = answer
        .expires_in
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_TOKEN_LIFETIME);
    let margin = TOKEN_EXPIRY_MARGIN.min(lifetime / 2);
    Ok(Token {
        value: Secret::new(value),
        scopes: scopes.clone(),
        renew_at: (started + lifetime).checked_sub(margin).unwrap(),
    })
}

/// Tokens of one registry, each for the scope set it was issued for.
#[derive(Debug, Default)]
pub struct TokenCache {
    tokens: Vec<Token>,
}

impl TokenCache {
    /// Every token held (what a message must never show).
    pub fn secrets(&self) -> impl Iterator<Item = &str> {
        self.tokens.iter().map(|t| t.value.expose())
    }

    /// An unexpired token covering `wanted`.
    pub fn get(&self, wanted: &Scopes, now: Instant) -> Option<&Token> {
        self.tokens
            .iter()
            .find(|t| now < t.renew_at && t.scopes.covers(wanted))
    }

    /// The scopes to ask for when `wanted` has no token: `wanted` plus what unexpired tokens
    /// already hold on the same resources (so a push token keeps pull: `pull,push`).
    pub fn scopes_to_request(&self, wanted: &Scopes, now: Instant) -> Scopes {
        let mut s = wanted.clone();
        for t in self.tokens.iter().filter(|t| now < t.renew_at) {
            s.merge(&t.scopes.restricted_to(wanted));
        }
        s
    }

    /// Keep `token`; drops expired ones and those it covers.
    pub fn insert(&mut self, token: Token, now: Instant) {
        self.tokens
            .retain(|t| now < t.renew_at && !token.scopes.covers(&t.scopes));
        self.tokens.push(token);
    }

    /// Forget every token (after the registry refused one).
    pub fn clear(&mut self) {
        self.tokens.clear();
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_escaped_multibyte_character_is_kept_whole() {
        // Found by the `registry` fuzz target: a `\` before a two-byte character used to leave
        // the parser inside it, and the next slice panicked.
        let c = parse_challenges("Bearer realm=\"https://a/\\\u{39d}x\",service=\"s\"").unwrap();
        assert_eq!(
            c,
            [Challenge::Bearer {
                realm: "https://a/\u{39d}x".into(),
                service: Some("s".into()),
                scope: None,
                error: None,
            }]
        );
        for h in [
            "Basic realm=\"\\\u{de}\"",
            "Bearer realm=\"\\\u{3d69e}\\",
            "Bearer realm=\"x\\\u{451}\", scope=\"\u{451}\"",
        ] {
            let _ = parse_challenges(h);
        }
    }

    #[test]
    fn challenges() {
        let c = parse_challenges(
            r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull,push""#,
        )
        .unwrap();
        assert_eq!(
            c,
            vec![Challenge::Bearer {
                realm: "https://auth.docker.io/token".into(),
                service: Some("registry.docker.io".into()),
                scope: Some("repository:library/ubuntu:pull,push".into()),
                error: None,
            }]
        );
        assert_eq!(
            parse_challenges(r#"Basic realm="Registry Realm""#).unwrap(),
            vec![Challenge::Basic {
                realm: Some("Registry Realm".into())
            }]
        );
        assert_eq!(
            parse_challenges("basic").unwrap(),
            vec![Challenge::Basic { realm: None }]
        );
        // Two challenges in one header, unquoted values, odd spacing, an unknown scheme.
        let c = parse_challenges(
            r#"Negotiate abc==, Bearer realm=https://t.example/tok , error="insufficient_scope", scope="a:b:c" ,Basic realm="x\"y""#,
        )
        .unwrap();
        assert_eq!(
            c,
            vec![
                Challenge::Bearer {
                    realm: "https://t.example/tok".into(),
                    service: None,
                    scope: Some("a:b:c".into()),
                    error: Some("insufficient_scope".into()),
                },
                Challenge::Basic {
                    realm: Some("x\"y".into())
                },
            ]
        );
        assert!(parse_challenges(r#"Bearer service="x""#)
            .unwrap_err()
            .to_string()
            .contains("without realm"));
        assert!(parse_challenges(r#"Bearer realm="x"#)
            .unwrap_err()
            .to_string()
            .contains("unterminated"));
        assert!(parse_challenges("").unwrap().is_empty());
    }

    #[test]
    fn scope_algebra() {
        let pull = Scopes::repository("a/b", &["pull"]);
        let push = Scopes::repository("a/b", &["pull", "push"]);
        assert!(push.covers(&pull));
        assert!(!pull.covers(&push));
        assert_eq!(push.to_params(), vec!["repository:a/b:pull,push"]);
        let mut m = Scopes::parse("repository:a/b:push repository:c:pull registry:catalog:*");
        m.merge(&pull);
        assert_eq!(
            m.to_params(),
            vec![
                "registry:catalog:*",
                "repository:a/b:pull,push",
                "repository:c:pull"
            ]
        );
        assert!(m.covers(&push) && m.covers(&Scopes::repository("c", &["pull"])));
        assert!(!m.covers(&Scopes::repository("c", &["push"])));
        assert!(Scopes::parse("registry:catalog:*").covers(&Scopes::parse("registry:catalog:x")));
        // Port-qualified names keep their colon (name is between the first and last colon).
        assert_eq!(
            Scopes::parse("repository:host:5000/x:pull").to_params(),
            vec!["repository:host:5000/x:pull"]
        );
        assert!(Scopes::parse("garbage").is_empty());
        assert_eq!(m.to_string().split(' ').count(), 3);
    }

    #[test]
    fn token_cache_merges_and_expires() {
        let now = Instant::now();
        let mut cache = TokenCache::default();
        let pull = Scopes::repository("a", &["pull"]);
        let push = Scopes::repository("a", &["push"]);
        let other = Scopes::repository("b", &["pull"]);
        assert!(cache.get(&pull, now).is_none());
        cache.insert(
            Token {
                value: Secret::new("t1"),
                scopes: pull.clone(),
                renew_at: now + Duration::from_secs(60),
            },
            now,
        );
        assert_eq!(cache.get(&pull, now).unwrap().value.expose(), "t1");
        assert!(cache.get(&push, now).is_none());
        // Asking for push asks for pull,push; another repository is not dragged in.
        assert_eq!(
            cache.scopes_to_request(&push, now),
            Scopes::repository("a", &["pull", "push"])
        );
        assert_eq!(cache.scopes_to_request(&other, now), other);
        cache.insert(
            Token {
                value: Secret::new("t2"),
                scopes: Scopes::repository("a", &["pull", "push"]),
                renew_at: now + Duration::from_secs(60),
            },
            now,
        );
        // The pull,push token replaced the pull one and serves both.
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.get(&pull, now).unwrap().value.expose(), "t2");
        // Expired tokens are not used.
        let later = now + Duration::from_secs(61);
        assert!(cache.get(&pull, later).is_none());
        assert_eq!(cache.scopes_to_request(&pull, later), pull);
        cache.clear();
        assert!(cache.is_empty());
    }
}
