use super::*;
use crate::python::interpreter::{PyVersion, Scheme};

fn interp(minor: u32, machine: &str) -> Interpreter {
    let version = PyVersion { major: 3, minor };
    Interpreter {
        version,
        executable: format!("/usr/bin/python3.{minor}"),
        machine: machine.into(),
        glibc: Some((2, 41)),
        scheme: Scheme::debian_local(version),
        full_version: Some(format!("3.{minor}.2")),
    }
}

const H: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

fn wheel(name: &str, version: &str, tag: &str) -> String {
    format!("{{ url = \"https://f/{name}-{version}-{tag}.whl\", hash = \"sha256:{H}\", size = 1 }}")
}

/// A lock as uv writes it for a project with a fork on numpy (two versions by Python), a
/// Windows-only dependency of click, an extra, a dev group and a dependency's extra.
fn lock() -> String {
    let pkg = |name: &str, version: &str, extra: &str| {
        format!(
            "\n[[package]]\nname = \"{name}\"\nversion = \"{version}\"\nsource = {{ registry = \"https://pypi.org/simple\" }}\n{extra}sdist = {{ url = \"https://f/{name}-{version}.tar.gz\", hash = \"sha256:{H}\", size = 9 }}\nwheels = [{}]\n",
            wheel(name, version, "py3-none-any")
        )
    };
    let mut s = String::from(
        "version = 1\nrevision = 3\nrequires-python = \">=3.11\"\nresolution-markers = [\"python_full_version >= '3.12'\", \"python_full_version < '3.12'\"]\n",
    );
    s += &pkg(
        "click",
        "8.5.1",
        "dependencies = [{ name = \"colorama\", marker = \"sys_platform == 'win32'\" }]\n",
    );
    s += &pkg("colorama", "0.4.6", "");
    s += &pkg("iniconfig", "2.3.1", "");
    s += &pkg(
        "numpy",
        "2.4.6",
        "resolution-markers = [\"python_full_version < '3.12'\"]\n",
    );
    s += &pkg(
        "numpy",
        "2.5.5",
        "resolution-markers = [\"python_full_version >= '3.12'\"]\n",
    );
    s += &pkg("pillow", "13.0.0", "");
    s += &pkg("pysocks", "1.7.1", "");
    s += &pkg(
        "pytest",
        "9.2.0",
        "dependencies = [{ name = \"iniconfig\" }]\n",
    );
    s += &pkg("requests", "2.40.0", "");
    s += "\n[package.optional-dependencies]\nsocks = [{ name = \"pysocks\" }]\n";
    s += r#"
[[package]]
name = "app"
version = "0.1.0"
source = { editable = "." }
dependencies = [
    { name = "click" },
    { name = "numpy", version = "2.4.6", source = { registry = "https://pypi.org/simple" }, marker = "python_full_version < '3.12'" },
    { name = "numpy", version = "2.5.5", source = { registry = "https://pypi.org/simple" }, marker = "python_full_version >= '3.12'" },
    { name = "requests", extra = ["socks"] },
]

[package.optional-dependencies]
plot = [
    { name = "pillow" },
]

[package.dev-dependencies]
dev = [
    { name = "pytest" },
]
"#;
    s
}

fn names(pkgs: &[LockedPackage]) -> Vec<String> {
    pkgs.iter()
        .map(|p| format!("{}=={}", p.name, p.version.as_deref().unwrap_or("")))
        .collect()
}

#[test]
fn the_packages_uv_sync_installs_for_the_interpreter() {
    let text = lock();
    let sel = Selection::default();
    // Python 3.13: numpy's >= 3.12 fork; click without Windows' colorama; the dev group by
    // default; requests with its socks extra; not the plot extra.
    let pkgs = parse(&text, &interp(13, "x86_64"), &sel, None).unwrap();
    assert_eq!(
        names(&pkgs),
        [
            "click==8.5.1",
            "iniconfig==2.3.1",
            "numpy==2.5.5",
            "pysocks==1.7.1",
            "pytest==9.2.0",
            "requests==2.40.0"
        ]
    );
    assert_eq!(
        pkgs[0].wheels[0].file.filename,
        "click-8.5.1-py3-none-any.whl"
    );
    assert_eq!(
        pkgs[0].sdist.as_ref().unwrap().filename,
        "click-8.5.1.tar.gz"
    );
    // Python 3.11, --no-dev, --extra plot.
    let sel = Selection {
        extras: BTreeSet::from(["plot".to_string()]),
        groups: None,
        no_dev: true,
    };
    let pkgs = parse(&text, &interp(11, "x86_64"), &sel, None).unwrap();
    assert_eq!(
        names(&pkgs),
        [
            "click==8.5.1",
            "numpy==2.4.6",
            "pillow==13.0.0",
            "pysocks==1.7.1",
            "requests==2.40.0"
        ]
    );
    // pyproject.toml's default groups: none.
    let none = "[tool.uv]\ndefault-groups = []\n";
    let pkgs = parse(
        &text,
        &interp(13, "x86_64"),
        &Selection::default(),
        Some(none),
    )
    .unwrap();
    assert!(!names(&pkgs).iter().any(|n| n.starts_with("pytest")));
    let all = "[tool.uv]\ndefault-groups = \"all\"\n";
    let pkgs = parse(
        &text,
        &interp(13, "x86_64"),
        &Selection::default(),
        Some(all),
    )
    .unwrap();
    assert!(names(&pkgs).iter().any(|n| n.starts_with("pytest")));
}

#[test]
fn bad_locks_and_selections_are_named() {
    let text = lock();
    let i = interp(13, "x86_64");
    let e = parse(
        &text.replacen("version = 1", "version = 2", 1),
        &i,
        &Selection::default(),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("uv.lock version 2 is not one ocibuild reads (it reads version 1)"),
        "{e}"
    );
    let sel = Selection {
        extras: BTreeSet::from(["gpu".to_string()]),
        ..Selection::default()
    };
    let e = parse(&text, &i, &sel, None).unwrap_err().to_string();
    assert_eq!(e, "the project has no extra `gpu` (it has: plot)");
    let sel = Selection {
        groups: Some(BTreeSet::from(["docs".to_string()])),
        ..Selection::default()
    };
    let e = parse(&text, &i, &sel, None).unwrap_err().to_string();
    assert_eq!(
        e,
        "the project has no dependency group `docs` (it has: dev)"
    );
    let e = parse(&text, &interp(10, "x86_64"), &Selection::default(), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("requires-python >=3.11 does not hold for Python 3.10.2"),
        "{e}"
    );
    let git = text.replacen(
        "name = \"iniconfig\"\nversion = \"2.3.1\"\nsource = { registry = \"https://pypi.org/simple\" }",
        "name = \"iniconfig\"\nversion = \"2.3.1\"\nsource = { git = \"https://g/iniconfig?rev=1#abc\" }",
        1,
    );
    let e = parse(&git, &i, &Selection::default(), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("package iniconfig comes from a git checkout"),
        "{e}"
    );
    assert!(
        e.starts_with(|c: char| c.is_ascii_digit()),
        "placed at its line: {e}"
    );
    let e = parse("version = 1\n", &i, &Selection::default(), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no project"), "{e}");
}

#[test]
fn a_lock_whose_project_changed_is_stale_as_uv_says() {
    let lock = r#"version = 1
[[package]]
name = "App"
version = "0.1.0"
source = { editable = "." }

[package.metadata]
requires-dist = [
    { name = "click", specifier = ">=8" },
    { name = "numpy", specifier = "<3,>=2.4.6" },
    { name = "pillow", marker = "extra == 'plot'", specifier = ">=13.0.0" },
]

[package.metadata.requires-dev]
dev = [{ name = "pytest", specifier = ">=9.2.0" }]
"#;
    let project = r#"[project]
name = "app"
dependencies = ["click>=8", "numpy >=2.4.6, <3"]
[project.optional-dependencies]
plot = ["Pillow>=13.0.0"]
[dependency-groups]
dev = ["pytest>=9.2.0"]
"#;
    assert_eq!(stale(lock, project), None);
    let changed = project.replace("click>=8", "click>=8.2");
    let why = stale(lock, &changed).unwrap();
    assert!(
        why.contains("pyproject.toml has click>=8.2") && why.contains("uv.lock has click>=8"),
        "{why}"
    );
    let added = project.replace(
        "dev = [\"pytest>=9.2.0\"]",
        "dev = [\"pytest>=9.2.0\", \"ruff\"]",
    );
    assert_eq!(
        stale(lock, &added).unwrap(),
        "pyproject.toml has ruff (group:dev)"
    );
    // No project metadata to compare: not said to be stale.
    assert_eq!(stale("version = 1\n", project), None);
}

#[test]
fn the_project_entry_gives_the_name_and_version_and_says_when_it_is_virtual() {
    let e = project(&lock(), "App").unwrap();
    assert_eq!(
        e,
        ProjectEntry {
            name: "app".into(),
            version: Some("0.1.0".into()),
            is_virtual: false,
            members: Vec::new(),
        }
    );
    // A workspace member the project depends on is named.
    let ws = lock().replace(
        "    { name = \"click\" },\n    { name = \"numpy\", version = \"2.4.6\"",
        "    { name = \"click\" },\n    { name = \"lib\" },\n    { name = \"numpy\", version = \"2.4.6\"",
    ) + "\n[[package]]\nname = \"lib\"\nversion = \"0.1.0\"\nsource = { editable = \"lib\" }\n";
    assert_eq!(project(&ws, "app").unwrap().members, ["lib"]);
    let virt = lock().replace(
        "source = { editable = \".\" }",
        "source = { virtual = \".\" }",
    );
    assert!(project(&virt, "app").unwrap().is_virtual);
    // A registry package of that name is not the project.
    let e = project(&lock(), "click").unwrap_err().to_string();
    assert_eq!(
        e,
        "uv.lock has no project `click` (its projects, sources `editable` or `virtual`: app): run `uv lock` in the project"
    );
    let e = project("version = 2\n", "app").unwrap_err().to_string();
    assert!(
        e.starts_with("uv.lock version 2 is not one ocibuild reads"),
        "{e}"
    );
}

/// A workspace: the root project (`editable = "."`) depends on the member `lib`, which depends
/// on pillow; the member `tool`, which nothing depends on, wants pytest. `uv sync` beside the
/// lock installs the root's dependencies and lib's (not lib itself here: a local source), not
/// tool's; a virtual workspace root without `[project]` (no `.` entry) installs every member's.
#[test]
fn a_workspace_installs_the_roots_dependencies_and_its_members_not_every_members() {
    let member = |name: &str, dep: &str| {
        format!("\n[[package]]\nname = \"{name}\"\nversion = \"0.1.0\"\nsource = {{ editable = \"packages/{name}\" }}\ndependencies = [{{ name = \"{dep}\" }}]\n")
    };
    let ws = lock().replace(
        "    { name = \"click\" },\n    { name = \"numpy\", version = \"2.4.6\"",
        "    { name = \"click\" },\n    { name = \"lib\" },\n    { name = \"numpy\", version = \"2.4.6\"",
    ) + &member("lib", "pillow")
        + &member("tool", "pytest");
    let sel = Selection {
        no_dev: true,
        ..Selection::default()
    };
    let pkgs = parse(&ws, &interp(13, "x86_64"), &sel, None).unwrap();
    assert_eq!(
        names(&pkgs),
        [
            "click==8.5.1",
            "numpy==2.5.5",
            "pillow==13.0.0",
            "pysocks==1.7.1",
            "requests==2.40.0"
        ]
    );
    // No root entry (a virtual workspace root is not a package): every member's dependencies.
    let virtual_root = ws.replace(
        "source = { editable = \".\" }",
        "source = { editable = \"packages/app\" }",
    );
    let pkgs = parse(&virtual_root, &interp(13, "x86_64"), &sel, None).unwrap();
    assert!(
        names(&pkgs).contains(&"pytest==9.2.0".to_string()),
        "{:?}",
        names(&pkgs)
    );
}
