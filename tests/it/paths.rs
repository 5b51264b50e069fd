//! `[[path]]`: declared directories and symlinks become one layer, `paths`, above the recipe's
//! `[[layer]]`s: its listing follows the contract (parents synthesized 0755 0:0, sorted), a
//! declared directory sets the mode and owner of one an earlier layer made (its contents
//! stay), and under podman the modes, owners and the link are what the recipe says.

use std::path::{Path, PathBuf};

use fs_err as fs;
use serde_json::Value;

use crate::common::{ocibuild, run, run_ok, stdout, tar_listing, tempdir};

const PATHS: &str = r#"
[[path]]
path = "/data/cache"
mode = "0700"
owner = "1000:1000"

[[path]]
path = "/app"
mode = "0750"
owner = "1000:1000"

[[path]]
path = "/usr/local/bin/echo"
symlink = "/bin/busybox"
"#;

fn project(dir: &Path, busybox: &Path, extra: &str) -> PathBuf {
    fs::create_dir_all(dir.join("app")).unwrap();
    fs::write(dir.join("app/hello.txt"), "hello from the app\n").unwrap();
    let r = dir.join("paths.toml");
    fs::write(
        &r,
        format!(
            r#"[image]
name = "example.com/paths"
platform = "linux/amd64"

[[layer]]
name = "busybox"
src = "{}"
dest = "/bin/busybox"

[[layer]]
name = "app"
src = "app"
dest = "/app"
{PATHS}{extra}"#,
            busybox.display()
        ),
    )
    .unwrap();
    r
}

fn build(recipe: &Path, out: &Path, extra: &[&str]) -> Value {
    let o = run_ok(
        ocibuild()
            .args(["build", "--json", "-o"])
            .arg(out)
            .arg(recipe)
            .args(extra),
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn declared_paths_are_one_layer_with_their_modes_owners_and_links() {
    let Some(busybox) = crate::common::require_static_busybox() else {
        return;
    };
    let t = tempdir();
    let test = r#"
[[test]]
name = "stat"
run = ["/bin/busybox", "sh", "-c", "busybox stat -c '%n %a %u:%g' /data /data/cache /app; cat /app/hello.txt; /usr/local/bin/echo linked"]
expect-output = "/data 755 0:0\n/data/cache 700 1000:1000\n/app 750 1000:1000\nhello from the app\nlinked"
"#;
    let r = project(t.path(), &busybox, test);
    let out = t.path().join("img");
    let v = build(&r, &out, &[]);
    let layers = v["layers"].as_array().unwrap();
    let last = layers.last().unwrap();
    assert_eq!(last["name"], "paths", "{v:#}");
    assert_eq!(layers.len(), 3, "{v:#}");
    let blob = out.join("blobs/sha256").join(
        last["digest"]
            .as_str()
            .unwrap()
            .trim_start_matches("sha256:"),
    );
    assert_eq!(
        tar_listing(&blob),
        [
            "d 0750 1000:1000 app/",
            "d 0755 0:0 data/",
            "d 0700 1000:1000 data/cache/",
            "d 0755 0:0 usr/",
            "d 0755 0:0 usr/local/",
            "d 0755 0:0 usr/local/bin/",
            "l 0777 0:0 usr/local/bin/echo -> /bin/busybox",
        ]
    );

    // A rebuild takes it from the cache.
    let again = build(&r, &t.path().join("img2"), &[]);
    assert_eq!(again["manifest"], v["manifest"]);
    assert_eq!(again["layers"][2]["cached"], true, "{again:#}");

    // Under podman: the test stage checks modes, owners, the copied file and the link.
    if crate::common::require_tool("podman") {
        let o = run(ocibuild().args(["test", "-o"]).arg(&out).arg(&r));
        assert!(
            o.status.success(),
            "{}{}",
            stdout(&o),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// Against the layers below: a path beneath a lower symlink (merged /usr's `bin -> usr/bin`),
/// a directory over a lower file, a symlink over a lower directory: each refused, placed at
/// the entry, nothing written. A directory over a lower directory only changes its mode and
/// owner (the first test).
#[test]
fn paths_never_replace_a_lower_link_or_file() {
    let t = tempdir();
    let fake = t.path().join("fake-busybox");
    fs::write(&fake, "not run").unwrap();
    let r = project(t.path(), &fake, "");
    let text = fs::read_to_string(&r).unwrap().replace(PATHS, "");
    // A merged-/usr root: `bin -> usr/bin` from a layer of the recipe's.
    fs::create_dir_all(t.path().join("root/usr/bin")).unwrap();
    fs::os::unix::fs::symlink("usr/bin", t.path().join("root/bin")).unwrap();
    let text = format!("{text}\n[[layer]]\nname = \"root\"\nsrc = \"root\"\ndest = \"/\"\n");
    let base_lines = text.lines().count();
    let cases = [
        (
            "[[path]]\npath = \"/bin/tool\"\nsymlink = \"/usr/bin/busybox\"\n",
            "`/bin/tool`: it is beneath /bin, a symlink to `usr/bin` in a layer below",
        ),
        (
            "[[path]]\npath = \"/app/hello.txt\"\n",
            "`/app/hello.txt`: a layer below has it as a file",
        ),
        (
            "[[path]]\npath = \"/usr\"\nsymlink = \"/opt\"\n",
            "`/usr`: a layer below already has it",
        ),
    ];
    for (extra, want) in cases {
        fs::write(&r, format!("{text}{extra}")).unwrap();
        let out = t.path().join("img");
        let o = run(ocibuild().args(["build", "-o"]).arg(&out).arg(&r));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{extra}");
        let place = format!("paths.toml:{}:8: [[path]] ", base_lines + 2);
        assert!(
            err.contains(&format!("{place}{want}")),
            "{extra}: want {place}{want} in: {err}"
        );
        assert!(!out.exists(), "{extra}: output written");
    }
}

#[test]
fn bad_paths_are_placed_and_named() {
    let t = tempdir();
    let busybox = t.path().join("fake-busybox");
    fs::write(&busybox, "not run").unwrap();
    let cases: &[(&str, &str)] = &[
        (
            "[[path]]\npath = \"/.wh.usr\"\n",
            ":2:8: [[path]] path: `.wh.usr` is a whiteout name",
        ),
        (
            "[[path]]\npath = \"/d\"\nowner = \"4294967295:0\"\n",
            ":3:9: [[path]] owner: invalid `4294967295:0`",
        ),
        (
            "[[path]]\npath = \"/s\"\nsymlink = \"/x\"\nmode = \"0755\"\n",
            ":4:8: [[path]] mode: a symlink has no mode of its own",
        ),
        (
            "[[path]]\npath = \"/data/cache/\"\n",
            ":2:8: [[path]] `/data/cache` is declared twice (first at ",
        ),
        (
            "[[path]]\npath = \"/usr/local/bin/echo/x\"\n",
            ":2:8: [[path]] `/usr/local/bin/echo/x` is beneath `/usr/local/bin/echo`, which is declared a symlink",
        ),
        (
            "[[path]]\npath = \"data\"\n",
            ":2:8: [[path]] path: expected an absolute path in the image",
        ),
        (
            "[[path]]\npath = \"/d\"\nmode = \"0955\"\n",
            ":3:8: [[path]] mode: invalid `0955`: expected octal permission bits",
        ),
        (
            "[[path]]\npath = \"/d\"\nowner = \"app\"\n",
            ":3:9: [[path]] owner: invalid `app`: expected numeric `uid:gid`",
        ),
        (
            "[[path]]\nsymlink = \"/d\"\n",
            ": [[path]]: missing `path`",
        ),
    ];
    for (extra, want) in cases {
        let t = tempdir();
        let r = project(t.path(), &busybox, "");
        let base_lines = fs::read_to_string(&r).unwrap().lines().count();
        let text = format!("{}{extra}", fs::read_to_string(&r).unwrap());
        fs::write(&r, text).unwrap();
        let out = t.path().join("img");
        let o = run(ocibuild().args(["build", "-o"]).arg(&out).arg(&r));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{extra}");
        // Lines are counted from the case's first line.
        let want = match want.strip_prefix(':').and_then(|w| w.split_once(':')) {
            Some((line, rest)) if line.chars().all(|c| c.is_ascii_digit()) => {
                format!(":{}:{rest}", base_lines + line.parse::<usize>().unwrap())
            }
            _ => want.to_string(),
        };
        assert!(err.contains(&want), "{extra}: want {want:?} in: {err}");
        assert!(!out.exists(), "{extra}: output written");
    }
}
