//! The resolver's unit tests.

use super::*;
fn pkg(name: &str, version: &str, arch: &str, ma: MultiArch, deps: &str, prov: &str) -> Package {
    Package {
        name: name.into(),
        version: Version::parse(version).unwrap(),
        architecture: arch.into(),
        multi_arch: ma,
        depends: deps.into(),
        provides: parse_provides(prov).unwrap().into(),
        filename: format!("pool/{name}_{version}_{arch}.deb").into(),
        size: 1,
        sha256: Digest::of(name.as_bytes()),
        source_url: "http://x".into(),
    }
}

fn universe(pkgs: Vec<Package>) -> Vec<SourceIndex> {
    let dir = tempfile::tempdir().unwrap();
    vec![SourceIndex::from_packages("http://x", &pkgs, dir.path()).unwrap()]
}

fn names(l: &[Locked]) -> Vec<String> {
    l.iter()
        .map(|l| format!("{}={}", l.name, l.version))
        .collect()
}

#[test]
fn requests_parse() {
    let r = Request::parse("curl").unwrap();
    assert_eq!((r.name.as_str(), r.constraint), ("curl", None));
    let r = Request::parse("curl=7.88.1-10").unwrap();
    assert_eq!(r.constraint.unwrap().to_string(), "= 7.88.1-10");
    let r = Request::parse("curl (>= 7)").unwrap();
    assert_eq!(r.constraint.unwrap().relation, crate::apt::Relation::Ge);
    for bad in ["a | b", "a, b", "a:amd64", "", "A"] {
        assert!(Request::parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn any_qualifier_needs_multi_arch_allowed() {
    use MultiArch::*;
    let idx = universe(vec![
        pkg("app", "1", "amd64", No, "py:any", ""),
        pkg("py", "3", "amd64", No, "", ""),
    ]);
    let req = [Request::parse("app").unwrap()];
    let err = resolve(&idx, "amd64", &req, &Installed::new()).unwrap_err();
    assert!(err.to_string().contains("app → py:any"), "{err}");
    let idx = universe(vec![
        pkg("app", "1", "amd64", No, "py:any", ""),
        pkg("py", "3", "amd64", Allowed, "", ""),
        pkg("other-arch", "1", "arm64", No, "", ""),
    ]);
    let l = resolve(&idx, "amd64", &req, &Installed::new()).unwrap();
    assert_eq!(names(&l), ["app=1", "py=3"]);
    // Packages of another architecture are invisible.
    let err = resolve(
        &idx,
        "amd64",
        &[Request::parse("other-arch").unwrap()],
        &Installed::new(),
    )
    .unwrap_err();
    assert!(matches!(err, AptError::UnknownPackage { .. }), "{err}");
}

#[test]
fn output_is_sorted_and_independent_of_source_order() {
    use MultiArch::*;
    let a = vec![
        pkg("z", "1", "amd64", No, "m, a", ""),
        pkg("m", "1", "all", No, "", ""),
        pkg("a", "2", "amd64", No, "", ""),
        pkg("a", "1", "amd64", No, "", ""),
    ];
    let mut b = a.clone();
    b.reverse();
    let req = [Request::parse("z").unwrap()];
    let la = resolve(&universe(a), "amd64", &req, &Installed::new()).unwrap();
    let lb = resolve(&universe(b), "amd64", &req, &Installed::new()).unwrap();
    assert_eq!(la, lb);
    assert_eq!(names(&la), ["a=2", "m=1", "z=1"]);
}

#[test]
fn clash_without_backtracking_names_both_chains() {
    use MultiArch::*;
    let idx = universe(vec![
        pkg("top", "1", "amd64", No, "x, y", ""),
        pkg("x", "1", "amd64", No, "lib (>= 2)", ""),
        pkg("y", "1", "amd64", No, "lib (<< 2)", ""),
        pkg("lib", "1", "amd64", No, "", ""),
        pkg("lib", "2", "amd64", No, "", ""),
    ]);
    let err = resolve(
        &idx,
        "amd64",
        &[Request::parse("top").unwrap()],
        &Installed::new(),
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("top → y → lib (<< 2)"), "{msg}");
    assert!(
        msg.contains("lib 2 was already chosen for top → x → lib (>= 2)"),
        "{msg}"
    );
}

#[test]
fn suggestions_are_close_names() {
    use MultiArch::*;
    let idx = universe(vec![
        pkg("python3", "3", "amd64", No, "", ""),
        pkg("python3-pip", "1", "all", No, "", ""),
        pkg("zsh", "1", "amd64", No, "", ""),
    ]);
    let err = resolve(
        &idx,
        "amd64",
        &[Request::parse("pyhton3").unwrap()],
        &Installed::new(),
    )
    .unwrap_err();
    match err {
        AptError::UnknownPackage { suggestions, .. } => assert_eq!(suggestions[0], "python3"),
        other => panic!("{other}"),
    }
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    // A name of megabytes: refused without an edit distance to every name (hours), and
    // cut in the message.
    let long = "p".repeat(20 << 20);
    let err = resolve(
        &idx,
        "amd64",
        &[Request::parse(&long).unwrap()],
        &Installed::new(),
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("unknown package `pppp") && msg.len() < 1024,
        "{}",
        &msg[..msg.len().min(1024)]
    );
}

/// A hostile index: one name listed more often than any archive does, and a chain longer
/// than the bound on what a resolution reads. Each is a clear error, not a lookup that
/// reads without end.
#[test]
fn what_a_resolution_reads_is_bounded() {
    use crate::apt::spill::MAX_PER_NAME;
    use MultiArch::*;
    let many: Vec<Package> = (0..=MAX_PER_NAME)
        .map(|i| pkg("x", &format!("1.{i}"), "amd64", No, "", ""))
        .collect();
    let idx = universe(many);
    let err = resolve(
        &idx,
        "amd64",
        &[Request::parse("x").unwrap()],
        &Installed::new(),
    )
    .unwrap_err();
    assert!(
        matches!(err, AptError::NameTooCommon { ref name, limit, .. }
            if name == "x" && limit == MAX_PER_NAME),
        "{err}"
    );
    // Providers count too.
    let many: Vec<Package> = (0..=MAX_PER_NAME)
        .map(|i| pkg(&format!("p{i}"), "1", "amd64", No, "", "v"))
        .collect();
    let idx = universe(many);
    let err = resolve(
        &idx,
        "amd64",
        &[Request::parse("v").unwrap()],
        &Installed::new(),
    )
    .unwrap_err();
    assert!(matches!(err, AptError::NameTooCommon { .. }), "{err}");

    let chain: Vec<Package> = (0..20)
        .map(|i| {
            pkg(
                &format!("c{i}"),
                "1",
                "amd64",
                No,
                &format!("c{}", i + 1),
                "",
            )
        })
        .chain([pkg("c20", "1", "amd64", No, "", "")])
        .collect();
    let idx = universe(chain);
    let req = [Request::parse("c0").unwrap()];
    let err = resolve_reading(&idx, "amd64", &req, &Installed::new(), &[], 10).unwrap_err();
    assert!(matches!(err, AptError::TooManyRead { limit: 10 }), "{err}");
    assert_eq!(
        resolve_reading(&idx, "amd64", &req, &Installed::new(), &[], 100)
            .unwrap()
            .packages
            .len(),
        21
    );
}

#[test]
fn a_package_listed_twice_counts_once_as_first_seen() {
    use MultiArch::*;
    let mut second = pkg("b", "1", "all", No, "nosuch", "");
    second.size = 2;
    let idx = universe(vec![
        pkg("a", "1", "amd64", No, "b", ""),
        pkg("b", "1", "all", No, "", ""),
        second,
    ]);
    assert_eq!(idx[0].named("b").unwrap().len(), 1);
    assert_eq!(idx[0].packages().unwrap().len(), 2);
    let l = resolve(
        &idx,
        "amd64",
        &[Request::parse("a").unwrap()],
        &Installed::new(),
    )
    .unwrap();
    assert_eq!(names(&l), ["a=1", "b=1"]);
    assert_eq!(l[1].size, 1);
    // The later copy provides what the first does not: it is not taken for the package.
    let mut later = pkg("foo", "1", "all", No, "", "bar");
    later.size = 2;
    let idx = universe(vec![pkg("foo", "1", "all", No, "", ""), later]);
    assert!(idx[0].providing("bar").unwrap().is_empty());
    let err = resolve(
        &idx,
        "amd64",
        &[Request::parse("bar").unwrap()],
        &Installed::new(),
    )
    .unwrap_err();
    assert!(matches!(err, AptError::UnknownPackage { .. }), "{err}");
}
