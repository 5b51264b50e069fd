//! Progress and decisions (item 7 and `-v` of the CLI issue): on a terminal, resolution shows a
//! spinner, downloads and layers show bars with bytes, a finished layer leaves a line, and a
//! push shows each blob's bytes; `-v` prints what each step decided, terminal or not; neither
//! appears in a pipe without `-v`, nor with `-q`.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::aptfix::{self, deb, fixture, Data};
use crate::common::{ocibuild, run, run_ok, tempdir};

/// `cmd` run on a terminal (util-linux `script`, a pseudo-terminal): what the terminal showed,
/// escape sequences and all.
fn on_a_terminal(cmd: &mut Command) -> String {
    let quote = |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', "'\\''"));
    let mut line = quote(cmd.get_program());
    for a in cmd.get_args() {
        line.push(' ');
        line.push_str(&quote(a));
    }
    let mut script = Command::new("script");
    script
        .args(["-qefc", &line, "/dev/null"])
        .stdin(Stdio::null());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => script.env(k, v),
            None => script.env_remove(k),
        };
    }
    let o = run(&mut script);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{line}: {text}");
    text
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// 3 MiB of text that compresses poorly (so the .deb is over the size that gets a bar).
fn noise() -> &'static str {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let s: String = (0..3 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (b'a' + (x % 26) as u8) as char
        })
        .collect();
    Box::leak(s.into_boxed_str())
}

fn cmd(cache: &Path, args: &[&str], recipe: &Path) -> Command {
    let mut c = ocibuild();
    c.env("OCIBUILD_CACHE", cache).args(args).arg(recipe);
    c
}

#[test]
fn progress_on_a_terminal_and_decisions_with_verbose() {
    if !crate::common::require_tool("script") {
        return;
    }
    let big = deb("big", "1.0").data(Data::File("usr/share/big/noise.txt", noise(), 0o644));
    let f = fixture(&[big], false);
    let t = tempdir();
    let r = aptfix::apt_recipe(t.path(), &f, &f.key, &["big"], "");
    let cache = t.path().join("cache");
    let out = t.path().join("img").display().to_string();

    // Resolution: a spinner while [apt] is resolved.
    let shown = on_a_terminal(&mut cmd(&cache, &["lock"], &r));
    assert!(shown.contains("resolving [apt] for amd64"), "{shown}");

    // A cold build: the .deb's download bar with bytes, the layer's bar, a line once built.
    let shown = on_a_terminal(&mut cmd(&cache, &["-v", "build", "-o", &out], &r));
    assert!(shown.contains("big_1.0_amd64.deb ["), "no bar: {shown}");
    assert!(shown.contains("/1.82 MiB"), "no byte total: {shown}");
    assert!(
        shown.contains("/big_1.0_amd64.deb: 1.82 MiB in "),
        "not counted: {shown}"
    );
    assert!(shown.contains("built apt in "), "{shown}");
    let shown = on_a_terminal(&mut cmd(&cache, &["build", "-o", &out], &r));
    assert!(shown.contains("cached apt"), "{shown}");

    // `-v` in a pipe: the decisions, each with its reason.
    let o = run_ok(&mut cmd(&cache, &["-v", "build", "-o", &out], &r));
    let err = stderr(&o);
    for want in [
        "[apt]: the lock answers the recipe's request (1 package); not resolved again",
        "layer apt: cached as sha256:",
        "(key sha256:",
    ] {
        assert!(err.contains(want), "missing {want:?}: {err}");
    }
    let o = run_ok(&mut cmd(
        &cache,
        &["-v", "build", "--no-cache", "-o", &out],
        &r,
    ));
    assert!(
        stderr(&o).contains("layer apt: building (--no-cache)"),
        "{}",
        stderr(&o)
    );
    // `-v` in a pipe also says what each download moved (no bar to count it there).
    let o = run_ok(&mut cmd(
        &t.path().join("cold-cache"),
        &["-v", "build", "-o", &out],
        &r,
    ));
    assert!(
        stderr(&o).contains("/big_1.0_amd64.deb: 1.82 MiB in "),
        "{}",
        stderr(&o)
    );
    // Without `-v`, a pipe gets neither bars nor decisions; `-q` and `-v` do not go together.
    let o = run_ok(&mut cmd(&cache, &["build", "-o", &out], &r));
    let err = stderr(&o);
    assert!(!err.contains('\r') && !err.contains("cached as"), "{err}");
    let o = run(&mut cmd(&cache, &["-q", "-v", "build", "-o", &out], &r));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));

    // A push: each blob's bytes on a terminal; `-v` says which blobs the registry had.
    use crate::common::registry::{auth_file, start_registry, PASS};
    if !crate::common::require_tool("docker-registry") {
        return;
    }
    let reg = start_registry(None);
    let auth = auth_file(t.path(), &reg.addr, PASS);
    let dest = format!("{}/progress/app:1", reg.addr);
    let push = |verbose: bool| {
        let mut c = ocibuild();
        c.env("OCIBUILD_CACHE", &cache)
            .env("REGISTRY_AUTH_FILE", &auth)
            .env_remove("OCIBUILD_REGISTRIES")
            .env("XDG_CONFIG_HOME", t.path().join("no-config"));
        if verbose {
            c.arg("-v");
        }
        c.args(["push", &out, &dest]);
        c
    };
    let layout: serde_json::Value =
        serde_json::from_slice(&fs_err::read(Path::new(&out).join("index.json")).unwrap()).unwrap();
    let manifest = layout["manifests"][0]["digest"].as_str().unwrap();
    let manifest: serde_json::Value = serde_json::from_slice(
        &fs_err::read(
            Path::new(&out)
                .join("blobs/sha256")
                .join(&manifest["sha256:".len()..]),
        )
        .unwrap(),
    )
    .unwrap();
    let apt_layer = manifest["layers"][0]["digest"].as_str().unwrap();
    // On a terminal with `-v`, each bar's count is said when it ends: all of the layer's bytes.
    let shown = on_a_terminal(&mut push(true));
    let short = &apt_layer[..7 + 12];
    assert!(shown.contains(&format!("{short} [")), "no bar: {shown}");
    let counted = shown
        .split(&format!("{short}: "))
        .nth(1)
        .unwrap_or_else(|| panic!("no count for {short}: {shown}"));
    assert!(counted.starts_with("1.82 MiB in "), "{counted}");
    let o = run_ok(&mut push(true));
    assert!(
        stderr(&o).contains(&format!(
            "blob {apt_layer}: already at {}/progress/app",
            reg.addr
        )),
        "{}",
        stderr(&o)
    );
    // `-q`: only the reference pushed, as ko prints it.
    let mut quiet = push(false);
    quiet.arg("-q");
    let o = run_ok(&mut quiet);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!(
            "{dest}@{}",
            layout["manifests"][0]["digest"].as_str().unwrap()
        )
    );
}
