//! Hardening, second round, on the network side (issue 31, cases 13 to 15), offline: logins
//! pasted into image references never reach a message; silent peers and a missing network fail
//! fast, once, in one clear line; unknown layer media types and long values in messages. Each
//! test generates its inputs and checks that nothing outside the build's own directories
//! changed. No traffic leaves 127.0.0.1 (`.invalid` names never resolve: RFC 6761).

use std::path::{Path, PathBuf};
use std::process::Output;

use fs_err as fs;

use crate::common;

/// A recipe of one small layer over scratch in `dir`.
fn recipe(dir: &Path) -> PathBuf {
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

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every file under `dir` (relative), sorted: to check that a command added or removed none.
fn listing(dir: &Path) -> Vec<String> {
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
// Case 13: a login in an image reference

#[test]
fn a_login_in_an_image_reference_is_never_shown() {
    let d = common::test_dir("w");
    let r = recipe(&d);
    let layout = d.join("app.oci");
    common::run_ok(
        common::ocibuild()
            .current_dir(&d)
            .args(["-q", "build"])
            .arg(&r)
            .arg("-o")
            .arg(&layout),
    );
    let key = d.join("k.pem");
    let public = d.join("pub.pem");
    assert!(std::process::Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256"
        ])
        .arg("-out")
        .arg(&key)
        .status()
        .unwrap()
        .success());
    assert!(std::process::Command::new("openssl")
        .args(["pkey", "-pubout", "-in"])
        .arg(&key)
        .arg("-out")
        .arg(&public)
        .status()
        .unwrap()
        .success());
    let port = crate::common::registry::free_port();
    for (password, fragments) in [
        ("s3cret", &["s3cret"][..]),
        ("s3%40cret", &["s3%40cret", "s3%40", "cret"][..]),
    ] {
        let reference = format!("user:{password}@127.0.0.1:{port}/team/x");
        let base_recipe = d.join("based.toml");
        fs::write(
            &base_recipe,
            format!("[image]\nname = \"example.com/x\"\n\n[base]\nimage = \"{reference}:1\"\n"),
        )
        .unwrap();
        let (l, k, p) = (
            layout.to_str().unwrap(),
            key.to_str().unwrap(),
            public.to_str().unwrap(),
        );
        let docker = format!("docker://{reference}");
        let registry_only = format!("user:{password}@127.0.0.1:{port}");
        let rs = r.to_str().unwrap();
        let cases: Vec<Vec<&str>> = vec![
            vec!["build", rs, "-o", "out.oci", "--push", &reference],
            vec!["build", rs, "-o", "out.oci", "--push", &docker],
            vec!["build", rs, "-o", "out.oci", "--cache-repo", &reference],
            vec!["build", base_recipe.to_str().unwrap(), "-o", "out.oci"],
            vec!["lock", base_recipe.to_str().unwrap()],
            vec!["push", l, &reference],
            vec!["push", l, &docker],
            vec!["diff", l, &docker],
            vec!["diff", &docker, l],
            vec!["diff", l, &reference],
            vec!["verify", rs, "--against", &docker],
            vec!["plan", rs, "--against", &reference],
            vec!["mirror", "--to", &registry_only, l],
            vec!["sign", "--key", k, &reference],
            vec!["verify-signature", "--key", p, &reference],
        ];
        for args in cases {
            let before = listing(&d);
            let out = common::run(common::ocibuild().current_dir(&d).args(&args));
            let all = text(&out);
            assert!(!out.status.success(), "{args:?}: {all}");
            for f in fragments {
                assert!(!all.contains(f), "{args:?} shows `{f}`: {all}");
            }
            assert!(
                all.contains("a login (`user:password@`) does not belong in an image reference")
                    && all.contains("REGISTRY_AUTH_FILE")
                    && all.contains(&format!("***@127.0.0.1:{port}")),
                "{args:?}: {all}"
            );
            assert_eq!(all.lines().count(), 1, "{args:?}: {all}");
            assert_eq!(listing(&d), before, "{args:?} changed {}", d.display());
        }
    }
}
