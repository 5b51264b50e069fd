//! Errors in the files a user writes, as the binary says them (item 6 of the CLI issue): a
//! TOML syntax error at its own line and column, did-you-mean for a recipe key and for an
//! account, a lock's and a pylock.toml's TOML errors with `FILE:LINE:COL`, and a closed stdout
//! ending the command quietly (status 141, nothing on stderr).

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use fs_err as fs;

use crate::aptfix::{fixture, python_universe};
use crate::common::{ocibuild, run, run_ok, tempdir};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `text` as `app.toml` in `dir` (with a `hello.txt` for layers to copy).
fn write_recipe(dir: &Path, text: &str) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join("hello.txt"), "hello\n").unwrap();
    let r = dir.join("app.toml");
    fs::write(&r, text).unwrap();
    r
}

/// The one error line of a failed `build`, which must write nothing.
fn build_error(recipe: &Path) -> String {
    let out = recipe.parent().unwrap().join("img");
    let o = run(ocibuild().args(["build", "-o"]).arg(&out).arg(recipe));
    assert!(!o.status.success(), "built: {}", stderr(&o));
    assert!(!out.exists());
    stderr(&o).trim_end().to_string()
}

const HEAD: &str = "# a recipe\n[image]\nname = \"example.com/errors\"\ntag = \"1\"\n\n\
                    [config]\nenv = { A = \"1\" }\ncmd = [\"/bin/sh\"]\n";

/// An array left open on line 12 is reported on line 12, right after its last value, not where
/// the parser next finds a token (line 15, past a blank and a comment line); a multi-line
/// string never closed, where it opens.
#[test]
fn a_syntax_error_is_reported_on_its_own_line() {
    let t = tempdir();
    // Lines 9 to 11, then the error on 12.
    let body = format!(
        "{HEAD}\n[[layer]]\nname = \"app\"\nignore = [\"*.pyc\"\n\n# the source\nsrc = \".\"\n"
    );
    assert_eq!(body.lines().nth(11), Some("ignore = [\"*.pyc\""));
    let r = write_recipe(t.path(), &body);
    let err = build_error(&r);
    assert!(
        err.starts_with(&format!("error: {}:12:18: ", r.display())),
        "{err}"
    );
    assert!(err.contains("expected `,`"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    let body = format!("{HEAD}\n[[layer]]\nname = \"app\"\ndest = '''/app\nsrc = \".\"\n");
    let r = write_recipe(t.path(), &body);
    let err = build_error(&r);
    assert!(
        err.starts_with(&format!("error: {}:12:8: ", r.display())),
        "{err}"
    );
}

/// A misspelt key gets the key it was meant to be; a word like no known key gets the list.
#[test]
fn an_unknown_key_says_did_you_mean() {
    let t = tempdir();
    let r = write_recipe(
        t.path(),
        &format!("{HEAD}\n[[layer]]\nname = \"app\"\nsorce = \".\"\ndest = \"/app\"\n"),
    );
    assert_eq!(
        build_error(&r),
        format!(
            "error: {}:12:1: unknown field `sorce`, did you mean `src`?",
            r.display()
        )
    );
    let r = write_recipe(
        t.path(),
        "[image]\nname = \"example.com/errors\"\n\n[apt]\npakages = [\"tool\"]\n",
    );
    let err = build_error(&r);
    assert!(
        err.starts_with(&format!("error: {}:5:1: ", r.display()))
            && err.ends_with("unknown field `pakages`, did you mean `packages`?"),
        "{err}"
    );
    let r = write_recipe(
        t.path(),
        "[image]\nname = \"example.com/errors\"\nzzzzzz = 1\n",
    );
    let err = build_error(&r);
    assert!(
        err.contains("unknown field `zzzzzz`, expected one of") && !err.contains("did you mean"),
        "{err}"
    );
}

/// `[config] user = "apx"` where the recipe declares `app`.
#[test]
fn an_unknown_account_says_did_you_mean() {
    let t = tempdir();
    let r = write_recipe(
        t.path(),
        "[image]\nname = \"example.com/errors\"\n\n[[accounts.user]]\nname = \"app\"\n\
         uid = 1000\n\n[config]\nuser = \"apx\"\n",
    );
    let err = build_error(&r);
    assert!(
        err.contains(&format!("{}:9:8: ", r.display()))
            && err.contains("no account `apx`: did you mean `app`?"),
        "{err}"
    );
}

/// A lock whose TOML is broken names the lock, the line and the column (read before the base's
/// registry, which does not exist, is asked anything).
#[test]
fn a_lock_syntax_error_names_its_place() {
    let t = tempdir();
    let r = write_recipe(
        t.path(),
        "[image]\nname = \"example.com/errors\"\n\n[base]\nimage = \"127.0.0.1:9/none:1\"\n",
    );
    let lock = r.with_extension("lock");
    fs::write(&lock, "version = 1\n\n[base\nreference = \"scratch\"\n").unwrap();
    let err = build_error(&r);
    assert!(
        err.contains(&format!("{}:3:6: not a valid lock file: ", lock.display())),
        "{err}"
    );
}

/// A pylock.toml with a syntax error on line 4: its path, 4 and the column, before anything is
/// downloaded.
#[test]
fn a_pylock_syntax_error_names_its_place() {
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    let pylock = t.path().join("pylock.toml");
    fs::write(
        &pylock,
        "lock-version = \"1.0\"\ncreated-by = \"test\"\n\n[[packages]\nname = \"click\"\n",
    )
    .unwrap();
    let r = crate::wheel_recipe::recipe(t.path(), &f, "lock = \"pylock.toml\"");
    let err = build_error(&r);
    assert!(
        err.contains(&format!(
            "{}:4:12: pylock.toml is not valid TOML for PEP 751: ",
            pylock.display()
        )),
        "{err}"
    );
}

/// stdout closed before the command writes (`ocibuild … | head` where head has gone): status
/// 141, nothing on stderr, for an error that comes back to the CLI (`man`, `sbom`: a failed
/// write) and for a panicking write (`completions`: clap's generator).
#[test]
fn a_closed_stdout_ends_quietly_with_141() {
    let t = tempdir();
    let r = write_recipe(
        &t.path().join("p"),
        "[image]\nname = \"example.com/errors\"\n\n[[layer]]\nname = \"app\"\nsrc = \"hello.txt\"\n\
         dest = \"/hello.txt\"\n",
    );
    let layout = t.path().join("p/app.oci");
    run_ok(ocibuild().args(["build", "-o"]).arg(&layout).arg(&r));
    for args in [
        vec!["man".to_string()],
        vec!["completions".into(), "bash".into()],
        vec!["sbom".into(), r.display().to_string()],
    ] {
        // The pipe's reader is closed before the child starts: with a piped stdout closed
        // after `spawn`, a child on a busy machine could write everything first (the pipe
        // holds 64 KiB) and exit 0.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let child = ocibuild()
            .current_dir(t.path().join("p"))
            .args(&args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        assert!(
            !err.contains("Broken pipe") && err.is_empty(),
            "{args:?}: {err}"
        );
        assert_eq!(o.status.code(), Some(141), "{args:?}: {err}");
    }
}

/// A chained error is printed once, each cause once: the recipe's message says only its own
/// context (`cannot read recipe`), the CLI adds the I/O error it came from.
#[test]
fn a_chained_error_says_each_cause_once() {
    let dir = tempdir();
    let recipe = dir.path().join("missing.toml");
    let line = build_error(&recipe);
    assert_eq!(
        line,
        format!(
            "error: {}: cannot read recipe: No such file or directory (os error 2)",
            recipe.display()
        )
    );
    assert_eq!(
        line.matches("No such file or directory").count(),
        1,
        "{line}"
    );
}

/// Item 6: a lock whose `requires-python` the image's interpreter misses says the interpreter's
/// real version and the `uv pip compile` line that locks for this image.
#[test]
fn a_lock_for_another_python_says_how_to_lock_for_this_one() {
    use crate::aptfix::{apt_recipe, fixture, python_universe};
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    fs::write(
        t.path().join("pylock.toml"),
        "lock-version = \"1.0\"\ncreated-by = \"uv\"\nrequires-python = \">=3.12.5\"\n",
    )
    .unwrap();
    let r = apt_recipe(
        t.path(),
        &f,
        &f.key,
        &["python3"],
        "
[python]
lock = \"pylock.toml\"
",
    );
    let o = run(ocibuild()
        .args(["build", "-o"])
        .arg(t.path().join("img"))
        .arg(&r));
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("requires-python >=3.12.5 does not hold for Python 3.12.1")
            && err.contains("lock for this image (3.12.1): uv pip compile requirements.in --format pylock.toml -o pylock.toml --python-version 3.12.1 --python-platform x86_64-manylinux_2_36"),
        "{err}"
    );
}

/// Item 6: a pylock error about one package names the file and the package's line and column
/// (its `name`): an sdist-only package, and one from a VCS checkout.
#[test]
fn a_pylock_package_error_is_placed_at_the_package() {
    use crate::aptfix::{apt_recipe, fixture, python_universe};
    let f = fixture(&python_universe(), false);
    let h = "0".repeat(64);
    let cases = [
        (
            format!("lock-version = \"1.0\"\n\n[[packages]]\nname = \"only-sdist\"\nsdist = {{ url = \"https://x/only-sdist-1.tar.gz\", hashes = {{ sha256 = \"{h}\" }} }}\n"),
            "pylock.toml:4:8: only-sdist: only an sdist, and [python] names no `sdist-builder` to build it in: add `sdist-builder = { recipe = \"builder.toml\" }`",
        ),
        (
            "lock-version = \"1.0\"\n[[packages]]\nname = \"from-git\"\nvcs = { type = \"git\", url = \"u\" }\n".to_string(),
            "pylock.toml:3:8: package from-git comes from a VCS checkout",
        ),
    ];
    for (lock, want) in cases {
        let t = tempdir();
        fs::write(t.path().join("pylock.toml"), lock).unwrap();
        let r = apt_recipe(
            t.path(),
            &f,
            &f.key,
            &["python3"],
            "\n[python]\nlock = \"pylock.toml\"\n",
        );
        let o = run(ocibuild()
            .args(["build", "-o"])
            .arg(t.path().join("img"))
            .arg(&r));
        let err = stderr(&o);
        assert!(!o.status.success());
        assert!(err.contains(want), "want {want:?}: {err}");
    }
}

/// Item 9: a `signed-by` key that is missing is a recipe error even with a lock, and the key's
/// sha256 is pinned in the lock: another key makes `--locked` refuse.
#[test]
fn the_archive_key_must_exist_and_is_pinned() {
    use crate::aptfix::{apt_recipe, fixture, python_universe};
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    let key = t.path().join("archive.asc");
    fs::copy(&f.key, &key).unwrap();
    let r = apt_recipe(t.path(), &f, &key, &["tool"], "");
    run_ok(
        ocibuild()
            .args(["build", "-o"])
            .arg(t.path().join("img"))
            .arg(&r),
    );
    let lock = fs::read_to_string(t.path().join("app.lock")).unwrap();
    let pinned = crate::common::sha256_file(&key).unwrap();
    assert!(lock.contains(&format!("key = \"{pinned}\"")), "{lock}");

    fs::copy(&f.other_key, &key).unwrap();
    let o = run(ocibuild()
        .args(["build", "--locked", "-o"])
        .arg(t.path().join("img2"))
        .arg(&r));
    let err = stderr(&o);
    assert!(
        !o.status.success() && err.contains("a source's signed-by key changed"),
        "{err}"
    );

    fs::remove_file(&key).unwrap();
    let o = run(ocibuild()
        .args(["build", "--locked", "-o"])
        .arg(t.path().join("img3"))
        .arg(&r));
    let err = stderr(&o);
    assert!(
        !o.status.success()
            && err.contains("app.toml:")
            && err.contains(&format!("signed-by `{}`: no such file", key.display())),
        "{err}"
    );
}
