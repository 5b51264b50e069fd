//! The image's times: `[image] source-date-epoch = "git"` (the recipe's last git commit), and
//! an epoch past the year 9999 refused while 9999 itself is readable.

use std::process::Command;

use fs_err as fs;

use crate::common;
use crate::output_layout::{recipe, stderr};

fn git(dir: &std::path::Path, args: &[&str]) {
    common::run_ok(
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_AUTHOR_DATE", "2024-05-06T07:08:09Z")
            .env("GIT_COMMITTER_DATE", "2024-05-06T07:08:09Z")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com"),
    );
}

#[test]
fn the_epoch_from_git_is_the_last_commits_time_and_a_plain_directory_is_refused() {
    if !common::require_tool("git") {
        return;
    }
    let t = common::tempdir();
    let p = t.path().join("p");
    fs::create_dir_all(p.join("app")).unwrap();
    fs::write(p.join("app/x"), "x\n").unwrap();
    let recipe = p.join("r.toml");
    fs::write(
        &recipe,
        "[image]\nname = \"example.com/x\"\nsource-date-epoch = \"git\"\n\n[[layer]]\n\
         name = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n",
    )
    .unwrap();
    // Not a repository yet: refused, saying what to do.
    let o = common::run(
        common::ocibuild()
            .arg("build")
            .arg(&recipe)
            .arg("-o")
            .arg(p.join("a")),
    );
    let err = common::stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("source-date-epoch = \"git\": no commit time for"),
        "{err}"
    );
    git(&p, &["init", "-q"]);
    git(&p, &["add", "."]);
    git(&p, &["commit", "-q", "-m", "one"]);
    let o = common::run_ok(
        common::ocibuild()
            .args(["build", "--json", "-o"])
            .arg(p.join("img"))
            .arg(&recipe),
    );
    let doc: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    let config = p.join("img/blobs/sha256").join(
        doc["config"]
            .as_str()
            .unwrap()
            .trim_start_matches("sha256:"),
    );
    let config: serde_json::Value = serde_json::from_slice(&fs::read(config).unwrap()).unwrap();
    assert_eq!(config["created"], "2024-05-06T07:08:09Z", "{config:#}");
    // SOURCE_DATE_EPOCH still wins.
    let o = common::run_ok(
        common::ocibuild()
            .env("SOURCE_DATE_EPOCH", "0")
            .args(["build", "--json", "-o"])
            .arg(p.join("img0"))
            .arg(&recipe),
    );
    let zero: serde_json::Value = serde_json::from_str(&common::stdout(&o)).unwrap();
    assert_ne!(zero["manifest"], doc["manifest"]);
    // Neither a number nor "git".
    fs::write(
        &recipe,
        "[image]\nname = \"example.com/x\"\nsource-date-epoch = \"yesterday\"\n",
    )
    .unwrap();
    let o = common::run(common::ocibuild().arg("build").arg(&recipe));
    assert!(
        common::stderr(&o).contains("r.toml:3:21: invalid source-date-epoch \"yesterday\""),
        "{}",
        common::stderr(&o)
    );
}

#[test]
fn an_epoch_past_year_9999_is_refused_and_9999_is_readable() {
    let d = common::test_dir("w");
    let r = recipe(&d, "v1", b"x");
    let l = d.join("img.oci");
    let out = common::run(
        common::ocibuild()
            .args(["--quiet", "build"])
            .arg(&r)
            .arg("-o")
            .arg(&l)
            .env("SOURCE_DATE_EPOCH", "253402300800"),
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is after 9999-12-31T23:59:59Z"),
        "{}",
        stderr(&out)
    );
    assert!(!l.exists());
    let out = common::run(
        common::ocibuild()
            .args(["--quiet", "build"])
            .arg(&r)
            .arg("-o")
            .arg(&l)
            .env("SOURCE_DATE_EPOCH", "253402300799"),
    );
    common::assert_success(&out, "build at the last second of 9999");
    if common::require_tool("skopeo") {
        let v = common::skopeo_inspect(&format!("oci:{}:v1", l.display()));
        assert_eq!(v["Created"], "9999-12-31T23:59:59Z");
    }
}
