//! Online (OCIBUILD_ONLINE=1): `[python] sdist-builder` with ocibuild's real PEP 517 frontend.
//! A uv pylock.toml of four PyPI packages for CPython 3.13: crcmod 1.7 (a C extension,
//! setup.py only), docopt 0.6.2 and antlr4-python3-runtime 4.9.3 (omegaconf's, so hydra's:
//! sdists only) and six (a wheel). The sdists are built in a Debian 13 builder recipe (gcc,
//! python3-dev, python3-setuptools from the Debian archive) with no network, installed into a
//! Debian 13 python3 image whose test imports the compiled extension; then built again from
//! the lock in an empty store to the same image; the SBOM says where each wheel came from; and
//! a builder without setuptools is refused naming the requirement. Then a hashed
//! requirements.txt line whose index (PyPI) has only the sdist, built with setuptools from the
//! builder's own [python] lock (a locked wheel, not a Debian package).

use std::path::Path;

use fs_err as fs;
use std::process::Command;

use crate::common::{self, ocibuild, run, run_ok, stderr, stdout, tempdir};
use crate::online_wheels::uv;

const BUILDER: &str = r#"[image]
name = "localhost/ocibuild-test/sdist-builder"

[[apt.source]]
url = "https://deb.debian.org/debian"
suite = "trixie"
components = ["main"]
signed-by = "keys/debian-trixie.asc"

[apt]
packages = ["base-files", "gcc", "libc6-dev", "python3-dev", "python3-setuptools"]

[config]
env = { PATH = "/usr/sbin:/usr/bin:/sbin:/bin", LANG = "C.UTF-8" }
"#;

const APP: &str = r#"[image]
name = "localhost/ocibuild-test/sdists"

[[apt.source]]
url = "https://deb.debian.org/debian"
suite = "trixie"
components = ["main"]
signed-by = "keys/debian-trixie.asc"

[apt]
packages = ["base-files", "python3"]

[python]
lock = "pylock.toml"
sdist-builder = { recipe = "BUILDER" }

[[test]]
name = "imports"
run = ["python3", "-W", "ignore", "-c", "import crcmod.predefined, crcmod._crcfunext as ext, docopt, six, antlr4; print('crc', hex(crcmod.predefined.mkCrcFun('crc-32')(b'123456789')), ext.__file__.rsplit('/', 1)[1], docopt.__version__)"]
expect-output = "crc 0xcbf43926 _crcfunext.cpython-313-x86_64-linux-gnu.so 0.6.2"
"#;

fn write_project(p: &Path, builder: &str, builder_text: &str) -> std::path::PathBuf {
    fs::write(p.join(builder), builder_text).unwrap();
    let app = p.join(format!("app-{builder}"));
    fs::write(&app, APP.replace("BUILDER", builder)).unwrap();
    app
}

#[test]
fn sdists_of_a_uv_lock_are_built_by_pep517_in_a_debian_builder_and_rebuild_bit_for_bit() {
    if !common::online("builds PyPI sdists (crcmod, docopt, antlr4) in a Debian 13 builder")
        || !common::require_tool("podman")
    {
        return;
    }
    let t = tempdir();
    let p = t.path();
    fs::create_dir_all(p.join("keys")).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
    fs::copy(
        repo.join("keys/debian-trixie.asc"),
        p.join("keys/debian-trixie.asc"),
    )
    .unwrap();
    let uv = uv(p);
    fs::write(
        p.join("req.in"),
        "crcmod==1.7\ndocopt==0.6.2\nantlr4-python3-runtime==4.9.3\nsix\n",
    )
    .unwrap();
    run_ok(
        Command::new(&uv)
            .current_dir(p)
            .args(["pip", "compile", "-q", "req.in", "--format", "pylock.toml"])
            .args(["-o", "pylock.toml", "--python-version", "3.13"])
            .args(["--python-platform", "x86_64-manylinux_2_40"]),
    );
    let pylock = fs::read_to_string(p.join("pylock.toml")).unwrap();
    assert_eq!(pylock.matches("sdist = {").count(), 4, "{pylock}");
    let app = write_project(p, "builder.toml", BUILDER);

    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", p.join("cache-a"))
            .args(["build", "--test", "-o"])
            .arg(p.join("a"))
            .arg(&app),
    );
    let text = stdout(&o);
    assert!(text.contains("test imports ... passed"), "{text}");
    let lock = fs::read_to_string(p.join("app-builder.lock")).unwrap();
    for (pkg, wheel) in [
        ("crcmod", "crcmod-1.7-cp313-cp313-linux_x86_64.whl"),
        ("docopt", "docopt-0.6.2-py2.py3-none-any.whl"),
    ] {
        assert!(lock.contains(&format!("filename = \"{wheel}\"")), "{lock}");
        assert!(lock.contains(&format!("step = \"sdist:{pkg}\"")), "{lock}");
        assert!(lock.contains(&format!("name = \"sdist:{pkg}\"")), "{lock}");
    }
    assert!(
        lock.contains("filename = \"six-1.17.0-py2.py3-none-any.whl\"")
            || lock.contains("filename = \"six-"),
        "{lock}"
    );
    assert!(
        !lock.contains("step = \"sdist:six\""),
        "six has a wheel: {lock}"
    );

    let json = |dir: &str, cache: &str, extra: &[&str]| -> serde_json::Value {
        let o = run_ok(
            ocibuild()
                .env("OCIBUILD_CACHE", p.join(cache))
                .args(["build", "--json", "-o"])
                .arg(p.join(dir))
                .args(extra)
                .arg(&app),
        );
        serde_json::from_str(&stdout(&o)).unwrap()
    };
    let warm = json("a", "cache-a", &[]);
    let steps = warm["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3, "{warm:#}");
    assert!(steps.iter().all(|s| s["cached"] == true), "{warm:#}");
    let cold = json("b", "cache-b", &["--locked"]);
    assert!(cold["steps"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["cached"] == false));
    assert_eq!(
        cold["manifest"], warm["manifest"],
        "the sdists' wheels are reproducible"
    );

    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", p.join("cache-a"))
            .args(["sbom", "--image"])
            .arg(format!("oci:{}", p.join("a").display()))
            .arg(&app),
    );
    let sbom = stdout(&o);
    assert!(
        sbom.contains(
            "built by ocibuild's step sdist:crcmod from the sdist https://files.pythonhosted.org/"
        ),
        "{sbom}"
    );

    // A builder without setuptools: the frontend names what it lacks.
    let app = write_project(
        p,
        "bare.toml",
        &BUILDER.replace(", \"python3-setuptools\"", ""),
    );
    let o = run(ocibuild()
        .env("OCIBUILD_CACHE", p.join("cache-a"))
        .args(["build", "-o"])
        .arg(p.join("c"))
        .arg(&app));
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("the builder lacks build requirements of")
            && err.contains("setuptools>=40.8.0 (not installed)"),
        "{err}"
    );
}

/// The build requirement as a locked wheel: a builder with no Debian setuptools but
/// setuptools from its own `[python]` lock (uv's pylock.toml of PyPI's wheel); and the sdist
/// named by a hashed requirements.txt line, found on PyPI's simple index.
#[test]
fn a_requirements_sdist_is_built_with_build_requirements_from_the_builders_own_lock() {
    if !common::online("builds crcmod's sdist with setuptools from PyPI in the builder")
        || !common::require_tool("podman")
    {
        return;
    }
    let t = tempdir();
    let p = t.path();
    fs::create_dir_all(p.join("keys")).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
    fs::copy(
        repo.join("keys/debian-trixie.asc"),
        p.join("keys/debian-trixie.asc"),
    )
    .unwrap();
    let uv = uv(p);
    fs::write(p.join("build.in"), "setuptools\n").unwrap();
    run_ok(
        Command::new(&uv)
            .current_dir(p)
            .args([
                "pip",
                "compile",
                "-q",
                "build.in",
                "--format",
                "pylock.toml",
            ])
            .args(["-o", "pylock.build.toml", "--python-version", "3.13"])
            .args(["--python-platform", "x86_64-manylinux_2_40"]),
    );
    let builder = BUILDER.replace(
        "\"python3-dev\", \"python3-setuptools\"]",
        "\"python3-dev\"]\n\n[python]\nlock = \"pylock.build.toml\"",
    );
    assert!(builder.contains("pylock.build.toml"), "{builder}");
    fs::write(p.join("builder.toml"), builder).unwrap();
    fs::write(
        p.join("requirements.txt"),
        "crcmod==1.7 --hash=sha256:dc7051a0db5f2bd48665a990d3ec1cc305a466a77358ca4492826f41f283601e\n",
    )
    .unwrap();
    let app = APP
        .replace(
            "lock = \"pylock.toml\"",
            "requirements = \"requirements.txt\"",
        )
        .replace("BUILDER", "builder.toml");
    let app = app[..app.find("[[test]]").unwrap()].to_string()
        + "[[test]]\nname = \"imports\"\nrun = [\"python3\", \"-c\", \"import crcmod._crcfunext as e; print(e.__file__.rsplit('/', 1)[1])\"]\nexpect-output = \"_crcfunext.cpython-313-x86_64-linux-gnu.so\"\n";
    fs::write(p.join("app.toml"), app).unwrap();
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", p.join("cache"))
            .args(["build", "--test", "-o"])
            .arg(p.join("a"))
            .arg(p.join("app.toml")),
    );
    let text = stdout(&o);
    assert!(
        text.contains("step sdist:crcmod: ran in") && text.contains("test imports ... passed"),
        "{text}"
    );
    let builder_lock = fs::read_to_string(p.join("builder.lock")).unwrap();
    assert!(
        builder_lock.contains("name = \"setuptools\"")
            && !builder_lock.contains("python3-setuptools"),
        "setuptools is the builder's locked wheel: {builder_lock}"
    );
    let lock = fs::read_to_string(p.join("app.lock")).unwrap();
    assert!(
        lock.contains("filename = \"crcmod-1.7-cp313-cp313-linux_x86_64.whl\"")
            && lock.contains("step = \"sdist:crcmod\""),
        "{lock}"
    );
}

/// An sdist whose backend is hatchling, built at the default epoch (0): a zip holds no time
/// before 1980 and hatchling refuses one, so ocibuild's frontend gives the backend 1980-01-01
/// (as the `wheel` package's bdist_wheel clamps it). The sdist is made here, named by a path in
/// the pylock.toml; the builder is Debian 13's python3-hatchling.
#[test]
fn a_hatchling_sdist_builds_at_the_default_epoch() {
    if !common::online("builds a hatchling sdist with Debian 13's python3-hatchling")
        || !common::require_tool("podman")
        || !common::require_tool("tar")
    {
        return;
    }
    let t = tempdir();
    let p = t.path();
    fs::create_dir_all(p.join("keys")).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
    fs::copy(
        repo.join("keys/debian-trixie.asc"),
        p.join("keys/debian-trixie.asc"),
    )
    .unwrap();
    let src = p.join("src/hatchdemo-0.1.0");
    fs::create_dir_all(src.join("hatchdemo")).unwrap();
    fs::write(
        src.join("pyproject.toml"),
        "[build-system]\nrequires = [\"hatchling\"]\nbuild-backend = \"hatchling.build\"\n\n\
         [project]\nname = \"hatchdemo\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    fs::write(
        src.join("PKG-INFO"),
        "Metadata-Version: 2.1\nName: hatchdemo\nVersion: 0.1.0\n",
    )
    .unwrap();
    fs::write(
        src.join("hatchdemo/__init__.py"),
        "BUILT = 'by hatchling'\n",
    )
    .unwrap();
    let sdist = p.join("hatchdemo-0.1.0.tar.gz");
    run_ok(
        Command::new("tar")
            .args([
                "--sort=name",
                "--mtime=@0",
                "--owner=0",
                "--group=0",
                "-czf",
            ])
            .arg(&sdist)
            .arg("-C")
            .arg(p.join("src"))
            .arg("hatchdemo-0.1.0"),
    );
    let sha = ocibuild::digest::Digest::of(&fs::read(&sdist).unwrap()).hex();
    fs::write(
        p.join("pylock.toml"),
        format!(
            "lock-version = \"1.0\"\ncreated-by = \"ocibuild-test\"\nrequires-python = \">=3.13\"\n\n\
             [[packages]]\nname = \"hatchdemo\"\nversion = \"0.1.0\"\n\
             sdist = {{ name = \"hatchdemo-0.1.0.tar.gz\", path = \"hatchdemo-0.1.0.tar.gz\", hashes = {{ sha256 = \"{sha}\" }} }}\n"
        ),
    )
    .unwrap();
    fs::write(
        p.join("builder.toml"),
        BUILDER.replace(
            "\"gcc\", \"libc6-dev\", \"python3-dev\", \"python3-setuptools\"",
            "\"python3\", \"python3-hatchling\"",
        ),
    )
    .unwrap();
    let app = APP.replace("BUILDER", "builder.toml");
    let app = app[..app.find("[[test]]").unwrap()].to_string()
        + "[[test]]\nname = \"imports\"\nrun = [\"python3\", \"-c\", \"import hatchdemo; print(hatchdemo.BUILT)\"]\nexpect-output = \"by hatchling\"\n";
    fs::write(p.join("app.toml"), app).unwrap();
    let o = run(ocibuild()
        .env("OCIBUILD_CACHE", p.join("cache"))
        .env_remove("SOURCE_DATE_EPOCH")
        .args(["build", "--test", "-o"])
        .arg(p.join("a"))
        .arg(p.join("app.toml")));
    let text = format!("{}{}", stdout(&o), stderr(&o));
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("step sdist:hatchdemo: ran in") && text.contains("test imports ... passed"),
        "{text}"
    );
}
