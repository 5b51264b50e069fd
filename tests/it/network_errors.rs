//! Hardening, second round, on the network side (issue 31, cases 14 and 15; case 13, logins
//! pasted into image references, is credentials.rs), offline: silent peers and a missing
//! network fail fast, once, in one clear line; unknown layer media types and long values in messages. Each
//! test generates its inputs and checks that nothing outside the build's own directories
//! changed. No traffic leaves 127.0.0.1 (`.invalid` names never resolve: RFC 6761).

use std::path::{Path, PathBuf};
use std::process::Output;

use fs_err as fs;

use crate::common;

/// A recipe of one small layer over scratch in `dir`.
pub(crate) fn recipe(dir: &Path) -> PathBuf {
    let src = dir.join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("a.txt"), b"hello\n").unwrap();
    let r = dir.join("app.toml");
    fs::write(
        &r,
        "[image]\nname = \"example.com/ocibuild/net\"\ntag = \"v1\"\n\n\
         [[layer]]\nname = \"a\"\nsrc = \"src\"\ndest = \"/a\"\n",
    )
    .unwrap();
    r
}

pub(crate) fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every file under `dir` (relative), sorted: to check that a command added or removed none.
pub(crate) fn listing(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            out.push(p.strip_prefix(base).unwrap().display().to_string());
            if e.file_type().unwrap().is_dir() {
                walk(base, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

// ---------------------------------------------------------------------------------------------
// Case 14: silent peers and a missing network

/// A TCP listener on 127.0.0.1 that accepts every connection and never answers (the
/// connections are held open until the process ends).
fn silent_peer() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming().flatten() {
            held.push(c);
        }
    });
    port
}

/// A recipe of `[apt]` packages from `source_url`, signed by `key`.
fn apt_recipe(dir: &Path, source_url: &str, key: &Path) -> PathBuf {
    let r = dir.join("apt.toml");
    fs::write(
        &r,
        format!(
            "[image]\nname = \"example.com/ocibuild/apt-net\"\nplatform = \"linux/amd64\"\n\n\
             [[apt.source]]\nurl = \"{source_url}\"\nsuite = \"stable\"\ncomponents = [\"main\"]\n\
             signed-by = \"{}\"\n\n[apt]\npackages = [\"python3\", \"ca-certificates\"]\n",
            key.display()
        ),
    )
    .unwrap();
    r
}

fn registry_recipe(dir: &Path, port: u16) -> PathBuf {
    let r = dir.join("based.toml");
    fs::write(
        &r,
        format!(
            "[image]\nname = \"example.com/ocibuild/net\"\n\n[base]\n\
             image = \"127.0.0.1:{port}/team/base:1\"\n"
        ),
    )
    .unwrap();
    r
}

/// `ocibuild build RECIPE -o DIR/out.oci` in `dir`, with `budget` as OCIBUILD_NET_TIMEOUT
/// (the default when `None`): its output and how long it took. It must fail, write nothing in
/// `dir`, and say in one line of stderr what failed, naming `host`.
fn failing_build(dir: &Path, recipe: &Path, budget: Option<&str>, host: &str) -> (String, f64) {
    let before = listing(dir);
    let mut cmd = common::ocibuild();
    cmd.current_dir(dir)
        .arg("build")
        .arg(recipe)
        .arg("-o")
        .arg(dir.join("out.oci"))
        .env_remove("OCIBUILD_NET_TIMEOUT");
    if let Some(b) = budget {
        cmd.env("OCIBUILD_NET_TIMEOUT", b);
    }
    let started = std::time::Instant::now();
    let out = common::run_timeout(&mut cmd, std::time::Duration::from_secs(300));
    let took = started.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() <= 3, "{} lines:\n{err}", lines.len());
    let error: Vec<&&str> = lines.iter().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(error.len(), 1, "{err}");
    assert!(error[0].contains(host), "{err}");
    assert_eq!(listing(dir), before, "{} changed", dir.display());
    (error[0].to_string(), took)
}

#[test]
fn a_silent_registry_and_a_silent_archive_fail_within_the_budget() {
    let d = common::test_dir("w");
    let port = silent_peer();
    let host = format!("127.0.0.1:{port}");
    let registry = registry_recipe(&d, port);
    let f = crate::aptfix::fixture(&crate::aptfix::python_universe(), false);
    let archive = apt_recipe(&d, &format!("http://{host}/debian"), &f.key);
    // With a budget of 3 s: each fails well within 20 s, and says how to give it longer.
    for r in [&registry, &archive] {
        let (e, took) = failing_build(&d, r, Some("3"), &host);
        common::notice(&format!("silent peer, budget 3 s: {took:.1} s: {e}"));
        assert!(took < 20.0, "{took} s: {e}");
        assert!(
            e.contains("did not answer within 3 s") && e.contains("--net-timeout"),
            "{e}"
        );
    }
    // By default (60 s), both within a generous 90 s, side by side.
    let runs: Vec<_> = [registry.clone(), archive.clone()]
        .into_iter()
        .map(|r| {
            let (d, host) = (d.clone(), host.clone());
            std::thread::spawn(move || failing_build(&d, &r, None, &host))
        })
        .collect();
    for run in runs {
        let (e, took) = run.join().unwrap();
        common::notice(&format!("silent peer, default budget: {took:.1} s: {e}"));
        assert!(took < 90.0, "{took} s: {e}");
        assert!(e.contains("did not answer within 60 s"), "{e}");
    }
}

/// `cmd` with a resolver that knows no name: a mount namespace in which /etc/resolv.conf
/// points at 127.0.0.1 (where nothing serves DNS), so that looking up a `.invalid` name fails
/// at once and no query leaves the machine. `None` where `unshare` cannot do that here.
fn without_dns(inner: &std::process::Command, dir: &Path) -> Option<std::process::Command> {
    let conf = dir.join("resolv.conf");
    fs::write(
        &conf,
        "nameserver 127.0.0.1\noptions attempts:1 timeout:1\n",
    )
    .unwrap();
    let probe = std::process::Command::new("unshare")
        .args(["--mount", "sh", "-c"])
        .arg(format!(
            "mount --bind {} /etc/resolv.conf && ! getent hosts archive.invalid",
            conf.display()
        ))
        .output()
        .ok()?;
    if !probe.status.success() {
        common::notice(&format!(
            "SKIPPED: {}: unshare --mount is not available",
            common::test_name()
        ));
        return None;
    }
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["--mount", "sh", "-c"])
        .arg(format!(
            "mount --bind {} /etc/resolv.conf && exec \"$@\"",
            conf.display()
        ))
        .arg("sh")
        .arg(inner.get_program())
        .args(inner.get_args());
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    if let Some(cwd) = inner.get_current_dir() {
        cmd.current_dir(cwd);
    }
    Some(cmd)
}

#[test]
fn apt_without_a_network_fails_at_once_in_one_line() {
    let d = common::test_dir("w");
    let f = crate::aptfix::fixture(&crate::aptfix::python_universe(), false);
    // A port that was free a moment ago: refused.
    let closed = crate::common::registry::free_port();
    let refused_url = format!("http://127.0.0.1:{closed}/debian");
    let missing_url = "http://archive.invalid/debian".to_string();

    // A lock made while the archive was there, then the archive gone: every .deb would be
    // fetched (the case that was retried file by file).
    let served = apt_recipe(&d, &f.repo.url, &f.key);
    common::run_ok(common::ocibuild().current_dir(&d).arg("lock").arg(&served));
    let lock_text = fs::read_to_string(d.join("apt.lock")).unwrap();
    assert!(lock_text.contains(&f.repo.url), "{lock_text}");

    for (url, host, unresolvable) in [
        (&refused_url, format!("127.0.0.1:{closed}"), false),
        (&missing_url, "archive.invalid".to_string(), true),
    ] {
        for locked in [false, true] {
            let case = d.join(format!(
                "{}-{locked}",
                if unresolvable { "dns" } else { "refused" }
            ));
            fs::create_dir_all(&case).unwrap();
            let r = apt_recipe(&case, url, &f.key);
            if locked {
                fs::write(case.join("apt.lock"), lock_text.replace(&f.repo.url, url)).unwrap();
            }
            let before = listing(&case);
            let mut cmd = common::ocibuild();
            cmd.current_dir(&case)
                .arg("build")
                .arg(&r)
                .arg("-o")
                .arg(case.join("out.oci"));
            let mut cmd = if unresolvable {
                match without_dns(&cmd, &d) {
                    Some(c) => c,
                    None => continue,
                }
            } else {
                cmd
            };
            let started = std::time::Instant::now();
            let out = common::run_timeout(&mut cmd, std::time::Duration::from_secs(120));
            let took = started.elapsed().as_secs_f64();
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            let lines = err.lines().filter(|l| !l.trim().is_empty()).count();
            common::notice(&format!(
                "[apt] {host} (locked: {locked}): {took:.2} s, {lines} line(s): {err}"
            ));
            assert!(!out.status.success(), "{err}");
            assert!(took < 5.0, "{took} s: {err}");
            assert!(lines <= 3, "{lines} lines: {err}");
            assert!(
                err.contains(&host)
                    && err.contains("ocibuild vendor")
                    && err.contains("--offline --vendor DIR"),
                "{err}"
            );
            assert!(
                !err.contains("tls-verify") && !err.contains("CA file"),
                "{err}"
            );
            assert_eq!(listing(&case), before, "{} changed", case.display());
        }
    }
}

#[test]
fn an_unresolvable_registry_gets_no_tls_hint() {
    let d = common::test_dir("w");
    let r = d.join("based.toml");
    fs::write(
        &r,
        "[image]\nname = \"example.com/ocibuild/net\"\n\n[base]\nimage = \"registry.invalid/team/base:1\"\n",
    )
    .unwrap();
    let before = listing(&d);
    let mut cmd = common::ocibuild();
    cmd.current_dir(&d)
        .arg("build")
        .arg(&r)
        .arg("-o")
        .arg(d.join("out.oci"));
    let Some(mut cmd) = without_dns(&cmd, &d) else {
        return;
    };
    let started = std::time::Instant::now();
    let out = common::run_timeout(&mut cmd, std::time::Duration::from_secs(120));
    let took = started.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    common::notice(&format!("registry.invalid: {took:.2} s: {err}"));
    assert!(!out.status.success(), "{err}");
    assert!(took < 5.0, "{took} s: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("registry.invalid") && err.contains("--offline --vendor DIR"),
        "{err}"
    );
    assert!(
        !err.contains("tls-verify") && !err.contains("CA file") && !err.contains("SSL_CERT"),
        "{err}"
    );
    let after: Vec<String> = listing(&d)
        .into_iter()
        .filter(|p| p != "resolv.conf")
        .collect();
    assert_eq!(after, before, "{} changed", d.display());
}

// ---------------------------------------------------------------------------------------------
// Case 15: unknown layer media types, long values in messages

#[test]
fn a_base_layer_of_an_unknown_media_type_is_refused_before_it_is_fetched() {
    let d = common::test_dir("w");
    // A registry of plain files (served by the apt fixture's file server): one image whose
    // only layer has a media type no reader knows.
    let root = d.join("registry");
    let repo = root.join("v2/team/base");
    fs::create_dir_all(repo.join("manifests")).unwrap();
    fs::create_dir_all(repo.join("blobs")).unwrap();
    fs::write(root.join("v2/index.html"), "{}").unwrap();
    let layer = crate::aptfix::gz(b"not a tar at all");
    let layer_digest = common::sha256_bytes(&layer);
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "amd64", "os": "linux",
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        "config": {}
    }))
    .unwrap();
    let config_digest = common::sha256_bytes(&config);
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": config_digest, "size": config.len()},
        "layers": [{"mediaType": "application/vnd.example.unknown",
                    "digest": layer_digest, "size": layer.len()}]
    }))
    .unwrap();
    fs::write(repo.join("manifests/1"), &manifest).unwrap();
    fs::write(repo.join(format!("blobs/{config_digest}")), &config).unwrap();
    fs::write(repo.join(format!("blobs/{layer_digest}")), &layer).unwrap();
    let url = crate::aptfix::serve(root);
    let host = url.trim_start_matches("http://").to_string();
    let registries = d.join("registries.toml");
    fs::write(
        &registries,
        format!("[[registry]]\nname = \"{host}\"\ninsecure-http = true\n"),
    )
    .unwrap();
    let r = d.join("based.toml");
    fs::write(
        &r,
        format!(
            "[image]\nname = \"example.com/ocibuild/net\"\nplatform = \"linux/amd64\"\n\n\
             [base]\nimage = \"{host}/team/base:1\"\n"
        ),
    )
    .unwrap();
    let cache = d.join("cache");
    let before = listing(&d);
    let out = common::run(
        common::ocibuild()
            .current_dir(&d)
            .env("OCIBUILD_CACHE", &cache)
            .arg("--registries")
            .arg(&registries)
            .arg("build")
            .arg(&r)
            .arg("-o")
            .arg(d.join("out.oci")),
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("{host}/team/base:1"))
            && err.contains(&format!(
                "layer 1 ({layer_digest}) has media type `application/vnd.example.unknown`"
            ))
            && err.contains("pick another base image"),
        "{err}"
    );
    // Neither the layer nor the config was downloaded; nothing else was written.
    let hex = layer_digest.trim_start_matches("sha256:");
    let stored: Vec<String> = if cache.exists() {
        listing(&cache)
    } else {
        Vec::new()
    };
    assert!(!stored.iter().any(|p| p.contains(hex)), "{stored:?}");
    let after: Vec<String> = listing(&d)
        .into_iter()
        .filter(|p| !p.starts_with("cache"))
        .collect();
    assert_eq!(after, before, "{} changed", d.display());
}

#[test]
fn long_values_and_paths_are_cut_in_messages() {
    let d = common::test_dir("w");
    // A recipe of 20 MB is refused unread, in one short line (recipes are read with a bound of
    // 16 MiB); a value of 12 MB is read and cut where a message quotes it.
    fs::write(
        d.join("huge.toml"),
        format!(
            "[image]\nname = \"example.com/x\"\ntag = \"{}\"\n",
            "A".repeat(20 << 20)
        ),
    )
    .unwrap();
    let out = common::run(
        common::ocibuild()
            .current_dir(&d)
            .args(["-q", "build", "huge.toml"]),
    );
    let all = text(&out);
    assert!(
        !out.status.success() && all.len() < 1024,
        "{}",
        &all[..all.len().min(2000)]
    );
    assert!(
        all.contains("huge.toml") && all.contains("too large for a recipe"),
        "{all}"
    );
    let big = "A".repeat(12 << 20);
    // 44 components of 200 bytes: 8.8 KB.
    let long_path = vec!["d".repeat(200); 44].join("/");
    for (name, recipe_text, field) in [
        (
            "tag",
            format!("[image]\nname = \"example.com/x\"\ntag = \"{big}\"\n"),
            "invalid image tag `AAAA",
        ),
        (
            "dest",
            format!(
                "[image]\nname = \"example.com/x\"\n\n[[layer]]\nname = \"a\"\nsrc = \"src\"\n\
                 dest = \"{big}\"\n"
            ),
            "layer `a`: invalid dest `AAAA",
        ),
        (
            "user",
            format!("[image]\nname = \"example.com/x\"\n\n[config]\nuser = \"{big}\"\n"),
            "[config] user `AAAA",
        ),
        (
            "src",
            format!(
                "[image]\nname = \"example.com/x\"\n\n[[layer]]\nname = \"a\"\n\
                 src = \"{long_path}\"\ndest = \"/a\"\n"
            ),
            "layer `a`: cannot access source `dddd",
        ),
    ] {
        fs::create_dir_all(d.join("src")).unwrap();
        let r = d.join(format!("{name}.toml"));
        fs::write(&r, recipe_text).unwrap();
        let before = listing(&d);
        let out = common::run(
            common::ocibuild()
                .current_dir(&d)
                .args(["-q", "build"])
                .arg(&r)
                .arg("-o")
                .arg(d.join("out.oci")),
        );
        let all = text(&out);
        assert!(
            !out.status.success(),
            "{name}: {}",
            &all[..all.len().min(2000)]
        );
        assert!(
            all.len() < 1024,
            "{name}: {} bytes: {}",
            all.len(),
            &all[..2000]
        );
        assert!(
            all.contains(field)
                && all.contains(" bytes in all)")
                && all.contains(&format!("{name}.toml:")),
            "{name}: {all}"
        );
        assert_eq!(listing(&d), before, "{name}: {} changed", d.display());
    }
}
