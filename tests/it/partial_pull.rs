//! Partial pulls (issue 38): `compression = "zstd:chunked"` and `"estargz"` layers, pulled by
//! the podman here (4.3.1, containers/storage 1.43) with partial pulls turned on in a private
//! storage.conf, from Debian's docker-registry, whose log says what each request served.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::registry::{auth_file, start_registry, PASS};
use crate::common::{self, ocibuild, run, run_ok, sha256_file, stderr, stdout, tempdir};

const FILES: u64 = 40;
const MIB: u64 = 1 << 20;
/// The file v2 changes.
const CHANGED: u64 = 17;

/// The data directory: `FILES` files of 1 MiB of seeded pseudo-random bytes; the changed file's
/// seed is `changed`.
pub(crate) fn write_data(dir: &Path, base_seed: u64, changed: u64) {
    fs_err::create_dir_all(dir).unwrap();
    for i in 0..FILES {
        let seed = if i == CHANGED { changed } else { base_seed + i };
        common::write_pseudo_random(&dir.join(format!("f{i:02}")), seed, MIB);
    }
}

pub(crate) fn recipe(dir: &Path, compression: &str, src: &Path) -> PathBuf {
    let r = dir.join(format!("{}.toml", compression.replace(':', "-")));
    fs_err::write(
        &r,
        format!(
            "[image]\nname = \"pp\"\ntag = \"v\"\ncompression = \"{compression}\"\n\
             source-date-epoch = 1700000000\n\n[[layer]]\nname = \"data\"\nsrc = \"{}\"\n\
             dest = \"/data\"\n",
            src.display()
        ),
    )
    .unwrap();
    r
}

/// `build --json` of `recipe` into `out`, with extra arguments (`-j N`).
pub(crate) fn build(cmd: &mut Command, recipe: &Path, out: &Path) -> Value {
    let o = run_ok(cmd.args(["build", "--json", "-o"]).arg(out).arg(recipe));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The layout's one image manifest.
pub(crate) fn manifest(out: &Path) -> Value {
    let index: Value =
        serde_json::from_slice(&fs_err::read(out.join("index.json")).unwrap()).unwrap();
    let d = index["manifests"][0]["digest"].as_str().unwrap();
    blob_json(out, d)
}

pub(crate) fn blob_path(out: &Path, digest: &str) -> PathBuf {
    out.join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
}

pub(crate) fn blob_json(out: &Path, digest: &str) -> Value {
    serde_json::from_slice(&fs_err::read(blob_path(out, digest)).unwrap()).unwrap()
}

/// A podman with its own storage (graph root and run root in a temporary directory) and
/// partial pulls turned on, as docs/partial-pulls.md says.
pub(crate) struct Podman {
    dir: tempfile::TempDir,
    auth: PathBuf,
}

impl Podman {
    pub(crate) fn new(auth: &Path) -> Podman {
        let dir = tempdir();
        let conf = format!(
            "[storage]\ndriver = \"overlay\"\ngraphroot = \"{0}/graph\"\nrunroot = \"{0}/run\"\n\n\
             [storage.options]\npull_options = {{enable_partial_images = \"true\", \
             use_hard_links = \"false\", ostree_repos = \"\"}}\n",
            dir.path().display()
        );
        fs_err::write(dir.path().join("storage.conf"), conf).unwrap();
        Podman {
            dir,
            auth: auth.to_path_buf(),
        }
    }

    pub(crate) fn cmd(&self) -> Command {
        let mut c = Command::new("podman");
        c.env(
            "CONTAINERS_STORAGE_CONF",
            self.dir.path().join("storage.conf"),
        );
        c
    }

    /// `podman --log-level debug pull`, which must succeed; its stderr.
    pub(crate) fn pull(&self, image: &str) -> String {
        let o = run(self
            .cmd()
            .args([
                "--log-level",
                "debug",
                "pull",
                "--tls-verify=false",
                "--authfile",
            ])
            .arg(&self.auth)
            .arg(image));
        common::assert_success(&o, &format!("podman pull {image}"));
        stderr(&o)
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        let _ = run(self.cmd().args(["rmi", "--all", "--force"]));
    }
}

/// Bytes the registry served for GET requests of `digest`'s blob in `log` (its "response
/// completed" lines), and how many requests.
pub(crate) fn served(log: &str, digest: &str) -> (u64, usize) {
    let uri = format!("/blobs/{digest}\"");
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("response completed") && l.contains("http.request.method=GET"))
        .filter(|l| l.contains(&uri))
        .collect();
    let bytes = lines
        .iter()
        .map(|l| {
            let v = l.split("http.response.written=").nth(1).unwrap_or("0");
            let n: String = v.chars().take_while(char::is_ascii_digit).collect();
            n.parse::<u64>().unwrap()
        })
        .sum();
    (bytes, lines.len())
}

pub(crate) fn tools() -> bool {
    common::require_tools_all(&["podman", "docker-registry"])
}

/// v1 pushed and pulled, then v2 (one file of 40 changed) pulled: podman fetches the changed
/// file's range and the TOC only, and the files it assembled are the source's.
fn second_version_fetches_only_the_changed_file(compression: &str, base_seed: u64) {
    let reg = start_registry(None);
    let t = tempdir();
    let auth = auth_file(t.path(), &reg.addr, PASS);
    let data = t.path().join("data");
    write_data(&data, base_seed, base_seed + CHANGED);
    let r = recipe(t.path(), compression, &data);
    let repo = format!("{}/pp/{}", reg.addr, compression.replace(':', "-"));
    let push = |out: &Path, tag: &str| {
        run_ok(
            ocibuild()
                .env("REGISTRY_AUTH_FILE", &auth)
                .args(["push", "-q"])
                .arg(format!("{}:v", out.display()))
                .arg(format!("{repo}:{tag}")),
        );
    };
    let v1 = t.path().join("v1");
    build(&mut ocibuild(), &r, &v1);
    push(&v1, "1");
    let podman = Podman::new(&auth);
    let first = podman.pull(&format!("{repo}:1"));
    assert!(first.contains("Retrieved partial blob"), "{first}");

    write_data(&data, base_seed, base_seed + 1000);
    let v2 = t.path().join("v2");
    let doc = build(&mut ocibuild(), &r, &v2);
    push(&v2, "2");
    let layer = &manifest(&v2)["layers"][0];
    let digest = layer["digest"].as_str().unwrap();
    let size = layer["size"].as_u64().unwrap();
    // What `plan --against` the first version says a partial pull fetches (the old TOC read
    // with range requests, the new one from the store).
    run_ok(ocibuild().args(["lock", "-q"]).arg(&r));
    let plan = run_ok(
        ocibuild()
            .env("REGISTRY_AUTH_FILE", &auth)
            .args(["plan", "--json", "--against", &format!("{repo}:1")])
            .arg(&r),
    );
    let plan: Value = serde_json::from_slice(&plan.stdout).unwrap();
    let estimate = &plan["layers"][0]["partialPull"];
    assert_eq!(
        (&estimate["filesFetched"], &estimate["files"]),
        (&Value::from(1), &Value::from(FILES)),
        "{plan:#}"
    );
    let estimated = estimate["fetchBytes"].as_u64().unwrap();
    let mark = reg.log_text().len();
    let second = podman.pull(&format!("{repo}:2"));
    let missing = format!("Missing {MIB} bytes out of {} (2.50 %)", FILES * MIB);
    assert!(second.contains(&missing), "no `{missing}` in:\n{second}");
    let (bytes, requests) = served(&reg.log_text()[mark..], digest);
    println!(
        "{compression}: v2 pull fetched {bytes} of the layer's {size} bytes ({:.2} %) in \
         {requests} requests; podman: {missing}",
        bytes as f64 * 100.0 / size as f64
    );
    assert!(
        bytes >= MIB,
        "the changed file ({MIB} random bytes) was fetched: {bytes}"
    );
    assert!(bytes * 20 <= size, "at most 5 % of {size}: {bytes}");
    assert_eq!(doc["layers"][0]["digest"], digest);
    // The estimate is the TOC and the file's range; the registry adds a multipart envelope.
    println!("{compression}: plan --against estimated {estimated} bytes");
    assert!(
        estimated <= bytes && bytes - estimated <= bytes / 100,
        "estimate {estimated}, fetched {bytes}"
    );

    // Every file as the source has it.
    let image = format!("{repo}:2");
    let mounted = stdout(&run_ok(podman.cmd().args(["image", "mount", &image])));
    let root = Path::new(mounted.trim());
    for i in 0..FILES {
        let name = format!("f{i:02}");
        assert_eq!(
            sha256_file(&root.join("data").join(&name)).unwrap(),
            sha256_file(&data.join(&name)).unwrap(),
            "{compression}: /data/{name}"
        );
    }
    run_ok(podman.cmd().args(["image", "unmount", &image]));

    // What breaks: containers/storage 1.43 cannot export a partially pulled layer.
    let version = stdout(&run_ok(Command::new("podman").args(["--version"])));
    let save = run(podman
        .cmd()
        .args(["save", "-o"])
        .arg(t.path().join("saved.tar"))
        .arg(&image));
    println!(
        "{compression}: `podman save` after the partial pull ({}): {}",
        version.trim(),
        if save.status.success() {
            "succeeded".to_string()
        } else {
            let err = stderr(&save);
            err.trim().lines().last().unwrap_or_default().to_string()
        }
    );
    if version.contains(" 4.3.1") {
        assert!(!save.status.success() && stderr(&save).contains("write too long"));
    }
}

#[test]
fn zstd_chunked_second_version_fetches_only_the_changed_file() {
    if !tools() {
        return;
    }
    second_version_fetches_only_the_changed_file("zstd:chunked", 0x3800);
}

#[test]
fn estargz_second_version_fetches_only_the_changed_file() {
    if !tools() {
        return;
    }
    second_version_fetches_only_the_changed_file("estargz", 0x3900);
}

/// Files of several shapes: chunked by the rolling checksum, cut into eStargz's 4 MiB chunks,
/// compressible, empty, and a symlink.
pub(crate) fn mixed_data(dir: &Path) {
    fs_err::create_dir_all(dir.join("sub")).unwrap();
    common::write_pseudo_random(&dir.join("a.bin"), 1, 3 * MIB / 2);
    common::write_text_like(&dir.join("sub/big.txt"), 2, 9 * MIB);
    common::write_text_like(&dir.join("sub/small.txt"), 3, 3000);
    fs_err::write(dir.join("empty"), b"").unwrap();
    fs_err::os::unix::fs::symlink("a.bin", dir.join("link")).unwrap();
}

#[test]
fn chunked_layers_are_the_same_bytes_for_every_build_and_thread_count() {
    let t = tempdir();
    let data = t.path().join("data");
    mixed_data(&data);
    for compression in ["zstd:chunked", "estargz"] {
        let r = recipe(t.path(), compression, &data);
        let tag = compression.replace(':', "-");
        let mut builds = Vec::new();
        for jobs in ["1", "3"] {
            let out = t.path().join(format!("{tag}-{jobs}"));
            let doc = build(
                ocibuild()
                    .env(
                        "OCIBUILD_CACHE",
                        t.path().join(format!("cache-{tag}-{jobs}")),
                    )
                    .args(["-j", jobs]),
                &r,
                &out,
            );
            assert_eq!(doc["layers"][0]["cached"], false);
            builds.push((doc, manifest(&out), out));
        }
        let (a, b) = (&builds[0], &builds[1]);
        assert_eq!(a.0["manifest"], b.0["manifest"], "{compression}");
        let layer = &a.1["layers"][0];
        assert_eq!(layer, &b.1["layers"][0]);
        assert!(
            fs_err::read(blob_path(&a.2, layer["digest"].as_str().unwrap())).unwrap()
                == fs_err::read(blob_path(&b.2, layer["digest"].as_str().unwrap())).unwrap()
        );
        let notes = layer["annotations"].as_object().unwrap();
        let keys: Vec<&str> = notes.keys().map(String::as_str).collect();
        if compression == "estargz" {
            assert_eq!(
                layer["mediaType"],
                "application/vnd.oci.image.layer.v1.tar+gzip"
            );
            assert_eq!(
                keys,
                [
                    "containerd.io/snapshot/stargz/toc.digest",
                    "dev.ocibuild.layer",
                    "io.containers.estargz.uncompressed-size",
                ]
            );
            assert_eq!(
                notes["io.containers.estargz.uncompressed-size"],
                a.0["layers"][0]["uncompressedSize"]
                    .as_u64()
                    .unwrap()
                    .to_string()
            );
        } else {
            assert_eq!(
                layer["mediaType"],
                "application/vnd.oci.image.layer.v1.tar+zstd"
            );
            assert_eq!(
                keys,
                [
                    "dev.ocibuild.layer",
                    "io.containers.zstd-chunked.manifest-checksum",
                    "io.containers.zstd-chunked.manifest-position",
                    "io.github.containers.zstd-chunked.manifest-checksum",
                    "io.github.containers.zstd-chunked.manifest-position",
                    "io.github.containers.zstd-chunked.tarsplit-position",
                ]
            );
        }
        // A cache hit gives the same manifest, annotations included.
        let again = build(
            ocibuild().env("OCIBUILD_CACHE", t.path().join(format!("cache-{tag}-1"))),
            &r,
            &t.path().join(format!("{tag}-again")),
        );
        assert_eq!(again["layers"][0]["cached"], true);
        assert_eq!(again["manifest"], a.0["manifest"]);
    }
}

/// The layer cache shared through a registry (`--cache-repo`) keeps the TOC annotations: a
/// second machine's build takes the layer from there and writes the same manifest; and
/// `verify` rebuilds it bit for bit.
#[test]
fn cache_repo_and_verify_keep_the_chunked_layers() {
    if !common::require_tools_all(&["docker-registry"]) {
        return;
    }
    let reg = start_registry(None);
    let t = tempdir();
    let auth = auth_file(t.path(), &reg.addr, PASS);
    let data = t.path().join("data");
    mixed_data(&data);
    for compression in ["zstd:chunked", "estargz"] {
        let r = recipe(t.path(), compression, &data);
        let tag = compression.replace(':', "-");
        let cache_repo = format!("{}/cache/{tag}", reg.addr);
        let with_repo = |machine: &str, out: &Path| {
            let o = run_ok(
                ocibuild()
                    .env("REGISTRY_AUTH_FILE", &auth)
                    .env(
                        "OCIBUILD_CACHE",
                        t.path().join(format!("cache-{machine}-{tag}")),
                    )
                    .args(["build", "--json", "--cache-repo", &cache_repo, "-o"])
                    .arg(out)
                    .arg(&r),
            );
            serde_json::from_slice::<Value>(&o.stdout).unwrap()
        };
        let first = with_repo("one", &t.path().join(format!("one-{tag}")));
        let second_out = t.path().join(format!("two-{tag}"));
        let second = with_repo("two", &second_out);
        assert_eq!(first["layers"][0]["cached"], false);
        assert_eq!(second["layers"][0]["cached"], true, "{second:#}");
        assert_eq!(first["manifest"], second["manifest"], "{compression}");
        let o = run_ok(
            ocibuild()
                .env("OCIBUILD_CACHE", t.path().join(format!("verify-{tag}")))
                .args(["verify", "--against"])
                .arg(&second_out)
                .arg(&r),
        );
        assert!(stdout(&o).contains("bit-identical"), "{}", stdout(&o));
    }
}

/// `diff` reads both formats down to files: the one file v2 changed (and, for eStargz, its TOC
/// entry, which is a file of the layer).
#[test]
fn diff_reads_chunked_layers() {
    let t = tempdir();
    let data = t.path().join("data");
    for compression in ["zstd:chunked", "estargz"] {
        let r = recipe(t.path(), compression, &data);
        let tag = compression.replace(':', "-");
        let (a, b) = (
            t.path().join(format!("{tag}-a")),
            t.path().join(format!("{tag}-b")),
        );
        write_data(&data, 5, 5 + CHANGED);
        build(&mut ocibuild(), &r, &a);
        write_data(&data, 5, 99);
        build(&mut ocibuild(), &r, &b);
        let o = run(ocibuild()
            .arg("diff")
            .arg(format!("{}:v", a.display()))
            .arg(format!("{}:v", b.display())));
        assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
        let text = stdout(&o);
        let changed: Vec<&str> = text
            .lines()
            .filter(|l| l.contains(": ~ "))
            .map(|l| l.split(": ~ ").nth(1).unwrap().split(':').next().unwrap())
            .collect::<Vec<_>>();
        let want: &[&str] = if compression == "estargz" {
            &["data/f17", "stargz.index.json"]
        } else {
            &["data/f17"]
        };
        assert_eq!(changed, want, "{}", stdout(&o));
    }
}

/// A zstd:chunked image runs under podman, and skopeo copies it from a registry like any other
/// image, its layer and annotations unchanged.
#[test]
fn zstd_chunked_image_runs_under_podman_and_copies_with_skopeo() {
    if !common::require_tools_all(&["podman", "skopeo", "docker-registry"]) {
        return;
    }
    let Some(busybox) = common::require_static_busybox() else {
        return;
    };
    let reg = start_registry(None);
    let t = tempdir();
    let auth = auth_file(t.path(), &reg.addr, PASS);
    let r = t.path().join("bb.toml");
    fs_err::write(
        &r,
        format!(
            "[image]\nname = \"bb\"\ntag = \"v\"\ncompression = \"zstd:chunked\"\n\n\
             [[layer]]\nname = \"busybox\"\nsrc = \"{}\"\ndest = \"/bin/busybox\"\n",
            busybox.display()
        ),
    )
    .unwrap();
    let out = t.path().join("bb");
    build(&mut ocibuild(), &r, &out);
    let o = common::podman_run(
        &out,
        "v",
        &["/bin/busybox", "echo", "hello from zstd:chunked"],
    );
    common::assert_success(&o, "podman run");
    assert_eq!(stdout(&o).trim(), "hello from zstd:chunked");

    let remote = format!("{}/bb/chunked:v", reg.addr);
    run_ok(
        ocibuild()
            .env("REGISTRY_AUTH_FILE", &auth)
            .args(["push", "-q"])
            .arg(format!("{}:v", out.display()))
            .arg(&remote),
    );
    let copy = t.path().join("copy");
    run_ok(
        Command::new("skopeo")
            .args(["copy", "--quiet", "--src-tls-verify=false", "--authfile"])
            .arg(&auth)
            .arg(format!("docker://{remote}"))
            .arg(format!("oci:{}:v", copy.display())),
    );
    let (ours, theirs) = (manifest(&out), manifest(&copy));
    assert_eq!(
        ours["layers"], theirs["layers"],
        "same layer, same annotations"
    );
    let d = ours["layers"][0]["digest"].as_str().unwrap();
    assert!(
        fs_err::read(blob_path(&out, d)).unwrap() == fs_err::read(blob_path(&copy, d)).unwrap()
    );
}

/// An eStargz image with a wheel layer (tests/it/wheel_recipe.rs's fixture: CPython from the
/// generated apt repository, click and fastlib from a pylock.toml): the wheel's large member
/// keeps its own deflate blocks in the layer, and podman pulls every layer partially into the
/// same files the layers hold.
#[test]
fn estargz_wheel_image_keeps_the_wheels_deflate_blocks_and_pulls_partially() {
    use std::io::Read as _;
    if !tools() {
        return;
    }
    let f = crate::aptfix::fixture(&crate::aptfix::python_universe(), false);
    let t = tempdir();
    let w = crate::wheel_recipe::wheels(t.path());
    crate::wheel_recipe::pylock(t.path(), &w, &|_| true);
    let r = crate::wheel_recipe::recipe(t.path(), &f, "lock = \"pylock.toml\"");
    let text = fs_err::read_to_string(&r).unwrap().replacen(
        "platform = \"linux/amd64\"\n",
        // Level 1: the rest is compressed at 1, so the wheel's own blocks (zlib's default level)
        // are told apart from a recompression.
        "platform = \"linux/amd64\"\ncompression = \"estargz\"\ncompression-level = 1\n",
        1,
    );
    fs_err::write(&r, text).unwrap();
    let out = t.path().join("img");
    build(&mut ocibuild(), &r, &out);
    let m = manifest(&out);
    let wheels = m["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| {
            l["annotations"]["dev.ocibuild.layer"]
                .as_str()
                .unwrap()
                .starts_with("wheels")
        })
        .unwrap();
    let blob = fs_err::read(blob_path(&out, wheels["digest"].as_str().unwrap())).unwrap();

    // fastlib's _core.so: its first deflate bytes are in the layer as the wheel has them.
    let whl = w
        .dir
        .join("fastlib-1.0-cp312-cp312-manylinux_2_28_x86_64.whl");
    let mut zip = zip::ZipArchive::new(fs_err::File::open(&whl).unwrap()).unwrap();
    let mut raw = Vec::new();
    zip.by_name_raw(b"fastlib/_core.so")
        .unwrap()
        .read_to_end(&mut raw)
        .unwrap();
    // (From its second byte: the first holds the last-block bit, which splicing clears.)
    let head = &raw[1..raw.len().min(2000)];
    assert!(
        head.len() >= 1000,
        "the member is deflated: {} bytes",
        raw.len()
    );
    assert!(
        blob.windows(head.len()).any(|win| win == head),
        "the wheel's deflate blocks are in the eStargz layer"
    );

    // Every layer pulled partially; every regular file as the layers have it.
    let reg = start_registry(None);
    let auth = auth_file(t.path(), &reg.addr, PASS);
    let image = format!("{}/wheels/estargz:1", reg.addr);
    run_ok(
        ocibuild()
            .env("REGISTRY_AUTH_FILE", &auth)
            .args(["push", "-q"])
            .arg(format!("oci:{}", out.display()))
            .arg(&image),
    );
    let podman = Podman::new(&auth);
    let said = podman.pull(&image);
    let layers = m["layers"].as_array().unwrap().len();
    assert_eq!(
        said.matches("Retrieved partial blob").count(),
        layers,
        "{said}"
    );
    let mounted = stdout(&run_ok(podman.cmd().args(["image", "mount", &image])));
    let root = Path::new(mounted.trim());
    let mut checked = 0;
    for l in m["layers"].as_array().unwrap() {
        let gz = fs_err::read(blob_path(&out, l["digest"].as_str().unwrap())).unwrap();
        let mut ar = tar::Archive::new(flate2::read::MultiGzDecoder::new(&gz[..]));
        for e in ar.entries().unwrap() {
            let mut e = e.unwrap();
            let path = e.path().unwrap().into_owned();
            if e.header().entry_type() != tar::EntryType::Regular
                || path == Path::new("stargz.index.json")
            {
                continue;
            }
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            let got = fs_err::read(root.join(&path)).unwrap();
            assert!(got == data, "/{}", path.display());
            checked += 1;
        }
    }
    assert!(checked > 10, "{checked} files");
    println!("estargz wheel image: {layers} layers pulled partially, {checked} files checked");
    run_ok(podman.cmd().args(["image", "unmount", &image]));
}
