//! Declared sizes and special files (issue 31, cases 4 and 10), offline, with generated inputs:
//! a tar record declaring 1.5 GB is refused before it is read, in little memory; small input
//! files that are FIFOs or devices are refused at once; `-o`-like outputs refuse symlinks.

use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use fs_err as fs;
use serde_json::json;
use sha2::Digest as _;

use crate::common;

/// What a PAX record declares in the hostile layer: 1.5 GB.
const DECLARED: u64 = 1_500_000_000;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn hex(d: impl AsRef<[u8]>) -> String {
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `bytes` as a blob of `layout`; its digest.
fn put_blob(layout: &Path, bytes: &[u8]) -> String {
    let d = common::sha256_bytes(bytes);
    let dir = layout.join("blobs/sha256");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(d.trim_start_matches("sha256:")), bytes).unwrap();
    d
}

/// An OCI layout at `layout`, tag `t`, of one zstd layer: a PAX extended header declaring
/// [`DECLARED`] bytes, all of them there (zeros, so the layer is small), then `etc/passwd`.
/// A reader that takes the record whole needs 1.5 GB.
fn hostile_layout(layout: &Path) -> String {
    let mut tar_hash = sha2::Sha256::new();
    let mut z = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
    let mut put = |b: &[u8]| {
        tar_hash.update(b);
        z.write_all(b).unwrap();
    };
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(tar::EntryType::XHeader);
    h.set_path("PaxHeaders/passwd").unwrap();
    h.set_size(DECLARED);
    h.set_mode(0o644);
    h.set_cksum();
    put(h.as_bytes());
    let zeros = vec![0u8; 1 << 20];
    let mut left = DECLARED;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        put(&zeros[..n]);
        left -= n as u64;
    }
    put(&zeros[..(512 - (DECLARED % 512) as usize) % 512]);
    let passwd = b"root:x:0:0:root:/root:/bin/sh\n";
    let mut h = tar::Header::new_ustar();
    h.set_path("etc/passwd").unwrap();
    h.set_size(passwd.len() as u64);
    h.set_mode(0o644);
    h.set_cksum();
    put(h.as_bytes());
    put(passwd);
    put(&zeros[..512 - passwd.len() + 1024]);
    let layer = z.finish().unwrap();
    let diff_id = format!("sha256:{}", hex(tar_hash.finalize()));
    fs::create_dir_all(layout).unwrap();
    fs::write(
        layout.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    let layer_digest = put_blob(layout, &layer);
    let config = serde_json::to_vec(&json!({
        "architecture": "amd64",
        "os": "linux",
        "config": {"Env": ["PATH=/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }))
    .unwrap();
    let config_digest = put_blob(layout, &config);
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": config_digest, "size": config.len()},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+zstd",
                    "digest": layer_digest, "size": layer.len()}],
    }))
    .unwrap();
    let manifest_digest = put_blob(layout, &manifest);
    fs::write(
        layout.join("index.json"),
        serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "digest": manifest_digest, "size": manifest.len(),
                           "annotations": {"org.opencontainers.image.ref.name": "t"}}],
        }))
        .unwrap(),
    )
    .unwrap();
    layer_digest
}

/// `cmd` run under `/usr/bin/time`: its output and its peak resident memory in KiB (None when
/// GNU time is missing: the command then runs plainly).
fn measured(cmd: &Command, scratch: &Path) -> (Output, Option<u64>) {
    let time = Path::new("/usr/bin/time");
    let rss = scratch.join("rss.txt");
    let mut c = if time.exists() {
        let mut c = Command::new(time);
        c.arg("-f").arg("%M").arg("-o").arg(&rss);
        c.arg(cmd.get_program());
        c
    } else {
        Command::new(cmd.get_program())
    };
    c.args(cmd.get_args());
    if let Some(d) = cmd.get_current_dir() {
        c.current_dir(d);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    let out = common::run_timeout(&mut c, Duration::from_secs(300));
    let kib = fs::read_to_string(&rss)
        .ok()
        .and_then(|s| s.lines().last().and_then(|l| l.trim().parse().ok()));
    (out, kib)
}

/// Peak memory allowed for a command that meets the hostile layer: far below the 1.5 GB a
/// whole read takes.
const MAX_RSS_KIB: u64 = 300 * 1024;

fn assert_refused(out: &Output, rss: Option<u64>, layer: &str, what: &str) {
    let err = stderr(out);
    assert!(!out.status.success(), "{what} succeeded: {err}");
    let expected = format!(
        "the tar member at offset 0 is a PAX extended header that declares {DECLARED} bytes \
         (at most 1048576 are accepted)"
    );
    assert!(err.contains(&expected), "{what}: {err}");
    let short = layer.trim_start_matches("sha256:");
    assert!(err.contains(short), "{what} does not name the layer: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{what}: {err}");
    if let Some(kib) = rss {
        eprintln!("{what}: peak resident memory {kib} KiB");
        assert!(kib < MAX_RSS_KIB, "{what} peaked at {kib} KiB");
    } else {
        common::notice("no /usr/bin/time: peak memory not measured");
    }
}

/// A directory outside the build's own, and a check that it is as it was.
fn outside(root: &Path) -> PathBuf {
    let dir = root.join("outside");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("keep"), b"keep").unwrap();
    dir
}

fn untouched(dir: &Path) {
    let names: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["keep"], "{} changed", dir.display());
    assert_eq!(fs::read(dir.join("keep")).unwrap(), b"keep");
}

#[test]
fn a_pax_record_declaring_gigabytes_is_refused_in_little_memory() {
    let tmp = common::tempdir();
    let dir = tmp.path();
    let keep = outside(dir);
    let bad = dir.join("bad.oci");
    let layer = hostile_layout(&bad);
    assert!(
        fs::metadata(
            bad.join("blobs/sha256")
                .join(layer.trim_start_matches("sha256:"))
        )
        .unwrap()
        .len()
            < 8 << 20
    );
    // A small good image to compare with, and its recipe to verify.
    fs::create_dir_all(dir.join("app")).unwrap();
    fs::write(dir.join("app/x"), b"x").unwrap();
    let recipe = dir.join("app.toml");
    fs::write(
        &recipe,
        "[image]\nname = \"localhost/app\"\ntag = \"t\"\n\n[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n",
    )
    .unwrap();
    let good = dir.join("good.oci");
    common::run_ok(
        common::ocibuild()
            .arg("--quiet")
            .arg("build")
            .arg(&recipe)
            .arg("-o")
            .arg(&good),
    );

    let mut diff = common::ocibuild();
    diff.arg("diff")
        .arg(&good)
        .arg(format!("oci:{}:t", bad.display()));
    let (out, rss) = measured(&diff, dir);
    assert_refused(&out, rss, &layer, "diff");

    let mut verify = common::ocibuild();
    verify
        .arg("verify")
        .arg(&recipe)
        .arg("--against")
        .arg(format!("oci:{}:t", bad.display()));
    let (out, rss) = measured(&verify, dir);
    assert_refused(&out, rss, &layer, "verify --against");
    untouched(&keep);
}

#[test]
fn a_build_on_a_base_with_a_pax_record_declaring_gigabytes_is_refused_in_little_memory() {
    if !(common::require_tool("docker-registry") && common::require_tool("skopeo")) {
        return;
    }
    let tmp = common::tempdir();
    let dir = tmp.path();
    let keep = outside(dir);
    let bad = dir.join("bad.oci");
    let layer = hostile_layout(&bad);
    let reg = common::registry::start_registry(None);
    let addr = reg.addr.clone();
    common::registry::push_layout(&bad, "t", &addr, "test/hostile:1");
    fs::create_dir_all(dir.join("app")).unwrap();
    fs::write(dir.join("app/x"), b"x").unwrap();
    let recipe = dir.join("app.toml");
    // Accounts on a base read the base's /etc/passwd: its layers are read.
    fs::write(
        &recipe,
        format!(
            "[image]\nname = \"localhost/app\"\ntag = \"a\"\n[base]\nimage = \"{addr}/test/hostile:1\"\n\
             [[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n\
             [[accounts.user]]\nname = \"app\"\nuid = 1001\n[config]\nuser = \"app\"\n"
        ),
    )
    .unwrap();
    let registries = dir.join("registries.toml");
    fs::write(
        &registries,
        format!("[[registry]]\nname = \"{addr}\"\ninsecure-http = true\n"),
    )
    .unwrap();
    let auth = common::registry::auth_file(dir, &addr, common::registry::PASS);
    let out_dir = dir.join("out");
    let mut build = common::ocibuild();
    build
        .arg("--registries")
        .arg(&registries)
        .env("REGISTRY_AUTH_FILE", &auth)
        .arg("--quiet")
        .arg("build")
        .arg(&recipe)
        .arg("-o")
        .arg(&out_dir);
    let (out, rss) = measured(&build, dir);
    assert_refused(&out, rss, &layer, "build");
    assert!(
        !out_dir.exists(),
        "a failed build left {}",
        out_dir.display()
    );
    untouched(&keep);
}

/// A FIFO (no writer: opening it for reading blocks) and a symlink to `/dev/zero` (never ends)
/// in `dir`, each with the kind a refusal names.
fn special_inputs(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    let fifo = dir.join("fifo");
    common::run_ok(Command::new("mkfifo").arg(&fifo));
    let zero = dir.join("zero");
    fs::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    vec![(fifo, "a FIFO"), (zero, "a character device")]
}

/// A generous bound: a regression blocks (FIFO) or reads for ever (`/dev/zero`) and is killed.
const QUICK: Duration = Duration::from_secs(60);

fn assert_one_line(out: &Output, what: &str, needles: &[&str]) {
    let err = stderr(out);
    assert!(!out.status.success(), "{what} succeeded: {err}");
    for n in needles {
        assert!(err.contains(n), "{what}: `{n}` not in: {err}");
    }
    assert_eq!(err.trim_end().lines().count(), 1, "{what}: {err}");
}

#[test]
fn ignore_key_and_passphrase_files_that_are_fifos_or_devices_are_refused_at_once() {
    let tmp = common::tempdir();
    let dir = tmp.path();
    let keep = outside(dir);
    fs::create_dir_all(dir.join("app")).unwrap();
    fs::write(dir.join("app/x"), b"x").unwrap();
    let specials = special_inputs(dir);
    for (path, kind) in &specials {
        let name = path.file_name().unwrap().to_str().unwrap();
        let recipe = dir.join(format!("{name}.toml"));
        fs::write(
            &recipe,
            format!(
                "[image]\nname = \"localhost/app\"\ntag = \"t\"\n\n[[layer]]\nname = \"app\"\n\
                 src = \"app\"\ndest = \"/app\"\nignore-file = \"{name}\"\n"
            ),
        )
        .unwrap();
        let out_dir = dir.join(format!("{name}.oci"));
        let out = common::run_timeout(
            common::ocibuild()
                .arg("--quiet")
                .arg("build")
                .arg(&recipe)
                .arg("-o")
                .arg(&out_dir),
            QUICK,
        );
        // Below the recipe's directory an ignore file is never read through a symlink (the
        // walk-race guard), so the link to /dev/zero is refused as a link.
        let said = if path.is_symlink() {
            "is a symbolic link, never followed here".to_string()
        } else {
            format!("is {kind}, not a regular file")
        };
        assert_one_line(
            &out,
            "ignore-file",
            &[&format!("ignore file `{name}`"), &said],
        );
        assert!(!out_dir.exists());

        // Nothing listens on port 9: the key is read (and refused) before any connection.
        let shown = format!("`{}` is {kind}, not a regular file", path.display());
        let out = common::run_timeout(
            common::ocibuild()
                .args(["sign", "127.0.0.1:9/x/y:1", "--key"])
                .arg(path),
            QUICK,
        );
        assert_one_line(&out, "sign --key", &[&shown]);
        let out = common::run_timeout(
            common::ocibuild()
                .args(["sign", "127.0.0.1:9/x/y:1", "--key"])
                .arg(dir.join("no-such-key"))
                .arg("--passphrase-file")
                .arg(path),
            QUICK,
        );
        assert_one_line(&out, "sign --passphrase-file", &[&shown]);
        let out = common::run_timeout(
            common::ocibuild()
                .args(["verify-signature", "127.0.0.1:9/x/y:1", "--key"])
                .arg(path),
            QUICK,
        );
        assert_one_line(&out, "verify-signature --key", &[&shown]);
    }
    untouched(&keep);
}

#[test]
fn sbom_and_provenance_outputs_refuse_symlinks_and_special_files() {
    let tmp = common::tempdir();
    let dir = tmp.path();
    let keep = outside(dir);
    fs::create_dir_all(dir.join("app")).unwrap();
    fs::write(dir.join("app/x"), b"x").unwrap();
    let recipe = dir.join("app.toml");
    fs::write(
        &recipe,
        "[image]\nname = \"localhost/app\"\ntag = \"t\"\n\n[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n",
    )
    .unwrap();
    let image = dir.join("app.oci");
    common::run_ok(
        common::ocibuild()
            .arg("--quiet")
            .arg("build")
            .arg(&recipe)
            .arg("-o")
            .arg(&image),
    );
    let link = dir.join("link.json");
    fs::os::unix::fs::symlink(keep.join("keep"), &link).unwrap();
    let dangling = dir.join("dangling.json");
    fs::os::unix::fs::symlink(keep.join("new"), &dangling).unwrap();
    let fifo = dir.join("fifo.json");
    common::run_ok(Command::new("mkfifo").arg(&fifo));
    for doc in ["sbom", "provenance"] {
        for (path, kind) in [
            (&link, "a symbolic link"),
            (&dangling, "a symbolic link"),
            (&fifo, "a FIFO"),
            (&Path::new("/dev/null").to_path_buf(), "a device"),
        ] {
            let out = common::run_timeout(
                common::ocibuild()
                    .arg(doc)
                    .arg(&recipe)
                    .arg("--image")
                    .arg(&image)
                    .arg("-o")
                    .arg(path),
                QUICK,
            );
            assert_one_line(
                &out,
                &format!("{doc} -o {}", path.display()),
                &[&format!(
                    "refusing to write {}: it is {kind}",
                    path.display()
                )],
            );
        }
        // A new path, then a regular file replaced whole: through a rename, nothing left over.
        let file = dir.join(format!("{doc}.json"));
        for _ in 0..2 {
            let out = common::run_timeout(
                common::ocibuild()
                    .arg(doc)
                    .arg(&recipe)
                    .arg("--image")
                    .arg(&image)
                    .arg("-o")
                    .arg(&file),
                QUICK,
            );
            common::assert_success(&out, doc);
            let v: serde_json::Value = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
            assert!(v.is_object());
        }
    }
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    let mut names: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "app",
            "app.oci",
            "app.toml",
            "dangling.json",
            "fifo.json",
            "link.json",
            "outside",
            "provenance.json",
            "sbom.json"
        ]
    );
    untouched(&keep);
}
