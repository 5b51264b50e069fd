//! `ocibuild import` end to end: Dockerfiles written here are imported, locked and built
//! against a local registry (Debian's docker-registry on 127.0.0.1, htpasswd auth) whose
//! busybox image stands in for `library/busybox` and `nvidia/cuda`, and the images run under
//! podman print what their Dockerfile's CMD prints: a health check and a volume, a builder
//! stage become a `[[step]]`, and a base whose layers are the image's, byte for byte.

use std::path::{Path, PathBuf};

use crate::common::registry::{auth_file, push_layout, start_registry, Registry, PASS, USER};
use crate::common::*;

/// The busybox applets the stand-in base has as links in /bin.
const APPLETS: &[&str] = &[
    "sh", "cat", "echo", "sed", "tar", "mkdir", "test", "touch", "sleep", "true", "ls",
];

fn ready() -> bool {
    require_tool("docker-registry")
        && require_tool("skopeo")
        && require_tool("podman")
        && require_static_busybox().is_some()
}

/// A registry with a busybox image pushed as `dest`, the registries file that allows it plain
/// HTTP, and the login.
struct Env {
    reg: Registry,
    registries: PathBuf,
    auth: PathBuf,
}

impl Env {
    fn new(dir: &Path, dest: &str) -> Env {
        let reg = start_registry(None);
        let base = dir.join("base");
        let bin = base.join("root/bin");
        fs_err::create_dir_all(&bin).unwrap();
        fs_err::copy(which("busybox").unwrap(), bin.join("busybox")).unwrap();
        for a in APPLETS {
            fs_err::os::unix::fs::symlink("busybox", bin.join(a)).unwrap();
        }
        // A layer of this test's own: podman shares layers by digest across the images tests
        // load and remove at once, and podman 4.3 can lose a shared layer to a concurrent rmi.
        fs_err::write(
            base.join("root/.ocibuild-test"),
            format!("{}\n", dir.display()),
        )
        .unwrap();
        fs_err::write(
            base.join("base.toml"),
            "[image]\nname = \"localhost/standin\"\ntag = \"b\"\n\n[[layer]]\nname = \"root\"\n\
             src = \"root\"\ndest = \"/\"\nmode = \"preserve\"\n\n[config]\n\
             env = { PATH = \"/bin\" }\ncmd = [\"/bin/sh\"]\n",
        )
        .unwrap();
        let layout = base.join("layout");
        run_ok(
            ocibuild()
                .arg("build")
                .arg(base.join("base.toml"))
                .arg("-o")
                .arg(&layout),
        );
        push_layout(&layout, "b", &reg.addr, dest);
        let registries = dir.join("registries.toml");
        fs_err::write(
            &registries,
            format!(
                "[[registry]]\nname = \"{}\"\ninsecure-http = true\n",
                reg.addr
            ),
        )
        .unwrap();
        let auth = auth_file(dir, &reg.addr, PASS);
        Env {
            reg,
            registries,
            auth,
        }
    }

    fn ocibuild(&self) -> std::process::Command {
        let mut c = ocibuild();
        c.arg("--registries")
            .arg(&self.registries)
            .env("REGISTRY_AUTH_FILE", &self.auth);
        c
    }

    /// `import --build-arg REGISTRY=ADDR`, `lock`, `build -o docker-archive:…` of the
    /// Dockerfile in `ctx`, then `podman load`: the recipe's text and the image's name.
    fn import_and_build(&self, ctx: &Path) -> (String, String) {
        run_ok(
            ocibuild()
                .arg("import")
                .arg(ctx.join("Dockerfile"))
                .arg("--build-arg")
                .arg(format!("REGISTRY={}", self.reg.addr)),
        );
        let recipe = ctx.join("recipe.toml");
        let text = fs_err::read_to_string(&recipe).unwrap();
        let out = run(self.ocibuild().arg("lock").arg(&recipe));
        assert!(out.status.success(), "lock: {}\n{text}", stderr(&out));
        let archive = ctx.join("image.tar");
        let out = run(self
            .ocibuild()
            .arg("build")
            .arg(&recipe)
            .arg("-o")
            .arg(format!("docker-archive:{}", archive.display())));
        assert!(out.status.success(), "build: {}\n{text}", stderr(&out));
        (text, podman_load(&archive))
    }

    /// The manifest of `dest` in the registry, as stored.
    fn manifest(&self, dest: &str) -> serde_json::Value {
        skopeo_json([
            "inspect",
            "--raw",
            "--tls-verify=false",
            "--creds",
            &format!("{USER}:{PASS}"),
            &format!("docker://{}/{dest}", self.reg.addr),
        ])
    }
}

/// A context directory `dir/NAME-PID` (lower case: it names the image, `localhost/NAME-PID`,
/// in podman's storage, which other test runs share) with the files.
fn context(dir: &Path, name: &str, files: &[(&str, &str)]) -> PathBuf {
    let ctx = dir.join(format!("{name}-{}", std::process::id()));
    for (f, body) in files {
        let p = ctx.join(f);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, body).unwrap();
    }
    ctx
}

/// `podman run --rm IMAGE`: its stdout, which must be the run's only output and a success.
fn podman_cmd_output(image: &str, flags: &[&str]) -> String {
    let out = podman_run_image(image, &[&["--pull=never"], flags].concat(), &[]);
    assert_success(&out, &format!("podman run {image}"));
    stdout(&out)
}

/// `podman run -d` of `image` (with `flags`), then `podman healthcheck run` once `ready` is in
/// its log: the check's exit status, its output, and the container's health status after it.
fn podman_health(
    image: &str,
    flags: &[&str],
    args: &[&str],
    ready: &str,
) -> (bool, String, String) {
    let name = format!("ocibuild-import-e2e-{}", std::process::id());
    let started = run(std::process::Command::new("podman")
        .args(["run", "-d", "--name", &name, "--pull=never"])
        .args(podman_args())
        .args(flags)
        .arg(image)
        .args(args));
    assert_success(&started, "podman run -d");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !podman(&["logs", &name]).contains(ready) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let check = run(std::process::Command::new("podman").args(["healthcheck", "run", &name]));
    let status = podman(&["inspect", "--format", "{{.State.Health.Status}}", &name]);
    let _ = run(std::process::Command::new("podman").args(["rm", "-f", "-t", "0", &name]));
    (
        check.status.success(),
        format!("{}{}", stdout(&check), stderr(&check)),
        status.trim().to_string(),
    )
}

const HEALTH_DOCKERFILE: &str = r#"# A small service on busybox: its data on a volume, healthy once it has started.
ARG REGISTRY=docker.io
FROM ${REGISTRY}/library/busybox:1.36
ENV APP_HOME=/srv/app
WORKDIR /srv/app
COPY app/ ./
VOLUME /data
HEALTHCHECK --interval=30s --timeout=5s --retries=2 CMD test -f /data/ready
CMD ["sh", "/srv/app/serve.sh"]
"#;

const SERVE_SH: &str = r#"echo "serving $APP_HOME from $(pwd), data in /data"
touch /data/ready
sleep "${HOLD:-0}"
"#;

/// HEALTHCHECK and VOLUME: the imported image's config has the volume, podman runs its
/// health check (healthy once the CMD has written /data/ready into the volume; before, as the
/// same image run with another command shows, unhealthy), and its CMD prints the line.
#[test]
fn a_healthcheck_and_volume_dockerfile_builds_and_runs_as_written() {
    if !ready() {
        return;
    }
    let d = tempdir();
    let env = Env::new(d.path(), "library/busybox:1.36");
    let ctx = context(
        d.path(),
        "health",
        &[
            ("Dockerfile", HEALTH_DOCKERFILE),
            ("app/serve.sh", SERVE_SH),
        ],
    );
    let (recipe, image) = env.import_and_build(&ctx);
    let inspect = podman(&["image", "inspect", "--format", "{{json .Config}}", &image]);
    let health = podman(&[
        "image",
        "inspect",
        "--format",
        "{{json .HealthCheck}}",
        &image,
    ]);
    let cmd_out = podman_cmd_output(&image, &[]);
    let (ok, text, status) = podman_health(&image, &["-e", "HOLD=300"], &[], "serving");
    // The same image whose CMD never writes /data/ready: the check fails.
    let (bad_ok, bad_text, _) =
        podman_health(&image, &["--entrypoint", "/bin/sleep"], &["300"], "");
    podman_rmi(&image);
    let config: serde_json::Value = serde_json::from_str(&inspect).unwrap();
    assert_eq!(
        config["Volumes"],
        serde_json::json!({"/data": {}}),
        "{recipe}"
    );
    let health: serde_json::Value = serde_json::from_str(&health).unwrap();
    assert_eq!(
        health["Test"],
        serde_json::json!(["CMD-SHELL", "test -f /data/ready"]),
        "{recipe}"
    );
    assert_eq!(health["Interval"], 30_000_000_000u64, "{health}");
    assert_eq!(health["Retries"], 2, "{health}");
    assert_eq!(cmd_out, "serving /srv/app from /srv/app, data in /data\n");
    assert!(ok, "healthcheck run: {text}");
    assert_eq!(status, "healthy", "{text}");
    assert!(
        !bad_ok,
        "a container that never got ready is healthy: {bad_text}"
    );
}

const MULTI_STAGE_DOCKERFILE: &str = r#"# Build from source in a builder stage; the image gets only the artifact.
ARG REGISTRY=docker.io
FROM ${REGISTRY}/library/busybox:1.36 AS build
WORKDIR /build
ARG NAME=ocibuild
COPY src/ ./src/
RUN mkdir -p /build/out && cd src && sh gen.sh "$NAME" > /build/out/greeting.txt && tar -cf /build/out/src.tar gen.sh greeting.in

FROM ${REGISTRY}/library/busybox:1.36
COPY --from=build /build/out/greeting.txt /usr/share/app/greeting.txt
CMD ["cat", "/usr/share/app/greeting.txt"]
"#;

/// The "compiler": fills the template's placeholders.
const GEN_SH: &str = r#"sed -e "s/@NAME@/$1/" -e "s/@LINES@/$(cat greeting.in | sed -n '$=')/" greeting.in
"#;

/// A builder stage that "compiles" the source with sed becomes a `[[step]]` whose output is
/// what the final stage copies from it; the step runs under podman (no network) in the
/// registry's busybox, and the image's CMD prints the generated file. The stage's ARG is an
/// argument of the recipe: `--build-arg NAME=…` reruns the step with it.
#[test]
fn a_multi_stage_source_build_becomes_a_step_and_its_artifact_is_the_image() {
    if !ready() {
        return;
    }
    let d = tempdir();
    let env = Env::new(d.path(), "library/busybox:1.36");
    let ctx = context(
        d.path(),
        "multistage",
        &[
            ("Dockerfile", MULTI_STAGE_DOCKERFILE),
            ("src/gen.sh", GEN_SH),
            (
                "src/greeting.in",
                "hello from @NAME@ (@LINES@ line of source)\n",
            ),
        ],
    );
    let (recipe, image) = env.import_and_build(&ctx);
    let out = podman_cmd_output(&image, &[]);
    let listing = podman_run_image(&image, &["--pull=never"], &["ls", "/usr/share/app"]);
    podman_rmi(&image);
    let archive = ctx.join("other.tar");
    let built = run(env
        .ocibuild()
        .arg("build")
        .arg(ctx.join("recipe.toml"))
        .args(["--build-arg", "NAME=a build argument", "-o"])
        .arg(format!("docker-archive:{}", archive.display())));
    assert_success(&built, "build --build-arg NAME=…");
    let other = podman_load(&archive);
    let other_out = podman_cmd_output(&other, &[]);
    podman_rmi(&other);
    let doc: toml::Value = toml::from_str(&recipe).unwrap();
    let steps = doc["step"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{recipe}");
    assert_eq!(steps[0]["name"].as_str(), Some("build"), "{recipe}");
    let outputs = steps[0]["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 1, "{recipe}");
    assert_eq!(outputs[0]["path"].as_str(), Some("/build/out"), "{recipe}");
    assert_eq!(
        outputs[0]["dest"].as_str(),
        Some("/usr/share/app"),
        "{recipe}"
    );
    assert!(
        !recipe.contains("# TODO") && !recipe.contains("TODO-"),
        "{recipe}"
    );
    assert!(recipe.contains("NAME = \"ocibuild\""), "{recipe}");
    assert!(recipe.contains("sh gen.sh \\\"$$NAME\\\""), "{recipe}");
    assert_eq!(out, "hello from ocibuild (1 line of source)\n");
    assert_eq!(
        other_out,
        "hello from a build argument (1 line of source)\n"
    );
    assert_eq!(stdout(&listing), "greeting.txt\nsrc.tar\n");
}

const CUDA_DOCKERFILE: &str = r#"# An application on the CUDA runtime image.
ARG REGISTRY=docker.io
FROM ${REGISTRY}/nvidia/cuda:12.8.1-runtime-ubuntu24.04
ENV MODEL_DIR=/opt/model
WORKDIR /opt/model
COPY model.txt ./
CMD ["sh", "-c", "echo model $(cat $MODEL_DIR/model.txt) in $(pwd)"]
"#;

/// An nvidia/cuda base through a stand-in pushed under that name: `import --build-arg
/// REGISTRY=…` keeps it as `[base]`, `lock` pins it, and the built image's first layers are
/// the registry's, by digest; the CMD prints what the Dockerfile says.
#[test]
fn a_cuda_base_from_a_registry_build_arg_is_the_images_lower_layers() {
    if !ready() {
        return;
    }
    let d = tempdir();
    let dest = "nvidia/cuda:12.8.1-runtime-ubuntu24.04";
    let env = Env::new(d.path(), dest);
    let ctx = context(
        d.path(),
        "cuda",
        &[
            ("Dockerfile", CUDA_DOCKERFILE),
            ("model.txt", "resnet-50\n"),
        ],
    );
    let (recipe, image) = env.import_and_build(&ctx);
    let out = podman_cmd_output(&image, &[]);
    podman_rmi(&image);
    assert!(
        recipe.contains(&format!("[base]\nimage = \"{}/{dest}\"", env.reg.addr)),
        "{recipe}"
    );
    // The same build into an OCI layout: its layers as stored, compressed.
    let layout = ctx.join("layout");
    let o = run(env
        .ocibuild()
        .arg("build")
        .arg(ctx.join("recipe.toml"))
        .arg("-o")
        .arg(&layout));
    assert_success(&o, "build -o layout");
    let index: serde_json::Value =
        serde_json::from_slice(&fs_err::read(layout.join("index.json")).unwrap()).unwrap();
    let digest = index["manifests"][0]["digest"].as_str().unwrap();
    let built: serde_json::Value = serde_json::from_slice(
        &fs_err::read(layout.join("blobs/sha256").join(&digest["sha256:".len()..])).unwrap(),
    )
    .unwrap();
    let archive = format!("docker-archive:{}", ctx.join("image.tar").display());
    let layers = |m: &serde_json::Value| -> Vec<String> {
        m["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["digest"].as_str().unwrap().to_string())
            .collect()
    };
    let base = layers(&env.manifest(dest));
    let built = layers(&built);
    assert!(!base.is_empty());
    assert!(built.len() > base.len(), "{built:?}");
    assert_eq!(built[..base.len()], base[..], "{recipe}");
    for d in &base {
        let blob = layout.join("blobs/sha256").join(&d["sha256:".len()..]);
        assert_eq!(&sha256_file(&blob).unwrap(), d, "{}", blob.display());
    }
    // A docker-archive holds the layers uncompressed: compare the diff_ids too.
    let base_config = skopeo_json([
        "inspect",
        "--config",
        "--tls-verify=false",
        "--creds",
        &format!("{USER}:{PASS}"),
        &format!("docker://{}/{dest}", env.reg.addr),
    ]);
    let built_config = skopeo_inspect_config(&archive);
    let diff_ids = |c: &serde_json::Value| -> Vec<String> {
        c["rootfs"]["diff_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_string())
            .collect()
    };
    let (base_ids, built_ids) = (diff_ids(&base_config), diff_ids(&built_config));
    assert_eq!(built_ids[..base_ids.len()], base_ids[..], "{recipe}");
    assert_eq!(out, "model resnet-50 in /opt/model\n");
}

const ARGS_DOCKERFILE: &str = r#"# Build arguments used in the config.
ARG VERSION=1.0
FROM scratch
ARG VERSION
ARG PREFIX=/opt/app
ENV APP_VERSION=${VERSION} APP_HOME=$PREFIX/home CHANNEL=${CHANNEL:-stable} PRICE=\$5
LABEL v=$VERSION
WORKDIR $PREFIX
COPY version.txt ./
CMD ["/bin/echo", "$VERSION"]
"#;

/// The config of the OCI layout `layout`'s one image.
fn layout_config(layout: &Path) -> serde_json::Value {
    let blob = |d: &str| -> serde_json::Value {
        let hex = d.trim_start_matches("sha256:");
        serde_json::from_slice(&fs_err::read(layout.join("blobs/sha256").join(hex)).unwrap())
            .unwrap()
    };
    let index: serde_json::Value =
        serde_json::from_slice(&fs_err::read(layout.join("index.json")).unwrap()).unwrap();
    let manifest = blob(index["manifests"][0]["digest"].as_str().unwrap());
    blob(manifest["config"]["digest"].as_str().unwrap())
}

/// ARGs stay arguments: the recipe's env, labels and workdir refer to `${VERSION}` and
/// `${PREFIX}`, so `build --build-arg VERSION=2.0` gives APP_VERSION=2.0 and the label 2.0,
/// and a plain build the Dockerfile's 1.0; the CMD is as written (Docker substitutes nothing
/// there), a `\$` a `$`.
#[test]
fn imported_args_are_build_args_of_the_recipe() {
    let d = tempdir();
    let ctx = context(
        d.path(),
        "args",
        &[("Dockerfile", ARGS_DOCKERFILE), ("version.txt", "v\n")],
    );
    run_ok(ocibuild().arg("import").arg(ctx.join("Dockerfile")));
    let recipe = fs_err::read_to_string(ctx.join("recipe.toml")).unwrap();
    for line in [
        "VERSION = \"1.0\"",
        "PREFIX = \"/opt/app\"",
        "APP_VERSION = \"${VERSION}\"",
        "APP_HOME = \"${PREFIX}/home\"",
        "v = \"${VERSION}\"",
        "workdir = \"${PREFIX}\"",
        "PRICE = \"$$5\"",
        "cmd = [\"/bin/echo\", \"$$VERSION\"]",
    ] {
        assert!(recipe.lines().any(|l| l == line), "{line}:\n{recipe}");
    }
    let build = |args: &[&str]| {
        let layout = ctx.join(format!("out{}", args.len()));
        run_ok(
            ocibuild()
                .arg("build")
                .arg(ctx.join("recipe.toml"))
                .arg("-o")
                .arg(&layout)
                .args(args),
        );
        let c = layout_config(&layout)["config"].clone();
        let mut env: Vec<String> = c["Env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap().to_string())
            .filter(|e| !e.starts_with("PATH="))
            .collect();
        env.sort();
        (
            env,
            c["Labels"]["v"].as_str().unwrap().to_string(),
            c["WorkingDir"].as_str().unwrap().to_string(),
            c["Cmd"].clone(),
        )
    };
    let plain = build(&[]);
    let given = build(&["--build-arg", "VERSION=2.0", "--build-arg", "PREFIX=/srv"]);
    let env = |v: &str, home: &str| -> Vec<String> {
        vec![
            format!("APP_HOME={home}/home"),
            format!("APP_VERSION={v}"),
            "CHANNEL=stable".into(),
            "PRICE=$5".into(),
        ]
    };
    assert_eq!(plain.0, env("1.0", "/opt/app"), "{recipe}");
    assert_eq!((plain.1.as_str(), plain.2.as_str()), ("1.0", "/opt/app"));
    assert_eq!(given.0, env("2.0", "/srv"), "{recipe}");
    assert_eq!((given.1.as_str(), given.2.as_str()), ("2.0", "/srv"));
    for c in [&plain.3, &given.3] {
        assert_eq!(*c, serde_json::json!(["/bin/echo", "$VERSION"]));
    }
}
