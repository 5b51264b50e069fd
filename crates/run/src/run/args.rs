//! podman's command line as ocibuild reads it: one table of podman's flags and one parser,
//! shared by the trust check of a recipe's `[podman] args` ([`super::trust`]) and by the
//! splitter that puts podman's global options before `run` ([`split_global_args`]).
//!
//! The parser reads arguments as podman's own flag parser (spf13/pflag) does: `--flag=VALUE`
//! or `--flag VALUE` (the next argument is the value, whatever it looks like), a boolean
//! `--flag` or `--flag=BOOL`, short clusters (`-it`, `-eNAME=V`, `-e=NAME=V`, `-ie NAME=V`), and
//! `--` ending the flags. So a value is never taken for a flag: in `--label --hooks-dir=DIR`,
//! `--hooks-dir=DIR` is the label, for the checker and the splitter alike.
//!
//! The table holds podman 4.3's `run` flags and global options (those `podman --help` shows
//! and the hidden ones), and those of later versions up to 5.x. podman's global options are
//! persistent: podman takes them after `run` too, so a recipe must not hold one anywhere.

use std::ops::Range;

/// What a flag may do, as a recipe may use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trust {
    /// Acts only inside the container, or tightens its limits, whatever its value.
    Inside,
    /// `NAME=VALUE` only (a bare name or `*` copies the host's environment).
    Env,
    /// Only one of these values.
    OneOf(&'static [&'static str]),
    /// An integer from `lo` to `hi`: a limit a recipe may tighten, not loosen.
    Range { lo: i64, hi: i64, why: &'static str },
    /// `NAME=SOFT[:HARD]`, no more than this process's own hard limit.
    Ulimit,
    /// A global option a recipe may give by name (not by path): `--runtime`.
    RuntimeName,
    /// Reaches the host, loosens a host-wide limit, or is not known to be harmless: from a
    /// recipe only with `--allow-recipe-podman-args`.
    Host,
    /// A podman global option: never from a recipe.
    Global,
}

/// One of podman's flags.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Flag {
    /// The long name first, then its aliases (long, or short as `-x`).
    pub names: &'static [&'static str],
    /// Takes a value (`--flag VALUE`); a boolean otherwise (`--flag`, `--flag=false`).
    pub value: bool,
    /// A podman global option (goes before `run`).
    pub global: bool,
    pub trust: Trust,
}

const fn run(names: &'static [&'static str], value: bool, trust: Trust) -> Flag {
    Flag {
        names,
        value,
        global: false,
        trust,
    }
}

const fn global(names: &'static [&'static str], value: bool) -> Flag {
    Flag {
        names,
        value,
        global: true,
        trust: Trust::Global,
    }
}

use Trust::{Env, Host, Inside, Ulimit};
const V: bool = true;
const B: bool = false;

/// Networks that keep the container off the host's namespaces.
pub(super) const NETWORKS: &[&str] = &["none", "bridge", "slirp4netns", "pasta", "private"];

/// podman's default `pids_limit` (containers.conf).
pub(super) const PODMAN_PIDS_LIMIT: i64 = 2048;

#[rustfmt::skip]
const FLAGS: &[Flag] = &[
    // Global options (podman 4.3 `podman --help`, its hidden ones, and 4.4 to 5.x's).
    global(&["--cdi-spec-dir"], V),
    global(&["--cgroup-manager"], V),
    global(&["--cni-config-dir"], V),
    global(&["--config"], V),
    global(&["--conmon"], V),
    global(&["--connection"], V),
    global(&["--context"], V),
    global(&["--cpu-profile"], V),
    global(&["--db-backend"], V),
    global(&["--debug", "-D"], B),
    global(&["--default-mounts-file"], V),
    global(&["--events-backend"], V),
    global(&["--hooks-dir"], V),
    global(&["--host", "-H"], V),
    global(&["--identity"], V),
    global(&["--imagestore"], V),
    global(&["--log-level"], V),
    global(&["--max-workers"], V),
    global(&["--memory-profile"], V),
    global(&["--module"], V),
    global(&["--namespace"], V),
    global(&["--network-backend"], V),
    global(&["--network-cmd-path"], V),
    global(&["--network-config-dir"], V),
    global(&["--noout"], B),
    global(&["--out"], V),
    global(&["--registries-conf"], V),
    global(&["--remote", "-r"], B),
    global(&["--root"], V),
    global(&["--runroot"], V),
    Flag { names: &["--runtime"], value: V, global: true, trust: Trust::RuntimeName },
    global(&["--runtime-flag"], V),
    global(&["--ssh"], V),
    global(&["--storage-driver"], V),
    global(&["--storage-opt"], V),
    global(&["--syslog"], B),
    global(&["--tmpdir"], V),
    global(&["--trace"], B),
    global(&["--transient-store"], B),
    global(&["--url"], V),
    global(&["--version"], B),
    global(&["--volumepath"], V),
    // `podman run` flags that act only inside the container (or tighten its limits).
    run(&["--add-host"], V, Inside),
    run(&["--cap-drop"], V, Inside),
    run(&["--cpus"], V, Inside),
    run(&["--dns"], V, Inside),
    run(&["--dns-option"], V, Inside),
    run(&["--dns-search"], V, Inside),
    run(&["--entrypoint"], V, Inside),
    run(&["--hostname", "-h"], V, Inside),
    run(&["--init"], B, Inside),
    run(&["--interactive", "-i"], B, Inside),
    run(&["--label", "-l"], V, Inside),
    run(&["--memory", "-m"], V, Inside),
    run(&["--memory-swap"], V, Inside),
    run(&["--no-hosts"], B, Inside),
    run(&["--pull"], V, Inside),
    run(&["--quiet", "-q"], B, Inside),
    run(&["--read-only"], B, Inside),
    run(&["--read-only-tmpfs"], B, Inside),
    run(&["--rm"], B, Inside),
    run(&["--shm-size"], V, Inside),
    run(&["--stop-signal"], V, Inside),
    run(&["--stop-timeout"], V, Inside),
    run(&["--timeout"], V, Inside),
    run(&["--tmpfs"], V, Inside),
    run(&["--tty", "-t"], B, Inside),
    run(&["--tz"], V, Inside),
    run(&["--umask"], V, Inside),
    run(&["--user", "-u"], V, Inside),
    run(&["--workdir", "-w"], V, Inside),
    run(&["--env", "-e"], V, Env),
    run(&["--network", "--net"], V, Trust::OneOf(NETWORKS)),
    // systemd mode mounts the host's cgroup hierarchy into the container (cgroup v1).
    run(&["--systemd"], V, Trust::OneOf(&["false"])),
    run(&["--ulimit"], V, Ulimit),
    run(&["--pids-limit"], V, Trust::Range {
        lo: 1,
        hi: PODMAN_PIDS_LIMIT,
        why: "a recipe may lower podman's default limit of 2048 processes, not lift or raise it",
    }),
    run(&["--oom-score-adj"], V, Trust::Range {
        lo: 0,
        hi: 1000,
        why: "a negative score makes the host's own processes the OOM killer's choice",
    }),
    run(&["--cpu-shares", "-c"], V, Trust::Range {
        lo: 1,
        hi: 1024,
        why: "a weight above the default 1024 takes CPU time from the host's other work",
    }),
    // `podman run` flags that reach the host, loosen a host-wide limit, or are not known to
    // be harmless.
    run(&["--annotation"], V, Host), // annotations select OCI hooks
    run(&["--arch"], V, Host),
    run(&["--attach", "-a"], V, Host),
    run(&["--authfile"], V, Host),
    run(&["--blkio-weight"], V, Host),
    run(&["--blkio-weight-device"], V, Host),
    run(&["--cap-add"], V, Host),
    run(&["--cgroup-conf"], V, Host),
    run(&["--cgroup-parent"], V, Host),
    run(&["--cgroupns"], V, Host),
    run(&["--cgroups"], V, Host),
    run(&["--chrootdirs"], V, Host),
    run(&["--cidfile"], V, Host),
    run(&["--conmon-pidfile"], V, Host),
    run(&["--cpu-period"], V, Host),
    run(&["--cpu-quota"], V, Host),
    run(&["--cpu-rt-period"], V, Host),
    run(&["--cpu-rt-runtime"], V, Host),
    run(&["--cpuset-cpus"], V, Host),
    run(&["--cpuset-mems"], V, Host),
    run(&["--decryption-key"], V, Host),
    run(&["--detach", "-d"], B, Host),
    run(&["--detach-keys"], V, Host),
    run(&["--device"], V, Host),
    run(&["--device-cgroup-rule"], V, Host),
    run(&["--device-read-bps"], V, Host),
    run(&["--device-read-iops"], V, Host),
    run(&["--device-write-bps"], V, Host),
    run(&["--device-write-iops"], V, Host),
    run(&["--disable-content-trust"], B, Host),
    run(&["--env-file"], V, Host),
    run(&["--env-host"], B, Host),
    run(&["--env-merge"], V, Host),
    run(&["--expose"], V, Host),
    run(&["--gidmap"], V, Host),
    run(&["--gpus"], V, Host),
    run(&["--group-add"], V, Host),
    run(&["--group-entry"], V, Host),
    run(&["--health-cmd"], V, Host),
    run(&["--health-interval"], V, Host),
    run(&["--health-log-destination"], V, Host),
    run(&["--health-max-log-count"], V, Host),
    run(&["--health-max-log-size"], V, Host),
    run(&["--health-on-failure"], V, Host),
    run(&["--health-retries"], V, Host),
    run(&["--health-start-period"], V, Host),
    run(&["--health-startup-cmd"], V, Host),
    run(&["--health-startup-interval"], V, Host),
    run(&["--health-startup-retries"], V, Host),
    run(&["--health-startup-success"], V, Host),
    run(&["--health-startup-timeout"], V, Host),
    run(&["--health-timeout"], V, Host),
    run(&["--help"], B, Host),
    run(&["--hostuser"], V, Host),
    run(&["--http-proxy"], B, Host),
    run(&["--image-volume"], V, Host),
    run(&["--init-path"], V, Host),
    run(&["--ip"], V, Host),
    run(&["--ip6"], V, Host),
    run(&["--ipc"], V, Host),
    run(&["--label-file"], V, Host),
    run(&["--log-driver"], V, Host),
    run(&["--log-opt"], V, Host),
    run(&["--mac-address"], V, Host),
    run(&["--memory-reservation"], V, Host),
    // Per-container reclaim only, but cgroup v1's, and it acts on the host's swap.
    run(&["--memory-swappiness"], V, Host),
    run(&["--mount"], V, Host),
    run(&["--name"], V, Host),
    run(&["--network-alias"], V, Host),
    run(&["--no-healthcheck"], B, Host),
    run(&["--oom-kill-disable"], B, Host),
    run(&["--os"], V, Host),
    run(&["--passwd"], B, Host),
    run(&["--passwd-entry"], V, Host),
    run(&["--personality"], V, Host),
    run(&["--pid"], V, Host),
    run(&["--pidfile"], V, Host),
    run(&["--platform"], V, Host),
    run(&["--pod"], V, Host),
    run(&["--pod-id-file"], V, Host),
    run(&["--preserve-fd"], V, Host),
    run(&["--preserve-fds"], V, Host),
    run(&["--privileged"], B, Host),
    run(&["--publish", "-p"], V, Host),
    run(&["--publish-all", "-P"], B, Host),
    run(&["--rdt-class"], V, Host),
    run(&["--replace"], B, Host),
    run(&["--requires"], V, Host),
    run(&["--restart"], V, Host),
    run(&["--retry"], V, Host),
    run(&["--retry-delay"], V, Host),
    run(&["--rmi"], B, Host),
    run(&["--rootfs"], B, Host),
    run(&["--sdnotify"], V, Host),
    run(&["--seccomp-policy"], V, Host),
    run(&["--secret"], V, Host),
    run(&["--security-opt"], V, Host),
    run(&["--shm-size-systemd"], V, Host),
    run(&["--sig-proxy"], B, Host),
    run(&["--subgidname"], V, Host),
    run(&["--subuidname"], V, Host),
    run(&["--sysctl"], V, Host),
    run(&["--tls-verify"], B, Host),
    run(&["--uidmap"], V, Host),
    run(&["--unsetenv"], V, Host),
    run(&["--unsetenv-all"], B, Host),
    run(&["--userns"], V, Host),
    run(&["--uts"], V, Host),
    run(&["--variant"], V, Host),
    run(&["--volume", "-v"], V, Host),
    run(&["--volumes-from"], V, Host),
];

/// The flag spelled `name` (`--long` or `-x`), if podman has one.
pub(super) fn lookup(name: &str) -> Option<&'static Flag> {
    FLAGS.iter().find(|f| f.names.contains(&name))
}

/// Every flag in the table.
#[cfg(test)]
pub(super) fn flags() -> &'static [Flag] {
    FLAGS
}

/// One flag as it appears on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Use<'a> {
    /// `None`: not a flag of podman's that ocibuild knows.
    pub flag: Option<&'static Flag>,
    /// The flag as written: `--label`, `-e` (a short one out of its cluster).
    pub spelled: String,
    /// Its value: in the same argument (`--label=V`, `-eV`) or the next one.
    pub value: Option<&'a str>,
    /// The value was in the same argument.
    pub inline: bool,
}

/// What one argument (with the value after it, if it took one) is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Unit<'a> {
    /// One flag, or a short cluster's flags.
    Flags(Vec<Use<'a>>),
    /// Not a flag: podman would take it as the image (or a word after it).
    Positional,
    /// `--`: what follows is not flags.
    EndOfFlags,
}

/// A [`Unit`] and the arguments it spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Parsed<'a> {
    pub unit: Unit<'a>,
    pub args: Range<usize>,
}

/// Parses `args` as pflag does (see the module's text).
pub(super) fn parse(args: &[String]) -> Vec<Parsed<'_>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let start = i;
        i += 1;
        let next = args.get(i).map(String::as_str);
        let unit = if a == "--" {
            out.push(Parsed {
                unit: Unit::EndOfFlags,
                args: start..i,
            });
            // Everything after it is a word.
            out.extend((i..args.len()).map(|j| Parsed {
                unit: Unit::Positional,
                args: j..j + 1,
            }));
            return out;
        } else if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let spelled = format!("--{name}");
            let flag = lookup(&spelled);
            let (value, is_inline) = match (flag, inline) {
                (_, Some(v)) => (Some(v), true),
                (Some(f), None) if f.value => {
                    i += usize::from(next.is_some());
                    (next, false)
                }
                _ => (None, false),
            };
            Unit::Flags(vec![Use {
                flag,
                spelled,
                value,
                inline: is_inline,
            }])
        } else if let Some(cluster) = a.strip_prefix('-').filter(|c| !c.is_empty()) {
            let mut uses = Vec::new();
            let mut rest = cluster;
            while let Some(c) = rest.chars().next() {
                rest = &rest[c.len_utf8()..];
                let spelled = format!("-{c}");
                let flag = lookup(&spelled);
                let Some(f) = flag else {
                    // pflag stops at an unknown shorthand.
                    uses.push(Use {
                        flag,
                        spelled,
                        value: None,
                        inline: false,
                    });
                    break;
                };
                let after_eq = rest.strip_prefix('=');
                if f.value {
                    let (value, inline) =
                        if let Some(v) = after_eq.or((!rest.is_empty()).then_some(rest)) {
                            (Some(v), true)
                        } else {
                            i += usize::from(next.is_some());
                            (next, false)
                        };
                    uses.push(Use {
                        flag,
                        spelled,
                        value,
                        inline,
                    });
                    break;
                }
                uses.push(Use {
                    flag,
                    spelled,
                    value: after_eq,
                    inline: after_eq.is_some(),
                });
                if after_eq.is_some() {
                    break;
                }
            }
            Unit::Flags(uses)
        } else {
            Unit::Positional
        };
        out.push(Parsed {
            unit,
            args: start..i,
        });
    }
    out
}

/// Splits the user's podman arguments into podman's global options (they go before `run`, and
/// are repeated for the cleanup's `kill` and `rm`) and `run` options. An argument goes before
/// `run` only when every flag in it is a global option; a flag's value stays with its flag.
pub fn split_global_args(args: &[String]) -> (Vec<String>, Vec<String>) {
    let mut global = Vec::new();
    let mut run = Vec::new();
    for p in parse(args) {
        let is_global = match &p.unit {
            Unit::Flags(uses) => uses.iter().all(|u| u.flag.is_some_and(|f| f.global)),
            _ => false,
        };
        let to = if is_global { &mut global } else { &mut run };
        to.extend(args[p.args].iter().cloned());
    }
    (global, run)
}

/// Whether podman `run` flags name a network themselves (`--network`/`--net`, with its value
/// inline or next): the test stage and the step sandbox then add no `--network=none`.
pub(crate) fn names_network(run_args: &[String]) -> bool {
    parse(run_args).iter().any(|p| match &p.unit {
        Unit::Flags(uses) => uses
            .iter()
            .any(|u| u.spelled == "--network" || u.spelled == "--net"),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(std::string::ToString::to_string).collect()
    }

    #[test]
    fn the_table_names_each_flag_once() {
        let mut seen = std::collections::BTreeSet::new();
        for f in flags() {
            assert!(f.global == matches!(f.trust, Trust::Global | Trust::RuntimeName));
            for n in f.names {
                assert!(seen.insert(*n), "{n} twice");
                assert!(n.starts_with("--") || (n.len() == 2 && n.starts_with('-')));
            }
        }
    }

    #[test]
    fn values_stay_with_their_flags() {
        let args = v(&[
            "--label",
            "--hooks-dir=/x",
            "-e",
            "--conmon=/y",
            "-itv/a:/b",
            "z",
        ]);
        let p = parse(&args);
        let spans: Vec<_> = p.iter().map(|p| p.args.clone()).collect();
        assert_eq!(spans, [0..2, 2..4, 4..5, 5..6]);
        let Unit::Flags(u) = &p[0].unit else { panic!() };
        assert_eq!(
            (u[0].spelled.as_str(), u[0].value),
            ("--label", Some("--hooks-dir=/x"))
        );
        let Unit::Flags(u) = &p[2].unit else { panic!() };
        let names: Vec<_> = u.iter().map(|u| (u.spelled.as_str(), u.value)).collect();
        assert_eq!(names, [("-i", None), ("-t", None), ("-v", Some("/a:/b"))]);
        assert_eq!(p[3].unit, Unit::Positional);
        // `-e=A=1`, `-eA=1` and `-ie A=1` give `-e` the value `A=1`.
        for (args, n) in [(&["-e=A=1"][..], 1), (&["-eA=1"], 1), (&["-ie", "A=1"], 2)] {
            let args = v(args);
            let p = parse(&args);
            let Unit::Flags(u) = &p[0].unit else { panic!() };
            assert_eq!(u.last().unwrap().value, Some("A=1"));
            assert_eq!(p[0].args, 0..n);
        }
        // After `--`, only words.
        let args = v(&["--", "--root=/x"]);
        let p = parse(&args);
        assert_eq!(
            (p[0].unit.clone(), p[1].unit.clone()),
            (Unit::EndOfFlags, Unit::Positional)
        );
    }

    #[test]
    fn splits_global_options() {
        let args = v(&[
            "--runtime",
            "runc",
            "--network",
            "none",
            "--root=/tmp/r",
            "--ulimit",
            "nofile=1024:1024",
            "--syslog",
            "--cgroup-manager",
            "cgroupfs",
            "-e",
            "A=1",
        ]);
        let (g, r) = split_global_args(&args);
        assert_eq!(
            g,
            [
                "--runtime",
                "runc",
                "--root=/tmp/r",
                "--syslog",
                "--cgroup-manager",
                "cgroupfs"
            ]
        );
        assert_eq!(
            r,
            [
                "--network",
                "none",
                "--ulimit",
                "nofile=1024:1024",
                "-e",
                "A=1"
            ]
        );
    }

    #[test]
    fn network_flags_are_found() {
        for args in [
            &["--network", "none"][..],
            &["--network=bridge"],
            &["--net", "pasta"],
            &["--net=slirp4netns"],
            &["-e", "A=1", "--network=private"],
        ] {
            assert!(names_network(&v(args)), "{args:?}");
        }
        for args in [
            &[][..],
            &["--ulimit", "nofile=1:1"],
            &["-e", "--network=none"],
            &["--label", "--net"],
            &["--network-alias", "x"],
            &["--", "--network=none"],
        ] {
            assert!(!names_network(&v(args)), "{args:?}");
        }
    }

    #[test]
    fn a_value_that_looks_global_is_not_moved() {
        for args in [
            &["--label", "--hooks-dir=/x"][..],
            &["-e", "--conmon=/y"],
            &["-l", "--root", "/r"],
            &["--workdir", "--runroot=/r"],
            &["-ie", "--tmpdir=/t"],
        ] {
            // `-l --root /r`: `--root` is the label, `/r` a word left where it was.
            let (g, r) = split_global_args(&v(args));
            assert!(g.is_empty(), "{args:?}: {g:?}");
            assert_eq!(r, v(args));
        }
        // `-c` after `run` is --cpu-shares, `-v` --volume: not podman's --connection or
        // --version.
        let (g, r) = split_global_args(&v(&["-c", "512", "-v", "/a:/b", "-r"]));
        assert_eq!((g, r), (v(&["-r"]), v(&["-c", "512", "-v", "/a:/b"])));
    }
}
