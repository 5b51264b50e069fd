//! The recipe's error messages, table by table: each input and what its one line says.

use super::*;

#[test]
fn syntax_errors() {
    check_all(&[
        (
            "[image\nname = 'x'\n",
            "recipe.toml:1:7: unclosed table, expected `]`",
        ),
        (
            "[image]\nname = 'x\n",
            "recipe.toml:2:10: invalid literal string, expected `'`",
        ),
        (
            "[image]\nname = 'x'\nname = 'y'\n",
            "recipe.toml:3:1: duplicate key",
        ),
        (
            "[image]\nname = \"hello\"\n[image]\n",
            "recipe.toml:3:2: duplicate key",
        ),
    ]);
}

#[test]
fn schema_errors() {
    check_all(&[
        (
            "[image]\nname = \"hello\"\n[images]\n",
            "recipe.toml:3:2: unknown field `images`, expected one of `image`, `base`, `layer`, \
             `config`, `podman`, `test`, `apt`, `python`",
        ),
        (
            "[image]\nname = \"hello\"\nversion = 2\n",
            "recipe.toml:3:1: unknown field `version`, expected one of `name`, `tag`, \
             `compression`, `compression-level`, `source-date-epoch`, `platform`",
        ),
        (
            &with_img("[[layer]]\nname = \"app\"\nsorce = \"app\"\n"),
            "recipe.toml:5:1: unknown field `sorce`, expected one of `name`, `src`, `dest`, \
             `ignore`, `ignore-file`, `owner`, `mode`",
        ),
        (
            &with_img("[config]\nentry-point = []\n"),
            "recipe.toml:4:1: unknown field `entry-point`, expected one of `env`, `entrypoint`, \
             `cmd`, `workdir`, `user`, `labels`, `exposed-ports`, `annotations`, `stop-signal`",
        ),
        (
            &with_img("[[test]]\nname = \"t\"\nrun = [\"true\"]\nexit_code = 1\n"),
            "recipe.toml:6:1: unknown field `exit_code`, expected one of `name`, `run`, `check`, \
             `env`, `workdir`, `user`, `exit-code`, `expect-output`, `timeout`, `gpu`",
        ),
        (
            &with_img("[podman]\nflags = []\n"),
            "recipe.toml:4:1: unknown field `flags`, expected `args`",
        ),
        (
            &with_img("[base]\nref = \"x\"\n"),
            "recipe.toml:4:1: unknown field `ref`, expected `image`",
        ),
        (
            "[image]\nname = 1\n",
            "recipe.toml:2:8: invalid type: integer `1`, expected a string",
        ),
        (
            "[image]\nname = \"hello\"\nsource-date-epoch = \"now\"\n",
            "recipe.toml:3:21: invalid type: string \"now\", expected an integer",
        ),
        (
            &with_img("[layer]\nname = \"app\"\n"),
            "recipe.toml:3:1: `layer` is an array of tables: write `[[layer]]` (double \
             brackets) for each entry",
        ),
        (
            "[[image]]\nname = \"hello\"\n",
            "recipe.toml:1:1: `image` is a single table, not an array of tables: write `[image]`",
        ),
        (
            "image = [\"hello\"]\n",
            "recipe.toml:1:9: `image` is a single table, not an array of tables: write `[image]`",
        ),
        (
            "image = \"hello\"\n",
            "recipe.toml:1:9: invalid type: string, expected a table: write `[image]`",
        ),
        (
            &with_img("[[config]]\n"),
            "recipe.toml:3:1: `config` is a single table, not an array of tables: write \
             `[config]`",
        ),
        (
            // Reported in document order, whatever the key order.
            "podman = 1\nbase = 2\n",
            "recipe.toml:1:10: invalid type: integer, expected a table: write `[podman]`",
        ),
        (
            &format!("layer = 1\n{IMG}"),
            "recipe.toml:1:9: invalid type: integer, expected an array of tables: write \
             `[[layer]]` for each entry",
        ),
        (
            &format!("test = [{{ name = \"t\", run = [\"x\"] }}, \"x\"]\n{IMG}"),
            "recipe.toml:1:38: invalid type: string, expected a table: write `[[test]]` for \
             each entry",
        ),
        (
            &with_img("[podman]\nargs = \"--privileged\"\n"),
            "recipe.toml:4:8: invalid type: string \"--privileged\", expected an array",
        ),
        (
            &with_img("layer = []\n"),
            "recipe.toml:3:1: unknown field `layer`, expected one of `name`, `tag`, \
             `compression`, `compression-level`, `source-date-epoch`, `platform`; keys after a `[table]` header \
             belong to that table: move top-level keys above the first header",
        ),
        (
            "[image.name]\n",
            "recipe.toml:1:1: invalid type: table, expected a string",
        ),
        (
            &with_img("[[test]]\nname = \"t\"\nrun = \"make test\"\n"),
            "recipe.toml:5:7: invalid type: string \"make test\", expected an array of strings \
             (argv), like [\"/bin/sh\", \"-c\", \"echo hi\"]",
        ),
        (
            &with_img("[config]\ncmd = [\"a\", 1]\n"),
            "recipe.toml:4:13: invalid type: integer `1`, expected a string",
        ),
        (
            &with_img("[config]\nenv = { PORT = 8080 }\n"),
            "recipe.toml:4:16: invalid type: integer `8080`, expected a string",
        ),
        (
            &with_img("[config]\nexposed-ports = [true]\n"),
            "recipe.toml:4:18: invalid type: boolean `true`, expected a port like 8080, \"8080\" \
             or \"53/udp\"",
        ),
        (
            &with_img(
                "[[layer]]\nname = \"a\"\nsrc = \"app\"\ndest = \"/a\"\nignore = \"*.pyc\"\n",
            ),
            "recipe.toml:7:10: invalid type: string \"*.pyc\", expected an array",
        ),
    ]);
}

#[test]
fn image_errors() {
    check_all(&[
        (
            "",
            "recipe.toml:1:1: missing table `[image]`: a recipe needs at least `[image]` with \
             `name = \"...\"`",
        ),
        (
            "[base]\nimage = \"scratch\"\n",
            "recipe.toml:1:1: missing table `[image]`: a recipe needs at least `[image]` with \
             `name = \"...\"`",
        ),
        (
            "# comment\n[image]\ntag = \"1\"\n",
            "recipe.toml:2:1: [image]: missing required key `name` (the repository, like \
             `example.com/team/app`)",
        ),
        (
            "[image]\nname = \"Hello\"\n",
            "recipe.toml:2:8: invalid image name `Hello`: must be lowercase; expected a \
             repository like `app` or `example.com/team/app`",
        ),
        (
            "[image]\nname = \"\"\n",
            "recipe.toml:2:8: invalid image name ``: must not be empty; expected a repository \
             like `app` or `example.com/team/app`",
        ),
        (
            "[image]\nname = \"example.com/hello:1.0\"\n",
            "recipe.toml:2:8: invalid image name `example.com/hello:1.0`: must not contain a \
             tag; put it in `tag = \"...\"`",
        ),
        (
            "[image]\nname = \"hello@sha256:abc\"\n",
            "recipe.toml:2:8: invalid image name `hello@sha256:abc`: must not contain a digest; \
             expected a repository like `app` or `example.com/team/app`",
        ),
        (
            "[image]\nname = \"team/-hello\"\n",
            "recipe.toml:2:8: invalid image name `team/-hello`: invalid path component \
             `-hello`: expected lowercase letters and digits, separated by `.`, `_`, `__` or \
             `-`; expected a repository like `app` or `example.com/team/app`",
        ),
        (
            "[image]\nname = \"team//hello\"\n",
            "recipe.toml:2:8: invalid image name `team//hello`: invalid path component ``: \
             expected lowercase letters and digits, separated by `.`, `_`, `__` or `-`; \
             expected a repository like `app` or `example.com/team/app`",
        ),
        (
            "[image]\nname = \"a___b\"\n",
            "recipe.toml:2:8: invalid image name `a___b`: invalid path component `a___b`: \
             expected lowercase letters and digits, separated by `.`, `_`, `__` or `-`; \
             expected a repository like `app` or `example.com/team/app`",
        ),
        (
            "[image]\nname = \"localhost:99999/hello\"\n",
            "recipe.toml:2:8: invalid image name `localhost:99999/hello`: invalid registry \
             host `localhost:99999`: invalid port `99999`, expected 1 to 65535",
        ),
        (
            "[image]\nname = \"exa_mple.com/hello\"\n",
            "recipe.toml:2:8: invalid image name `exa_mple.com/hello`: invalid registry host \
             `exa_mple.com`: expected a host name like `example.com` or `localhost`",
        ),
        (
            "[image]\nname = \"hello\"\ntag = \".1\"\n",
            "recipe.toml:3:7: invalid image tag `.1`: expected 1 to 128 of `A-Z a-z 0-9 _ . -`, \
             not starting with `.` or `-`",
        ),
        (
            "[image]\nname = \"hello\"\ntag = \"\"\n",
            "recipe.toml:3:7: invalid image tag ``: expected 1 to 128 of `A-Z a-z 0-9 _ . -`, \
             not starting with `.` or `-`",
        ),
        (
            "[image]\nname = \"hello\"\ncompression = \"xz\"\n",
            "recipe.toml:3:15: unknown compression `xz`, expected `gzip`, `zstd` or `none`",
        ),
        (
            "[image]\nname = \"hello\"\ncompression = \"xz\"\ncompression-level = 3\n",
            "recipe.toml:3:15: unknown compression `xz`, expected `gzip`, `zstd` or `none`",
        ),
        (
            "[image]\nname = \"hello\"\ncompression-level = 10\n",
            "recipe.toml:3:21: compression-level 10 is out of range for gzip (expected 1 to 9)",
        ),
        (
            "[image]\nname = \"hello\"\ncompression = \"zstd\"\ncompression-level = 0\n",
            "recipe.toml:4:21: compression-level 0 is out of range for zstd (expected 1 to 19)",
        ),
        (
            "[image]\nname = \"hello\"\ncompression = \"none\"\ncompression-level = 1\n",
            "recipe.toml:4:21: compression-level needs compression `gzip` or `zstd`, not `none`",
        ),
        (
            "[image]\nname = \"hello\"\ncompression-level = \"fast\"\n",
            "recipe.toml:3:21: invalid type: string \"fast\", expected an integer",
        ),
        (
            "[image]\nname = \"hello\"\nsource-date-epoch = -1\n",
            "recipe.toml:3:21: invalid source-date-epoch `-1`: expected seconds since \
             1970-01-01 UTC (an integer >= 0)",
        ),
        (
            "[image]\nname = \"hello\"\nplatform = \"linux\"\n",
            "recipe.toml:3:12: invalid platform `linux`: expected `os/arch[/variant]`, like \
             `linux/amd64` or `linux/arm64/v8`",
        ),
        (
            "[image]\nname = \"hello\"\nplatform = \"darwin/arm64\"\n",
            "recipe.toml:3:12: invalid platform `darwin/arm64`: unsupported os `darwin`: \
             ocibuild builds `linux` images",
        ),
        (
            &with_img("[base]\nimage = \"\"\n"),
            "recipe.toml:4:9: invalid base image ``: expected `scratch` or an image reference \
             like `debian:bookworm-slim` or `example.com/team/base@sha256:...`",
        ),
        (
            &with_img("[base]\nimage = \"debian bookworm\"\n"),
            "recipe.toml:4:9: invalid base image `debian bookworm`: expected `scratch` or an \
             image reference like `debian:bookworm-slim` or `example.com/team/base@sha256:...`",
        ),
    ]);
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
    check_all(&[
        (
            &with_img("[[layer]]\nsrc = \"app\"\ndest = \"/app\"\n"),
            "recipe.toml:3:1: layer #1: missing required key `name` (a unique name like `app`)",
        ),
        (
            &with_img("[[layer]]\nname = \"App\"\n"),
            "recipe.toml:4:8: invalid layer name `App`: expected lowercase letters, digits, `.`, \
             `_` and `-`, starting with a letter or digit",
        ),
        (
            &with_img("[[layer]]\nname = \"-x\"\n"),
            "recipe.toml:4:8: invalid layer name `-x`: expected lowercase letters, digits, `.`, \
             `_` and `-`, starting with a letter or digit",
        ),
        (
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n\n\
                 [[layer]]\nname = \"app\"\n",
            ),
            "recipe.toml:9:8: duplicate layer name `app` (first used at line 4)",
        ),
        (
            &with_img("[[layer]]\nname = \"app\"\ndest = \"/app\"\n"),
            "recipe.toml:3:1: layer `app`: missing required key `src` (a file or directory, \
             relative to the recipe's directory)",
        ),
        (
            &with_img("[[layer]]\nname = \"app\"\nsrc = \"\"\n"),
            "recipe.toml:5:7: layer `app`: `src` is empty; use \".\" for the recipe's directory",
        ),
        (
            &with_img("[[layer]]\nname = \"app\"\nsrc = \"ap\"\ndest = \"/app\"\n"),
            "recipe.toml:5:7: layer `app`: source `ap` does not exist (resolved to {dir}/ap)",
        ),
        (
            &with_img("[[layer]]\nname = \"app\"\nsrc = \"./app/../nope\"\ndest = \"/app\"\n"),
            "recipe.toml:5:7: layer `app`: source `./app/../nope` does not exist (resolved to \
             {dir}/app/../nope)",
        ),
        (
            &with_img("[[layer]]\nname = \"null\"\nsrc = \"/dev/null\"\ndest = \"/x\"\n"),
            "recipe.toml:5:7: layer `null`: source `/dev/null` is neither a file nor a \
             directory (resolved to /dev/null)",
        ),
        (
            &with_img("[[layer]]\nname = \"app\"\nsrc = \"app\"\n"),
            "recipe.toml:3:1: layer `app`: missing required key `dest` (an absolute path in the \
             image, like `/app`)",
        ),
        (
            &with_img("[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"app\"\n"),
            "recipe.toml:6:8: layer `app`: invalid dest `app`: expected an absolute path in the \
             image (starting with `/`)",
        ),
        (
            &with_img("[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/srv/../etc\"\n"),
            "recipe.toml:6:8: layer `app`: invalid dest `/srv/../etc`: must not contain `..`",
        ),
        (
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n\
                 ignore-file = \".dockerignore\"\n",
            ),
            "recipe.toml:7:15: layer `app`: ignore file `.dockerignore` does not exist \
             (resolved to {dir}/.dockerignore)",
        ),
        (
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n\
                 ignore-file = \"plain\"\n",
            ),
            "recipe.toml:7:15: layer `app`: cannot read ignore file `plain` (resolved to \
             {dir}/plain): Is a directory (os error 21)",
        ),
        (
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n\
                 ignore-file = \"bad.ignore\"\n",
            ),
            "recipe.toml:7:15: layer `app`: invalid ignore pattern `foo[a-` at \
             {dir}/bad.ignore:3: unclosed `[`",
        ),
        (
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n\
                 ignore = [\"ok\", \"[abc\"]\n",
            ),
            "recipe.toml:7:17: layer `app`: invalid ignore pattern `[abc`: unclosed `[`",
        ),
        (
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\nignore = [\"!\"]\n",
            ),
            "recipe.toml:7:11: layer `app`: invalid ignore pattern `!`: `!` must be followed by \
             a pattern",
        ),
        (
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\nignore = [\"\"]\n",
            ),
            "recipe.toml:7:11: layer `app`: invalid ignore pattern ``: empty pattern",
        ),
        (
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\nignore = [\"a\\\\\"]\n",
            ),
            "recipe.toml:7:11: layer `app`: invalid ignore pattern `a\\`: ends with an \
             unescaped `\\`",
        ),
        (
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\nignore = [\"[]\"]\n",
            ),
            "recipe.toml:7:11: layer `app`: invalid ignore pattern `[]`: `-` or `]` out of \
             place in `[...]` (escape it with `\\`)",
        ),
        (
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\nowner = \"root\"\n",
            ),
            "recipe.toml:7:9: layer `app`: invalid owner `root`: expected numeric `uid:gid`, \
             like `1000:1000`",
        ),
        (
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\nowner = \"1000\"\n",
            ),
            "recipe.toml:7:9: layer `app`: invalid owner `1000`: expected numeric `uid:gid`, \
             like `1000:1000`",
        ),
        (
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n\
                 owner = \"1:4294967296\"\n",
            ),
            "recipe.toml:7:9: layer `app`: invalid owner `1:4294967296`: expected numeric \
             `uid:gid`, like `1000:1000`",
        ),
        (
            &with_img(
                "[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\nmode = \"keep\"\n",
            ),
            "recipe.toml:7:8: layer `app`: unknown mode `keep`, expected `normalize` or \
             `preserve`",
        ),
    ]);
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
    check_all(&[
        (
            &with_img("[config]\nenv = { \"\" = \"x\" }\n"),
            "recipe.toml:4:9: [config]: invalid env name ``: must not be empty",
        ),
        (
            &with_img("[config]\nenv = { \"A=B\" = \"x\" }\n"),
            "recipe.toml:4:9: [config]: invalid env name `A=B`: must not contain `=`",
        ),
        (
            &with_img("[config]\nenv = { A = \"a\\u0000b\" }\n"),
            "recipe.toml:4:13: [config]: env `A`: value must not contain NUL",
        ),
        (
            &with_img("[config]\nworkdir = \"/a\\u0000\"\n"),
            "recipe.toml:4:11: [config]: invalid workdir `/a\\0`: must not contain NUL",
        ),
        (
            &with_img("[config]\nworkdir = \"app\"\n"),
            "recipe.toml:4:11: [config]: invalid workdir `app`: expected an absolute path in \
             the image (starting with `/`)",
        ),
        (
            &with_img("[config]\nworkdir = \"/app/..\"\n"),
            "recipe.toml:4:11: [config]: invalid workdir `/app/..`: must not contain `..`",
        ),
        (
            &with_img("[config]\nuser = \"\"\n"),
            "recipe.toml:4:8: [config]: invalid user ``: expected `name`, `uid`, `name:group` \
             or `uid:gid`",
        ),
        (
            &with_img("[config]\nuser = \"a:b:c\"\n"),
            "recipe.toml:4:8: [config]: invalid user `a:b:c`: expected `name`, `uid`, \
             `name:group` or `uid:gid`",
        ),
        (
            &with_img("[config]\nuser = \"app user\"\n"),
            "recipe.toml:4:8: [config]: invalid user `app user`: expected `name`, `uid`, \
             `name:group` or `uid:gid`",
        ),
        (
            &with_img("[config]\nlabels = { \"\" = \"x\" }\n"),
            "recipe.toml:4:12: [config]: label keys must not be empty",
        ),
        (
            &with_img("[config]\nannotations = { \" \" = \"x\" }\n"),
            "recipe.toml:4:17: [config]: annotation keys must not be empty",
        ),
        (
            &with_img("[config]\nexposed-ports = [\"80\", 0]\n"),
            "recipe.toml:4:24: invalid exposed port `0`: expected `port[/tcp|udp|sctp]` with \
             port 1 to 65535, like `8080` or `53/udp`",
        ),
        (
            &with_img("[config]\nexposed-ports = [\"65536\"]\n"),
            "recipe.toml:4:18: invalid exposed port `65536`: expected `port[/tcp|udp|sctp]` \
             with port 1 to 65535, like `8080` or `53/udp`",
        ),
        (
            &with_img("[config]\nexposed-ports = [\"80/icmp\"]\n"),
            "recipe.toml:4:18: invalid exposed port `80/icmp`: expected `port[/tcp|udp|sctp]` \
             with port 1 to 65535, like `8080` or `53/udp`",
        ),
        (
            &with_img("[config]\nexposed-ports = [\"8000-8010\"]\n"),
            "recipe.toml:4:18: invalid exposed port `8000-8010`: expected \
             `port[/tcp|udp|sctp]` with port 1 to 65535, like `8080` or `53/udp`",
        ),
        (
            &with_img("[config]\nexposed-ports = [-80]\n"),
            "recipe.toml:4:18: invalid exposed port `-80`: expected `port[/tcp|udp|sctp]` with \
             port 1 to 65535, like `8080` or `53/udp`",
        ),
        (
            &with_img("[config]\nstop-signal = \"SIGTERN\"\n"),
            "recipe.toml:4:15: invalid stop-signal `SIGTERN`: expected a signal name like \
             `SIGTERM` or `SIGRTMIN+3`, or a number 1 to 64",
        ),
        (
            &with_img("[config]\nstop-signal = \"65\"\n"),
            "recipe.toml:4:15: invalid stop-signal `65`: expected a signal name like `SIGTERM` \
             or `SIGRTMIN+3`, or a number 1 to 64",
        ),
        (
            &with_img("[config]\nstop-signal = \"SIGRTMAX+1\"\n"),
            "recipe.toml:4:15: invalid stop-signal `SIGRTMAX+1`: expected a signal name like \
             `SIGTERM` or `SIGRTMIN+3`, or a number 1 to 64",
        ),
    ]);
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
    check_all(&[
        (
            &with_img("[[test]]\nrun = [\"true\"]\n"),
            "recipe.toml:3:1: test #1: missing required key `name` (a unique name like `smoke`)",
        ),
        (
            &with_img("[[test]]\nname = \"\"\nrun = [\"true\"]\n"),
            "recipe.toml:4:8: invalid test name \"\": expected a non-empty name without control \
             characters",
        ),
        (
            &with_img(
                "[[test]]\nname = \"t\"\nrun = [\"true\"]\n[[test]]\nname = \"t\"\nrun = [\"x\"]\n",
            ),
            "recipe.toml:7:8: duplicate test name `t` (first used at line 4)",
        ),
        (
            &with_img("[[test]]\nname = \"t\"\nrun = [\"true\"]\ncheck = \"cuda-smoke\"\n"),
            "recipe.toml:6:9: test `t`: has both `run` and `check`; keep one",
        ),
        (
            &with_img("[[test]]\nname = \"t\"\n"),
            "recipe.toml:3:1: test `t`: needs `run = [...]` (a command) or `check = \"...\"` \
             (one of `cuda-smoke`)",
        ),
        (
            &with_img("[[test]]\nname = \"t\"\nrun = []\n"),
            "recipe.toml:5:7: test `t`: `run` is empty; give the command's argv, like \
             [\"/bin/app\", \"--version\"]",
        ),
        (
            &with_img("[[test]]\nname = \"t\"\ncheck = \"cuda\"\n"),
            "recipe.toml:5:9: test `t`: unknown check `cuda`, expected one of `cuda-smoke`",
        ),
        (
            &with_img("[[test]]\nname = \"t\"\nrun = [\"x\"]\nexit-code = 256\n"),
            "recipe.toml:6:13: test `t`: invalid exit-code `256`: expected 0 to 255",
        ),
        (
            &with_img("[[test]]\nname = \"t\"\nrun = [\"x\"]\nexit-code = -1\n"),
            "recipe.toml:6:13: test `t`: invalid exit-code `-1`: expected 0 to 255",
        ),
        (
            &with_img("[[test]]\nname = \"t\"\nrun = [\"x\"]\ntimeout = 0\n"),
            "recipe.toml:6:11: test `t`: invalid timeout `0`: expected a number of seconds >= 1",
        ),
        (
            &with_img("[[test]]\nname = \"t\"\nrun = [\"x\"]\ngpu = \"yes\"\n"),
            "recipe.toml:6:7: test `t`: unknown gpu `yes`, expected `required`, `optional` or \
             `off`",
        ),
        (
            &with_img("[[test]]\nname = \"t\"\ncheck = \"cuda-smoke\"\ngpu = \"off\"\n"),
            "recipe.toml:6:7: test `t`: check `cuda-smoke` needs a GPU; use `gpu = \"required\"` \
             (the default) or `\"optional\"` (skip on hosts without one)",
        ),
        (
            &with_img("[[test]]\nname = \"t\"\nrun = [\"x\"]\nenv = { \"=\" = \"\" }\n"),
            "recipe.toml:6:9: test `t`: invalid env name `=`: must not contain `=`",
        ),
        (
            &with_img("[[test]]\nname = \"t\"\nrun = [\"x\"]\nworkdir = \"tmp\"\n"),
            "recipe.toml:6:11: test `t`: invalid workdir `tmp`: expected an absolute path in \
             the image (starting with `/`)",
        ),
        (
            &with_img("[[test]]\nname = \"t\"\nrun = [\"x\"]\nuser = \":0\"\n"),
            "recipe.toml:6:8: test `t`: invalid user `:0`: expected `name`, `uid`, \
             `name:group` or `uid:gid`",
        ),
    ]);
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
    let doc = include_str!("../../../docs/recipe.md");
    let blocks: Vec<&str> = doc
        .split("```toml\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .collect();
    assert_eq!(blocks.len(), 2, "a complete and a minimal example");
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
}

#[test]
fn apt_and_python_errors() {
    let src = "[[apt.source]]\nurl = \"https://deb.example/debian\"\nsuite = \"stable\"\ncomponents = [\"main\"]\nsigned-by = \"k.asc\"\n";
    check_all(&[
        (
            &with_img("[apt]\npackages = [\"x\"]\n"),
            "recipe.toml:3:1: [apt]: no sources: add at least one `[[apt.source]]` with `url`, \
             `suite`, `components` and `signed-by`",
        ),
        (
            &with_img(&format!("{src}[apt]\npackages = [\"Python3\"]\n")),
            "recipe.toml:9:13: [apt] packages: invalid package `Python3`: expected a Debian \
             package name (lower-case letters, digits, `+`, `-`, `.`) with an optional version \
             like `(>= 3.11)` or `=3.11.2-6`",
        ),
        (
            &with_img("[[apt.source]]\nurl = \"ftp://x\"\nsuite = \"s\"\ncomponents = [\"main\"]\n[apt]\npackages = [\"a1\"]\n"),
            "recipe.toml:4:7: [[apt.source]] #1: invalid url `ftp://x`: expected an https://, \
             http:// or file:// URL",
        ),
        (
            &with_img("[[apt.source]]\nurl = \"https://x/d\"\nsuite = \"s\"\ncomponents = [\"main\"]\n[apt]\npackages = [\"a1\"]\n"),
            "recipe.toml:3:1: [[apt.source]] #1: missing `signed-by` (the archive's OpenPGP key \
             file; set `allow-unsigned = true` to accept an unverified archive)",
        ),
        (
            &with_img("[python]\npath = \"/usr/bin/python3\"\narchive = { url = \"a.tgz\", sha256 = \"00\", prefix = \"/opt/p\" }\n"),
            "recipe.toml:5:11: [python]: `path` and `archive` exclude each other: the \
             interpreter comes from one place",
        ),
        (
            &with_img("[python]\nversion = \"3\"\n"),
            "recipe.toml:4:11: [python]: invalid version `3`: expected major.minor like \"3.11\"",
        ),
        (
            &with_img("[python]\nlock = \"pylock.toml\"\nrequirements = \"r.txt\"\n"),
            "recipe.toml:5:16: [python]: `lock` and `requirements` exclude each other: give one \
             locked set of packages",
        ),
        (
            &with_img("[python]\nindex = \"https://pypi.example/simple\"\n"),
            "recipe.toml:4:9: [python]: `index` without `requirements`",
        ),
    ]);
}
