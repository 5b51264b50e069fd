//! `[config] volumes`, `shell`, `[config.healthcheck]` and `[args]`: what they parse into,
//! what the identity sees, and the `--build-arg` errors.

use super::*;

fn parse_args(text: &str, overrides: &[ArgOverride]) -> Result<Recipe, RecipeError> {
    let d = fixture();
    parse_with(text, Path::new("recipe.toml"), d.path(), overrides)
}

fn set(name: &str, value: &str) -> ArgOverride {
    ArgOverride {
        name: name.into(),
        value: Some(value.into()),
    }
}

#[test]
fn docker_config_keys() {
    let d = fixture();
    let r = parse_in(
        &d,
        &with_img(
            "[config]\nvolumes = [\"/data/\", \"/cache\", \"//data\"]\nshell = [\"/bin/bash\", \"-c\"]\n\
             [config.healthcheck]\ntest = [\"CMD-SHELL\", \"true\"]\ninterval = \"1m30s\"\n\
             start-interval = \"500ms\"\nretries = 2\n",
        ),
    )
    .unwrap();
    assert_eq!(r.config.volumes, ["/cache", "/data"]);
    assert_eq!(
        r.config.shell.as_deref(),
        Some(&["/bin/bash".to_string(), "-c".to_string()][..])
    );
    let h = r.config.healthcheck.as_ref().unwrap();
    assert_eq!(
        crate::json::to_canonical_vec("h", &h.config_value()).unwrap(),
        br#"{"Interval":90000000000,"Retries":2,"StartInterval":500000000,"Test":["CMD-SHELL","true"]}"#
    );
    let none = parse_in(&d, &with_img("[config.healthcheck]\ntest = [\"NONE\"]\n")).unwrap();
    assert_eq!(
        none.config.healthcheck.unwrap().config_value(),
        serde_json::json!({"Test": ["NONE"]})
    );
}

#[test]
fn new_keys_leave_other_identities_alone() {
    let d = fixture();
    let plain = parse_in(&d, &with_img("[config]\ncmd = [\"/x\"]\n")).unwrap();
    let value = plain.identity_value_for_tests();
    assert!(value["config"].get("volumes").is_none(), "{value}");
    assert!(value.get("args").is_none(), "{value}");
    for extra in [
        "volumes = [\"/d\"]\n",
        "shell = [\"/bin/sh\", \"-c\"]\n",
        "[config.healthcheck]\ntest = [\"NONE\"]\n",
    ] {
        let r = parse_in(&d, &with_img(&format!("[config]\ncmd = [\"/x\"]\n{extra}"))).unwrap();
        assert_ne!(r.identity().unwrap(), plain.identity().unwrap(), "{extra}");
    }
    // `[args]` is part of it, even with nothing substituted.
    let with_args = parse_in(
        &d,
        &with_img("[config]\ncmd = [\"/x\"]\n[args]\nA = \"1\"\n"),
    )
    .unwrap();
    assert_ne!(with_args.identity().unwrap(), plain.identity().unwrap());
}

const ARGS: &str = r#"[image]
name = "hello"
tag = "v${VERSION}"

[args]
VERSION = "1.0"
BASE_DIR = "/srv"

[config]
env = { APP_VERSION = "$VERSION", LITERAL = "$$VERSION", HOME_KEPT = "$HOME" }
workdir = "${BASE_DIR}/app"
cmd = ["/bin/app", "--version=${VERSION}", "${UNSET:-x}"]
labels = { v = "${VERSION:-none}" }

[[step]]
name = "gen"
image = "debian:trixie"
run = ["/bin/sh", "-c", "echo $VERSION > /out/v"]
env = { VERSION = "step-wins" }
outputs = [{ path = "/out", dest = "/v" }]

[[test]]
name = "t"
run = ["/bin/echo", "${VERSION}"]
"#;

#[test]
fn args_are_substituted_with_defaults_and_overrides() {
    let r = parse_args(ARGS, &[]).unwrap();
    assert_eq!(r.image.tag, "v1.0");
    assert_eq!(r.config.env["APP_VERSION"], "1.0");
    assert_eq!(r.config.env["LITERAL"], "$VERSION");
    assert_eq!(r.config.env["HOME_KEPT"], "$HOME");
    assert_eq!(r.config.workdir.as_deref(), Some("/srv/app"));
    assert_eq!(
        r.config.cmd.as_deref(),
        Some(
            &[
                "/bin/app".to_string(),
                "--version=1.0".into(),
                "${UNSET:-x}".into()
            ][..]
        )
    );
    assert_eq!(r.config.labels["v"], "1.0");
    assert_eq!(
        r.tests[0].run,
        TestRun::Command(vec!["/bin/echo".into(), "1.0".into()])
    );
    // The step's own env wins; the others are exported to it.
    let step = &r.steps[0];
    assert_eq!(step.env["VERSION"], "step-wins");
    assert_eq!(step.env["BASE_DIR"], "/srv");
    assert_eq!(step.run[2], "echo 1.0 > /out/v");

    let o = parse_args(ARGS, &[set("VERSION", "2.5"), set("BASE_DIR", "/opt")]).unwrap();
    assert_eq!(o.image.tag, "v2.5");
    assert_eq!(o.config.workdir.as_deref(), Some("/opt/app"));
    assert_eq!(o.args.as_ref().unwrap()["VERSION"], "2.5");
    assert_ne!(o.identity().unwrap(), r.identity().unwrap());
    // An empty value takes the `:-` default.
    let e = parse_args(ARGS, &[set("VERSION", "")]).unwrap();
    assert_eq!(e.config.labels["v"], "none");
    // `--build-arg NAME` with the environment unset keeps the default.
    let unset = ArgOverride {
        name: "VERSION".into(),
        value: None,
    };
    assert_eq!(parse_args(ARGS, &[unset]).unwrap().image.tag, "v1.0");
}

#[test]
fn build_arg_errors() {
    let e = parse_args(ARGS, &[set("VERSON", "2")]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--build-arg `VERSON`: not declared in [args]: did you mean `VERSION`? the recipe \
         declares `BASE_DIR`, `VERSION`"
    );
    let e = parse_args(ARGS, &[set("ZZZ", "2")]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--build-arg `ZZZ`: not declared in [args]: the recipe declares `BASE_DIR`, `VERSION`"
    );
    let e = parse_args("[image]\nname = \"a\"\n", &[set("A", "2")]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--build-arg `A`: the recipe declares no [args]"
    );
    // A substituted value is checked where it is written.
    let e = parse_args(ARGS, &[set("VERSION", "bad tag")]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("recipe.toml:3:7: invalid image tag `vbad tag`"),
        "{e}"
    );
}

#[test]
fn args_errors() {
    check_all(
        "args_errors",
        &[
            &with_img("[args]\n9X = \"1\"\n"),
            &with_img("[args]\nA-B = \"1\"\n"),
            &with_img("[args]\nA = 1\n"),
            &with_img("args = \"x\"\n"),
            &with_img("[args]\nA = \"1\"\n[config]\nworkdir = \"${A:+x}\"\n"),
            &with_img("[args]\nA = \"1\"\n[config]\ncmd = [\"/x\", \"${A\"]\n"),
            &with_img("[args]\nA = \"rel\"\n[config]\nworkdir = \"$A/x\"\n"),
        ],
    );
}

#[test]
fn args_reach_apt_packages_and_the_python_version() {
    let text = r#"[image]
name = "hello"
platform = "linux/amd64"

[args]
PY = "3.13"
PG = "16"

[[apt.source]]
url = "https://deb.example/debian"
suite = "trixie"
components = ["main"]
signed-by = "k.asc"

[apt]
packages = ["python${PY}", "postgresql-client-$PG (>= ${PG}.1)"]

[python]
version = "${PY}"
"#;
    let r = parse_args(text, &[set("PG", "17")]).unwrap();
    assert_eq!(
        r.apt.as_ref().unwrap().packages,
        ["postgresql-client-17 (>= 17.1)", "python3.13"]
    );
    assert_eq!(r.python.as_ref().unwrap().version.as_deref(), Some("3.13"));
    // A value that makes a bad package name is refused where the request is written.
    let e = parse_args(text, &[set("PY", "3 13")]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("recipe.toml:16:13: [apt] packages: invalid package `python3 13`"),
        "{e}"
    );
}

/// `[image] cuda-archs` and `cuda-ptx`: what they parse into, the identity, the errors.
#[test]
fn cuda_keys() {
    use crate::cuda::PtxPolicy;
    let d = fixture();
    let img = |extra: &str| format!("[image]\nname = \"hello\"\n{extra}");
    let plain = parse_in(&d, &img("")).unwrap();
    assert_eq!(plain.image.cuda, None);
    assert!(plain.identity_value_for_tests()["image"]
        .get("cuda")
        .is_none());
    let r = parse_in(&d, &img("cuda-archs = [\"sm_90\", \"sm_80\"]\n")).unwrap();
    let t = r.image.cuda.clone().unwrap();
    assert_eq!(t.archs.iter().copied().collect::<Vec<_>>(), [80, 90]);
    assert_eq!(t.ptx, PtxPolicy::Newest);
    let none = parse_in(&d, &img("cuda-archs = [\"sm_90\"]\ncuda-ptx = \"none\"\n")).unwrap();
    assert_eq!(none.image.cuda.as_ref().unwrap().ptx, PtxPolicy::None);
    let ids = [&plain, &r, &none].map(|x| x.identity().unwrap());
    assert_ne!(ids[0], ids[1]);
    assert_ne!(ids[1], ids[2]);
    let err = |extra: &str| parse_in(&d, &img(extra)).unwrap_err().to_string();
    assert_eq!(
        err("cuda-archs = [\"sm90\"]\n"),
        format!(
            "recipe.toml:3:15: unknown CUDA architecture `sm90`: did you mean `sm_90`? known: {}",
            crate::cuda::KNOWN_ARCHS.join(", ")
        )
    );
    assert!(err("cuda-archs = [\"compute_90\"]\n").contains("known: sm_50, sm_52"));
    assert_eq!(
        err("cuda-archs = [\"sm_90\", \"sm_90\"]\n"),
        "recipe.toml:3:24: `sm_90` is listed twice"
    );
    assert!(err("cuda-archs = []\n").starts_with("recipe.toml:3:14: `cuda-archs` is empty"));
    assert_eq!(
        err("cuda-archs = [\"sm_90\"]\ncuda-ptx = \"latest\"\n"),
        "recipe.toml:4:12: unknown cuda-ptx `latest`: expected one of newest, none, all"
    );
    assert!(err("cuda-ptx = \"all\"\n").starts_with("recipe.toml:3:12: `cuda-ptx` without"));
}
