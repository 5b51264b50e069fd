//! The recipe's error messages, table by table: each input and what its one line says.

use super::*;

#[test]
fn syntax_errors() {
    check_all(
        "syntax_errors",
        &[
            "[image\nname = 'x'\n",
            "[image]\nname = 'x\n",
            "[image]\nname = 'x'\nname = 'y'\n",
            "[image]\nname = \"hello\"\n[image]\n",
        ],
    );
}

#[test]
fn schema_errors() {
    check_all(
        "schema_errors",
        &[
            "[image]\nname = \"hello\"\n[images]\n",
            "[image]\nname = \"hello\"\nversion = 2\n",
            &with_img("[[layer]]\nname = \"app\"\nsorce = \"app\"\n"),
            &with_img("[config]\nentry-point = []\n"),
            &with_img("[[test]]\nname = \"t\"\nrun = [\"true\"]\nexit_code = 1\n"),
            &with_img("[podman]\nflags = []\n"),
            &with_img("[base]\nref = \"x\"\n"),
            "[image]\nname = 1\n",
            "[image]\nname = \"hello\"\nsource-date-epoch = \"now\"\n",
            &with_img("[layer]\nname = \"app\"\n"),
            "[[image]]\nname = \"hello\"\n",
            "image = [\"hello\"]\n",
            "image = \"hello\"\n",
            &with_img("[[config]]\n"),
            // Reported in document order, whatever the key order.
            "podman = 1\nbase = 2\n",
            &format!("layer = 1\n{IMG}"),
            &format!("test = [{{ name = \"t\", run = [\"x\"] }}, \"x\"]\n{IMG}"),
            &with_img("[podman]\nargs = \"--privileged\"\n"),
            &with_img("layer = []\n"),
            "[image.name]\n",
            &with_img("[[test]]\nname = \"t\"\nrun = \"make test\"\n"),
            &with_img("[config]\ncmd = [\"a\", 1]\n"),
            &with_img("[config]\nenv = { PORT = 8080 }\n"),
            &with_img("[config]\nexposed-ports = [true]\n"),
            &with_img(
                "[[layer]]\nname = \"a\"\nsrc = \"app\"\ndest = \"/a\"\nignore = \"*.pyc\"\n",
            ),
        ],
    );
}

#[test]
fn image_errors() {
    check_all(
        "image_errors",
        &[
            "",
            "[base]\nimage = \"scratch\"\n",
            "# comment\n[image]\ntag = \"1\"\n",
            "[image]\nname = \"Hello\"\n",
            "[image]\nname = \"\"\n",
            "[image]\nname = \"example.com/hello:1.0\"\n",
            "[image]\nname = \"hello@sha256:abc\"\n",
            "[image]\nname = \"team/-hello\"\n",
            "[image]\nname = \"team//hello\"\n",
            "[image]\nname = \"a___b\"\n",
            "[image]\nname = \"localhost:99999/hello\"\n",
            "[image]\nname = \"exa_mple.com/hello\"\n",
            "[image]\nname = \"hello\"\ntag = \".1\"\n",
            "[image]\nname = \"hello\"\ntag = \"\"\n",
            "[image]\nname = \"hello\"\ncompression = \"xz\"\n",
            "[image]\nname = \"hello\"\ncompression = \"xz\"\ncompression-level = 3\n",
            "[image]\nname = \"hello\"\ncompression-level = 10\n",
            "[image]\nname = \"hello\"\ncompression = \"zstd\"\ncompression-level = 0\n",
            "[image]\nname = \"hello\"\ncompression = \"none\"\ncompression-level = 1\n",
            "[image]\nname = \"hello\"\ncompression-level = \"fast\"\n",
            "[image]\nname = \"hello\"\nsource-date-epoch = -1\n",
            "[image]\nname = \"hello\"\nsource-date-epoch = 253402300800\n",
            "[image]\nname = \"hello\"\nplatform = \"linux\"\n",
            "[image]\nname = \"hello\"\nplatform = \"darwin/arm64\"\n",
            "[image]\nname = \"hello\"\nplatform = \"linux/amd64\"\nplatforms = [\"linux/arm64\"]\n",
            "[image]\nname = \"hello\"\nplatforms = []\n",
            "[image]\nname = \"hello\"\nplatforms = [\"linux/arm64\", \"linux/aarch64\"]\n",
            "[image]\nname = \"hello\"\nplatforms = [\"linux/amd64\", \"darwin/arm64\"]\n",
            &with_img("[base]\nimage = \"\"\n"),
            &with_img("[base]\nimage = \"debian bookworm\"\n"),
        ],
    );
    // Long but valid names and tags.
    let d = fixture();
    let tag = "a".repeat(128);
    assert!(parse_in(
        &d,
        &format!("[image]\nname = \"team/a__b.c-d--e/f\"\ntag = \"{tag}\"\n")
    )
    .is_ok());
    assert!(parse_in(&d, "[image]\nname = \"[::1]:5000/x\"\n").is_ok());
    assert!(parse_in(&d, "[image]\nname = \"Registry.Example.com/x\"\n").is_ok());
    assert_eq!(
        err(&format!("[image]\nname = \"hello\"\ntag = \"{tag}a\"\n")),
        format!(
            "recipe.toml:3:7: invalid image tag `{tag}a`: expected 1 to 128 of \
             `A-Z a-z 0-9 _ . -`, not starting with `.` or `-`"
        )
    );
}

#[test]
fn layer_errors() {
    check_all(
        "layer_errors",
        &[
            &with_img("[[layer]]\nsrc = \"app\"\ndest = \"/app\"\n"),
            &with_img("[[layer]]\nname = \"App\"\n"),
            &with_img("[[layer]]\nname = \"-x\"\n"),
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n\n\
        [[layer]]\nname = \"app\"\n",
            ),
            &with_img("[[layer]]\nname = \"app\"\ndest = \"/app\"\n"),
            &with_img("[[layer]]\nname = \"app\"\nsrc = \"\"\n"),
            &with_img("[[layer]]\nname = \"app\"\nsrc = \"ap\"\ndest = \"/app\"\n"),
            &with_img("[[layer]]\nname = \"app\"\nsrc = \"./app/../nope\"\ndest = \"/app\"\n"),
            &with_img("[[layer]]\nname = \"null\"\nsrc = \"/dev/null\"\ndest = \"/x\"\n"),
            &with_img("[[layer]]\nname = \"app\"\nsrc = \"app\"\n"),
            &with_img("[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"app\"\n"),
            &with_img("[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/srv/../etc\"\n"),
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n\
        ignore-file = \".dockerignore\"\n",
            ),
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n\
        ignore-file = \"plain\"\n",
            ),
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n\
        ignore-file = \"bad.ignore\"\n",
            ),
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n\
        ignore = [\"ok\", \"[abc\"]\n",
            ),
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\nignore = [\"!\"]\n",
            ),
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\nignore = [\"\"]\n",
            ),
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\nignore = [\"a\\\\\"]\n",
            ),
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\nignore = [\"[]\"]\n",
            ),
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\nowner = \"root\"\n",
            ),
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\nowner = \"1000\"\n",
            ),
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n\
        owner = \"1:4294967296\"\n",
            ),
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\nmode = \"keep\"\n",
            ),
        ],
    );
}

#[test]
fn valid_ignore_patterns() {
    for p in [
        "*.pyc",
        "!keep.pyc",
        "**/__pycache__",
        "a?c",
        "[abc]",
        "[^a-z]x",
        "[\\]]",
        "[a\\-z]",
        "\\[literal",
        "dir/",
    ] {
        assert_eq!(grammar::check_pattern(p), Ok(()), "{p}");
    }
}

#[test]
fn config_errors() {
    check_all(
        "config_errors",
        &[
            &with_img("[config]\nenv = { \"\" = \"x\" }\n"),
            &with_img("[config]\nenv = { \"A=B\" = \"x\" }\n"),
            &with_img("[config]\nenv = { A = \"a\\u0000b\" }\n"),
            &with_img("[config]\nworkdir = \"/a\\u0000\"\n"),
            &with_img("[config]\nworkdir = \"app\"\n"),
            &with_img("[config]\nworkdir = \"/app/..\"\n"),
            &with_img("[config]\nuser = \"\"\n"),
            &with_img("[config]\nuser = \"a:b:c\"\n"),
            &with_img("[config]\nuser = \"app user\"\n"),
            &with_img("[config]\nlabels = { \"\" = \"x\" }\n"),
            &with_img("[config]\nannotations = { \" \" = \"x\" }\n"),
            &with_img("[config]\nexposed-ports = [\"80\", 0]\n"),
            &with_img("[config]\nexposed-ports = [\"65536\"]\n"),
            &with_img("[config]\nexposed-ports = [\"80/icmp\"]\n"),
            &with_img("[config]\nexposed-ports = [\"8000-8010\"]\n"),
            &with_img("[config]\nexposed-ports = [-80]\n"),
            &with_img("[config]\nstop-signal = \"SIGTERN\"\n"),
            &with_img("[config]\nstop-signal = \"65\"\n"),
            &with_img("[config]\nstop-signal = \"SIGRTMAX+1\"\n"),
            &with_img("[config]\nvolumes = [\"data\"]\n"),
            &with_img("[config]\nvolumes = [\"/data/../etc\"]\n"),
            &with_img("[config]\nshell = []\n"),
            &with_img("[config]\nshell = [\"bash\", \"-c\"]\n"),
            &with_img("[config.healthcheck]\ninterval = \"30s\"\n"),
            &with_img("[config.healthcheck]\ntest = []\n"),
            &with_img("[config.healthcheck]\ntest = [\"curl\", \"-f\"]\n"),
            &with_img("[config.healthcheck]\ntest = [\"CMD\"]\n"),
            &with_img("[config.healthcheck]\ntest = [\"CMD-SHELL\", \"a\", \"b\"]\n"),
            &with_img("[config.healthcheck]\ntest = [\"NONE\", \"x\"]\n"),
            &with_img("[config.healthcheck]\ntest = [\"NONE\"]\nretries = 3\n"),
            &with_img("[config.healthcheck]\ntest = [\"CMD\", \"/c\"]\ninterval = \"30\"\n"),
            &with_img("[config.healthcheck]\ntest = [\"CMD\", \"/c\"]\ntimeout = \"10us\"\n"),
            &with_img("[config.healthcheck]\ntest = [\"CMD\", \"/c\"]\nretries = -1\n"),
            &with_img("[config.healthcheck]\ntest = [\"CMD\", \"/c\"]\nstart_period = \"1s\"\n"),
        ],
    );
    let d = fixture();
    for s in [
        "SIGTERM",
        "TERM",
        "SIGKILL",
        "9",
        "SIGRTMIN+3",
        "RTMAX-2",
        "SIGWINCH",
    ] {
        let text = with_img(&format!("[config]\nstop-signal = \"{s}\"\n"));
        assert!(parse_in(&d, &text).is_ok(), "{s}");
    }
}

#[test]
fn test_errors() {
    check_all(
        "test_errors",
        &[
            &with_img("[[test]]\nrun = [\"true\"]\n"),
            &with_img("[[test]]\nname = \"\"\nrun = [\"true\"]\n"),
            &with_img(
                "[[test]]\nname = \"t\"\nrun = [\"true\"]\n[[test]]\nname = \"t\"\nrun = [\"x\"]\n",
            ),
            &with_img("[[test]]\nname = \"t\"\nrun = [\"true\"]\ncheck = \"cuda-smoke\"\n"),
            &with_img("[[test]]\nname = \"t\"\n"),
            &with_img("[[test]]\nname = \"t\"\nrun = []\n"),
            &with_img("[[test]]\nname = \"t\"\ncheck = \"cuda\"\n"),
            &with_img("[[test]]\nname = \"t\"\nrun = [\"x\"]\nexit-code = 256\n"),
            &with_img("[[test]]\nname = \"t\"\nrun = [\"x\"]\nexit-code = -1\n"),
            &with_img("[[test]]\nname = \"t\"\nrun = [\"x\"]\ntimeout = 0\n"),
            &with_img("[[test]]\nname = \"t\"\nrun = [\"x\"]\ngpu = \"yes\"\n"),
            &with_img("[[test]]\nname = \"t\"\ncheck = \"cuda-smoke\"\ngpu = \"off\"\n"),
            &with_img("[[test]]\nname = \"t\"\nrun = [\"x\"]\nenv = { \"=\" = \"\" }\n"),
            &with_img("[[test]]\nname = \"t\"\nrun = [\"x\"]\nworkdir = \"tmp\"\n"),
            &with_img("[[test]]\nname = \"t\"\nrun = [\"x\"]\nuser = \":0\"\n"),
        ],
    );
}

#[test]
fn errors_are_one_line() {
    assert_eq!(
        err("[image]\nname = \"\"\"\nmulti\tline\"\"\"\n"),
        "recipe.toml:2:8: invalid image name `multi\\tline`: invalid path component \
         `multi\\tline`: expected lowercase letters and digits, separated by `.`, `_`, `__` or \
         `-`; expected a repository like `app` or `example.com/team/app`"
    );
    assert_eq!(
        err("[image]\nname = \"a\\nb\"\n"),
        "recipe.toml:2:8: invalid image name `a\\nb`: invalid path component `a\\nb`: expected \
         lowercase letters and digits, separated by `.`, `_`, `__` or `-`; expected a \
         repository like `app` or `example.com/team/app`"
    );
    assert_eq!(one_line("a\n  b\n\nc"), "a; b; c");
}

/// The examples in docs/recipe.md parse, and mean what the docs say.
#[test]
fn docs_examples_parse() {
    let doc = include_str!("../../../../../docs/recipe.md");
    let all: Vec<&str> = doc
        .split("```toml\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .collect();
    // The examples of [config.healthcheck] and [args], checked here; the others below.
    let d = fixture();
    let own = |b: &str| b.starts_with("[config.healthcheck]") || b.starts_with("[args]");
    for b in all.iter().filter(|b| own(b)) {
        let r = parse_in(&d, &with_img(b)).unwrap_or_else(|e| panic!("{e}\n{b}"));
        assert!(r.config.healthcheck.is_some() || r.args.is_some(), "{b}");
    }
    // The `cuda-archs` example, a whole `[image]`.
    let cuda = |b: &str| b.contains("cuda-archs");
    for b in all.iter().filter(|b| cuda(b)) {
        let r = parse_in(&d, b).unwrap_or_else(|e| panic!("{e}\n{b}"));
        assert_eq!(r.image.cuda.map(|t| t.names()), Some(vec!["sm_90".into()]));
    }
    let blocks: Vec<&str> = all
        .iter()
        .filter(|b| !own(b) && !cuda(b))
        .copied()
        .collect();
    assert_eq!(
        blocks.len(),
        8,
        "a complete and a minimal example, [accounts], [[path]], a step, several platforms, an \
         archive each, a pylock each"
    );
    // The [[path]] example: a directory and a symlink.
    let paths = blocks.iter().position(|b| b.contains("[[path]]")).unwrap();
    let dp = fixture();
    let r = parse_in(&dp, &format!("[image]\nname = \"a\"\n{}", blocks[paths])).unwrap();
    assert_eq!(r.paths.len(), 2);
    assert_eq!((r.paths[0].mode, r.paths[0].uid), (0o700, 1000));
    assert_eq!(
        r.paths[1].kind,
        crate::recipe::PathKind::Symlink {
            target: "/usr/bin/python3".into()
        }
    );
    let blocks: Vec<&str> = blocks
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != paths)
        .map(|(_, b)| *b)
        .collect();
    // The [[step]] example: a builder recipe and the step's input beside it.
    let ds = fixture();
    fs::create_dir(ds.path().join("ext")).unwrap();
    fs::write(ds.path().join("builder.toml"), "[image]\nname = \"b\"\n").unwrap();
    let r = parse_in(&ds, &format!("[image]\nname = \"a\"\n{}", blocks[3])).unwrap();
    let step = &r.steps[0];
    assert_eq!(step.name, "ext");
    assert!(
        matches!(&step.image, crate::recipe::StepImage::Recipe { written, .. } if written == "builder.toml")
    );
    assert_eq!(
        step.outputs[0].dest,
        "/usr/local/lib/python3.13/dist-packages"
    );
    assert!(step.outputs[0].in_image && !step.network);
    let blocks: Vec<&str> = blocks
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3)
        .map(|(_, b)| *b)
        .collect();
    let d0 = fixture();
    let multi = parse_in(&d0, blocks[3]).unwrap();
    let names: Vec<String> = multi
        .platforms()
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    assert_eq!(names, ["linux/amd64", "linux/arm64/v8"]);
    assert_eq!(multi.lock_view().as_deref(), Some("linux/amd64"));
    // Each platform's interpreter archive, picked for it.
    let archives = parse_in(&d0, &format!("{}\n{}", blocks[3], blocks[4])).unwrap();
    let arm = archives
        .for_platform(&crate::image::Platform::parse("linux/arm64").unwrap())
        .unwrap();
    match &arm.python.as_ref().unwrap().source {
        crate::recipe::PythonSource::Archive(a) => assert!(a.url.contains("aarch64"), "{a:?}"),
        other => panic!("{other:?}"),
    }
    match &archives.python.as_ref().unwrap().source {
        crate::recipe::PythonSource::Archive(a) => assert!(a.url.contains("x86_64"), "{a:?}"),
        other => panic!("{other:?}"),
    }
    // Each platform's pylock.toml, picked for it.
    for f in ["pylock.amd64.toml", "pylock.arm64.toml"] {
        fs::write(d0.path().join(f), "lock-version = \"1.0\"\n").unwrap();
    }
    let locks = parse_in(&d0, &format!("{}\n[python]\n{}", blocks[3], blocks[5])).unwrap();
    let lock_of = |r: &Recipe| r.python.as_ref().unwrap().packages.clone().unwrap();
    assert_eq!(lock_of(&locks).written(), "pylock.amd64.toml");
    let arm = locks
        .for_platform(&crate::image::Platform::parse("linux/arm64").unwrap())
        .unwrap();
    assert_eq!(lock_of(&arm).written(), "pylock.arm64.toml");
    let d = fixture();
    fs::create_dir(d.path().join("deploy")).unwrap();
    fs::write(d.path().join("deploy/app.conf"), "x\n").unwrap();
    let r = parse_in(&d, blocks[0]).unwrap();
    assert_eq!(r.image.reference(), "example.com/team/hello:1.0");
    assert_eq!(r.image.platform.to_string(), "linux/arm64/v8");
    assert_eq!(r.image.compression, Compression::Zstd(5));
    assert_eq!(r.layers.len(), 2);
    assert_eq!(r.config.exposed_ports, ["53/udp", "8080/tcp"]);
    assert_eq!(r.tests[1].gpu, Gpu::Optional);
    let r = parse_in(&d, blocks[1]).unwrap();
    assert_eq!(r.image.reference(), "hello:latest");
    assert_eq!(r.image.platform, Platform::host());
    let r = parse_in(&d, &format!("[image]\nname = \"a\"\n{}", blocks[2])).unwrap();
    let groups: Vec<(&str, u32)> = r
        .accounts
        .groups
        .iter()
        .map(|g| (g.name.as_str(), g.gid))
        .collect();
    assert_eq!(groups, [("data", 2000), ("app", 1000)]);
    let u = &r.accounts.users[0];
    assert_eq!(
        (
            u.name.as_str(),
            u.uid,
            u.gid,
            u.home.as_str(),
            u.shell.as_deref()
        ),
        ("app", 1000, 1000, "/home/app", None)
    );
    assert_eq!(r.config.user.as_deref(), Some("app"));
    assert!(
        r.config
            .user_at
            .as_deref()
            .is_some_and(|a| a == "recipe.toml:13:8"),
        "{:?}",
        r.config.user_at
    );
}

#[test]
fn apt_and_python_errors() {
    let src = "[[apt.source]]\nurl = \"https://deb.example/debian\"\nsuite = \"stable\"\ncomponents = [\"main\"]\nsigned-by = \"k.asc\"\n";
    check_all("apt_and_python_errors", &[
        &with_img("[apt]\npackages = [\"x\"]\n"),
        &with_img(&format!("{src}[apt]\npackages = [\"Python3\"]\n")),
        &with_img("[[apt.source]]\nurl = \"ftp://x\"\nsuite = \"s\"\ncomponents = [\"main\"]\n[apt]\npackages = [\"a1\"]\n"),
        &with_img("[[apt.source]]\nurl = \"https://x/d\"\nsuite = \"s\"\ncomponents = [\"main\"]\n[apt]\npackages = [\"a1\"]\n"),
        &with_img("[python]\npath = \"/usr/bin/python3\"\narchive = { url = \"a.tgz\", sha256 = \"00\", prefix = \"/opt/p\" }\n"),
        &with_img("[python]\nversion = \"3\"\n"),
        &with_img("[python]\nlock = \"pylock.toml\"\nrequirements = \"r.txt\"\n"),
        &with_img("[python]\nindex = \"https://pypi.example/simple\"\n"),
        &with_img("[[apt.source]]\nurl = \"https://deb.example/debian\"\nsuite = \"stable\"\ncomponents = [\"main\"]\nsigned-by = \"missing.asc\"\n[apt]\npackages = [\"a1\"]\n"),
        &with_img("[base]\nimage = \"debian@sha256:abc\"\n"),
        &with_img("[python]\nlock = \"missing.toml\"\n"),
    ]);
}

/// A value of megabytes, and a path of kilobytes, are cut in the message: it stays short, and
/// still names the file, the field and what is wrong.
#[test]
fn long_values_are_cut_in_messages() {
    let big = "A".repeat(20 << 20);
    let long_path = vec!["d".repeat(200); 44].join("/");
    for (text, says) in [
        (format!("[image]\nname = \"{big}\"\n"), "invalid image name `AAAA"),
        (
            format!("[image]\nname = \"x\"\ntag = \"{big}\"\n"),
            "invalid image tag `AAAA",
        ),
        (
            format!("[image]\nname = \"x\"\ncompression = \"{big}\"\n"),
            "unknown compression `AAAA",
        ),
        (
            format!("[image]\nname = \"x\"\n[[layer]]\nname = \"a\"\nsrc = \"app\"\ndest = \"{big}\"\n"),
            "layer `a`: invalid dest `AAAA",
        ),
        (
            format!("[image]\nname = \"x\"\n{big} = 1\n"),
            "unknown field `AAAA",
        ),
        (
            format!("[image]\nname = \"x\"\n[[layer]]\nname = \"a\"\nsrc = \"{long_path}\"\ndest = \"/a\"\n"),
            "layer `a`: cannot access source `",
        ),
        (
            format!("[image]\nname = \"x\"\n[[layer]]\nname = \"a\"\nsrc = \"app\"\ndest = \"/a\"\nignore-file = \"{long_path}\"\n"),
            "layer `a`: ignore file `",
        ),
    ] {
        let e = err(&text);
        assert!(e.len() < 1024, "{} bytes: {}", e.len(), &e[..1024]);
        assert!(e.starts_with("recipe.toml:") && e.contains(says), "{e}");
        assert!(e.contains(" bytes in all)"), "{e}");
    }
    // A recipe path of kilobytes is cut where it names the file.
    let d = fixture();
    let e = parse(
        &format!("[image]\nname = \"{big}\"\n"),
        Path::new(&long_path),
        d.path(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.len() < 1024 && e.contains("invalid image name"), "{e}");
}
