//! The podman command of a test as `test -v` shows it: every argument, shell-quoted so that the
//! line can be pasted, with what may be a credential masked as `***`.

use std::path::Path;

/// Environment names whose values are masked whole (a case-insensitive substring).
const SECRET_NAMES: &[&str] = &[
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "SECRET",
    "TOKEN",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "SESSION",
    "PRIVATE",
    "APIKEY",
    "API_KEY",
    "ACCESS_KEY",
    "_KEY",
    "_PASS",
];

/// podman options whose value is a credential (`USER:PASSWORD`).
const SECRET_FLAGS: &[&str] = &["--creds"];

/// Whether an environment variable named `name` may hold a credential.
pub fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAMES.iter().any(|s| upper.contains(s))
}

/// `NAME=VALUE` with the value masked where the name may carry a credential, and any
/// `user:password@` of a URL or `Basic`/`Bearer` token in the value masked in any case.
fn env_assignment(a: &str) -> String {
    match a.split_once('=') {
        Some((k, v)) if secret_name(k) && !v.is_empty() => format!("{k}=***"),
        Some((k, v)) => format!("{k}={}", crate::http::redact_text(v, &[])),
        None => a.to_string(),
    }
}

/// `argv` (what follows the podman executable) with credentials masked: the values of
/// `-e`/`--env NAME=VALUE` whose name may hold one ([`secret_name`]), the value of `--creds`,
/// and in every argument a URL's `user:password@` and a `Basic`/`Bearer` token.
pub fn masked(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut next_env = false;
    let mut next_secret = false;
    for a in argv {
        if next_env {
            out.push(env_assignment(a));
            next_env = false;
            continue;
        }
        if next_secret {
            out.push("***".to_string());
            next_secret = false;
            continue;
        }
        let shown = if a == "-e" || a == "--env" {
            next_env = true;
            a.clone()
        } else if SECRET_FLAGS.contains(&a.as_str()) {
            next_secret = true;
            a.clone()
        } else if let Some(v) = a.strip_prefix("--env=") {
            format!("--env={}", env_assignment(v))
        } else if let Some(v) = a.strip_prefix("-e").filter(|v| v.contains('=')) {
            format!("-e{}", env_assignment(v))
        } else if let Some(flag) = SECRET_FLAGS
            .iter()
            .find(|f| a.strip_prefix(**f).is_some_and(|v| v.starts_with('=')))
        {
            format!("{flag}=***")
        } else {
            crate::http::redact_text(a, &[])
        };
        out.push(shown);
    }
    out
}

/// `s` quoted for a POSIX shell: as it is when it holds only characters no shell treats
/// specially, else in single quotes (a `'` inside as `'\''`).
pub fn shell_quote(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-+=:,./@%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The command line: `podman` and `argv`, masked ([`masked`]) and quoted ([`shell_quote`]).
pub fn command_line(podman: &Path, argv: &[String]) -> String {
    std::iter::once(podman.display().to_string())
        .chain(masked(argv))
        .map(|a| shell_quote(&a))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(std::string::ToString::to_string).collect()
    }

    #[test]
    fn quotes_what_a_shell_would_split_or_expand() {
        assert_eq!(shell_quote("oci:/tmp/x:1.0"), "oci:/tmp/x:1.0");
        assert_eq!(
            shell_quote("--entrypoint=[\"sh\"]"),
            "'--entrypoint=[\"sh\"]'"
        );
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
    }

    #[test]
    fn masks_credentials_only() {
        let argv = v(&[
            "run",
            "-e",
            "API_TOKEN=abc123",
            "-e",
            "LD_LIBRARY_PATH=/usr/lib",
            "--env=DB_PASSWORD=hunter2",
            "-eGITHUB_TOKEN=ghp_x",
            "-e",
            "URL=https://u:pw@example.com/x",
            "--creds",
            "me:pw",
            "--creds=me:pw",
            "img",
            "sh",
            "-c",
            "curl -H 'Authorization: Bearer tok123' https://a:b@h/",
        ]);
        let m = masked(&argv);
        assert_eq!(
            m,
            v(&[
                "run",
                "-e",
                "API_TOKEN=***",
                "-e",
                "LD_LIBRARY_PATH=/usr/lib",
                "--env=DB_PASSWORD=***",
                "-eGITHUB_TOKEN=***",
                "-e",
                "URL=https://***@example.com/x",
                "--creds",
                "***",
                "--creds=***",
                "img",
                "sh",
                "-c",
                "curl -H 'Authorization: Bearer ***' https://***@h/",
            ])
        );
        let line = command_line(Path::new("/usr/bin/podman"), &argv);
        for secret in ["abc123", "hunter2", "ghp_x", "pw", "tok123", "a:b"] {
            assert!(!line.contains(secret), "{secret} in {line}");
        }
        assert!(
            line.starts_with("/usr/bin/podman run -e 'API_TOKEN=***' -e LD_LIBRARY_PATH=/usr/lib")
        );
    }
}
