//! Registry behaviours Distribution does not have, through the command line, against the
//! in-process fake registry (tests/it/common/fake_registry.rs): a token service that grants
//! pull but never push, which `plan --against` must find before a push fails; and a registry
//! that answers 401 instead of 404 for a tag that is not there.

use std::path::{Path, PathBuf};

use fs_err as fs;
use serde_json::Value;

use crate::common::fake_registry::{Fake, Knobs};
use crate::common::{ocibuild, run, stdout, tempdir};

fn recipe(dir: &Path) -> PathBuf {
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(dir.join("src/hello.txt"), "hello\n").unwrap();
    let r = dir.join("app.toml");
    fs::write(
        &r,
        "[image]\nname = \"example.com/app\"\nplatform = \"linux/amd64\"\n\n\
         [[layer]]\nname = \"app\"\nsrc = \"src\"\ndest = \"/app\"\n",
    )
    .unwrap();
    r
}

fn plan(dir: &Path, recipe: &Path, against: &str, json: bool) -> std::process::Output {
    let mut c = ocibuild();
    c.env("OCIBUILD_CACHE", dir.join("cache"))
        .env_remove("OCIBUILD_REGISTRIES")
        .env("REGISTRY_AUTH_FILE", dir.join("no-auth.json"))
        .env("XDG_CONFIG_HOME", dir.join("no-config"))
        .args(["plan", "--against", against]);
    if json {
        c.arg("--json");
    }
    run(c.arg(recipe))
}

/// Pull granted, push never: the plan (of a tag that is not there) still says what the push
/// would upload, then that the push would be refused and why, and exits 1; `--json` has it as
/// `push.refused`. Nothing was uploaded: the upload session was opened to ask, and cancelled.
#[test]
fn plan_finds_a_push_the_token_service_will_not_grant() {
    let fake = Fake::start(Knobs {
        bearer: true,
        pull_only: true,
        ..Knobs::default()
    });
    let t = tempdir();
    let r = recipe(t.path());
    let against = format!("{}/team/app:1", fake.addr);

    let o = plan(t.path(), &r, &against, false);
    let out = stdout(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains(&format!("push to {against}: uploads ")),
        "{out}"
    );
    let line = err
        .lines()
        .find(|l| l.starts_with(&format!("error: the push to {against} would be refused: ")))
        .unwrap_or_else(|| panic!("no refusal line: {err}"));
    assert!(
        line.contains("open an upload session was refused (HTTP 401"),
        "{line}"
    );

    let o = plan(t.path(), &r, &against, true);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let refused = v["push"]["refused"].as_str().unwrap();
    assert!(refused.contains("HTTP 401"), "{refused}");
    assert!(v["push"]["blobs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["action"] == "upload"));

    let s = fake.state.lock().unwrap();
    assert!(s.blobs.is_empty() && s.manifests.is_empty(), "{:?}", s.log);
    assert!(
        s.token_requests
            .iter()
            .any(|(scopes, _)| scopes.iter().any(|sc| sc.ends_with(":pull,push"))),
        "push was asked for: {:?}",
        s.token_requests
    );
}

/// A registry that answers 401 for a tag it does not have (and grants push): the plan takes
/// the tag as not there (nothing to compare with), and the push may go ahead.
#[test]
fn plan_takes_a_401_for_a_missing_tag_as_not_there() {
    let fake = Fake::start(Knobs {
        bearer: true,
        missing_manifest_401: true,
        ..Knobs::default()
    });
    let t = tempdir();
    let r = recipe(t.path());
    let against = format!("{}/team/app:1", fake.addr);
    let o = plan(t.path(), &r, &against, true);
    assert!(
        o.status.success(),
        "{}{}",
        stdout(&o),
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["push"]["manifestExists"], false, "{v:#}");
    assert!(v["push"].get("refused").is_none(), "{v:#}");
    assert!(v["layers"][0]["changedFromTarget"].is_null(), "{v:#}");
    // The upload session it opened to ask was cancelled; nothing was uploaded.
    let s = fake.state.lock().unwrap();
    assert!(s.uploads.is_empty() && s.blobs.is_empty(), "{:?}", s.log);
    assert!(
        s.log
            .iter()
            .any(|l| l.starts_with("DELETE /v2/team/app/blobs/uploads/")),
        "{:?}",
        s.log
    );
}
