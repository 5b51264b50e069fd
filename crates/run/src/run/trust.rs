//! A recipe is code: its `[podman] args` go onto `podman run` when `ocibuild test` (or `build
//! --test`) runs, as the user who runs it, often root. Each argument is read with podman's own
//! grammar ([`super::args`]) and checked together with its value:
//!
//! - never a podman global option (`--hooks-dir`, `--conmon`, `--root`, …: podman takes them
//!   after `run` too, and they name programs podman runs on the host), except `--runtime` by
//!   name (podman looks the name up in containers.conf; a path is refused);
//! - never a word podman would take as the image, `--`, a valued flag without its value, or a
//!   separate value that starts with `-` (write `--flag=VALUE`);
//! - without `--allow-recipe-podman-args`, only flags that act inside the container, or that
//!   tighten its limits (`--pids-limit` 1 to 2048, `--oom-score-adj` 0 to 1000, `--ulimit` up to
//!   this process's own hard limits, …). Anything else must come from the user (`--podman-arg`,
//!   `OCIBUILD_PODMAN_ARGS`).

use std::collections::BTreeMap;

use super::args::{self, Flag, Trust, Unit, Use};
use crate::bounded::clip;

/// What to do about a flag a recipe may not pass by default.
const ALLOW: &str = "a recipe is code: pass such flags yourself with --podman-arg, or allow the recipe's with --allow-recipe-podman-args";

/// Why a recipe's `[podman] args` are refused; each message names the argument and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("`{arg}`, a podman global option (podman's own hooks, programs, storage or connection, used on the host outside any container): a recipe never sets these, even with --allow-recipe-podman-args; pass it yourself with --podman-arg if you mean it")]
    Global { arg: String },
    #[error("`{arg}`: a runtime by name only (as containers.conf names it), not a path; pass a path yourself with --podman-arg")]
    RuntimePath { arg: String },
    #[error("`{flag}` followed by `{value}`: a value from a recipe must not start with `-`; write `{flag}=VALUE` if it is the value")]
    DashValue { flag: String, value: String },
    #[error("`{flag}` without its value: give it as `{flag}=VALUE`")]
    MissingValue { flag: String },
    #[error("`{arg}`, which is not a flag: podman would take it (and what follows) as the image and its command; a flag's value goes with its flag (`--flag=VALUE`)")]
    NotAFlag { arg: String },
    #[error("`{arg}`: it can reach the host (mounts, devices, namespaces, privileges, host files) or is not known to be harmless; {ALLOW}")]
    Host { arg: String },
    #[error("`{arg}`, which is not a podman run flag ocibuild knows; {ALLOW}")]
    Unknown { arg: String },
    #[error(
        "`{arg}`: only NAME=VALUE (a bare name or a `*` copies the host's environment); {ALLOW}"
    )]
    Env { arg: String },
    #[error("`{arg}`: from a recipe only {}; {ALLOW}", allowed.join(", "))]
    OneOf {
        arg: String,
        allowed: &'static [&'static str],
    },
    #[error("`{arg}`: from a recipe only {lo} to {hi} ({why}); {ALLOW}")]
    Range {
        arg: String,
        lo: i64,
        hi: i64,
        why: &'static str,
    },
    #[error("`{arg}`: {why}; {ALLOW}")]
    Ulimit { arg: String, why: String },
    #[error("`{arg}`: this flag takes no value from a recipe; write it alone")]
    BoolValue { arg: String },
}

/// This process's hard resource limits (`/proc/self/limits`), by `--ulimit` name; `None`:
/// unlimited. A limit missing from the map is unknown.
#[derive(Debug, Clone, Default)]
pub struct HostLimits {
    hard: BTreeMap<&'static str, Option<u64>>,
}

/// `--ulimit` names and their rows in `/proc/self/limits`.
const LIMIT_ROWS: &[(&str, &str)] = &[
    ("core", "Max core file size"),
    ("cpu", "Max cpu time"),
    ("data", "Max data size"),
    ("fsize", "Max file size"),
    ("locks", "Max file locks"),
    ("memlock", "Max locked memory"),
    ("msgqueue", "Max msgqueue size"),
    ("nice", "Max nice priority"),
    ("nofile", "Max open files"),
    ("nproc", "Max processes"),
    ("rss", "Max resident set"),
    ("rtprio", "Max realtime priority"),
    ("rttime", "Max realtime timeout"),
    ("sigpending", "Max pending signals"),
    ("stack", "Max stack size"),
];

impl HostLimits {
    /// This process's limits; empty (every recipe `--ulimit` refused) when unreadable.
    pub fn current() -> HostLimits {
        fs_err::read_to_string("/proc/self/limits")
            .map(|t| HostLimits::parse(&t))
            .unwrap_or_default()
    }

    /// Limits from the text of a `/proc/PID/limits`.
    pub fn parse(text: &str) -> HostLimits {
        let mut hard = BTreeMap::new();
        for (name, row) in LIMIT_ROWS {
            let Some(line) = text.lines().find(|l| l.starts_with(row)) else {
                continue;
            };
            let cols: Vec<&str> = line[row.len()..].split_whitespace().collect();
            match cols.get(1) {
                Some(&"unlimited") => {
                    hard.insert(*name, None);
                }
                Some(n) => {
                    if let Ok(n) = n.parse::<u64>() {
                        hard.insert(*name, Some(n));
                    }
                }
                None => {}
            }
        }
        HostLimits { hard }
    }
}

/// Checks a recipe's `[podman] args`; `allow_host` is `--allow-recipe-podman-args` (which
/// lifts the inside-the-container rule, not the rules on global options and values).
pub fn check_recipe_args(
    args: &[String],
    allow_host: bool,
    limits: &HostLimits,
) -> Result<(), Refusal> {
    for p in args::parse(args) {
        let uses = match p.unit {
            Unit::Flags(uses) => uses,
            Unit::Positional | Unit::EndOfFlags => {
                return Err(Refusal::NotAFlag {
                    arg: clip(&args[p.args.start]).into_owned(),
                })
            }
        };
        let written = clip(&args[p.args.start]).into_owned();
        for u in &uses {
            check_use(u, &written, allow_host, limits)?;
        }
    }
    Ok(())
}

fn check_use(
    u: &Use<'_>,
    written: &str,
    allow_host: bool,
    limits: &HostLimits,
) -> Result<(), Refusal> {
    // The flag as written, with its value when it is in the same argument.
    let arg = if u.spelled.starts_with("--") {
        written.to_string()
    } else {
        u.spelled.clone()
    };
    let Some(f) = u.flag else {
        return if allow_host {
            Ok(())
        } else {
            Err(Refusal::Unknown { arg })
        };
    };
    if f.trust == Trust::Global {
        return Err(Refusal::Global { arg });
    }
    if f.value {
        match u.value {
            None => {
                return Err(Refusal::MissingValue {
                    flag: u.spelled.clone(),
                })
            }
            Some(v) if !u.inline && v.starts_with('-') => {
                return Err(Refusal::DashValue {
                    flag: u.spelled.clone(),
                    value: clip(v).into_owned(),
                })
            }
            Some(_) => {}
        }
    }
    let value = u.value.unwrap_or("");
    if f.trust == Trust::RuntimeName {
        return runtime_name(value)
            .then_some(())
            .ok_or(Refusal::RuntimePath { arg });
    }
    if allow_host {
        return Ok(());
    }
    if !f.value && u.value.is_some() && f.trust == Trust::Inside {
        return Err(Refusal::BoolValue { arg });
    }
    check_trust(f, &arg, value, limits)
}

fn check_trust(f: &Flag, arg: &str, value: &str, limits: &HostLimits) -> Result<(), Refusal> {
    let arg = || arg.to_string();
    match f.trust {
        Trust::Inside => Ok(()),
        Trust::Env => match value.split_once('=') {
            // `NAME=VALUE` only: podman copies the host's value for a bare `NAME`, and every
            // matching host variable for `PREFIX*`.
            Some((name, _)) if !name.is_empty() && !name.contains('*') => Ok(()),
            _ => Err(Refusal::Env { arg: arg() }),
        },
        Trust::OneOf(allowed) if allowed.contains(&value) => Ok(()),
        Trust::OneOf(allowed) => Err(Refusal::OneOf {
            arg: arg(),
            allowed,
        }),
        Trust::Range { lo, hi, why } => match value.parse::<i64>() {
            Ok(n) if (lo..=hi).contains(&n) => Ok(()),
            _ => Err(Refusal::Range {
                arg: arg(),
                lo,
                hi,
                why,
            }),
        },
        Trust::Ulimit => ulimit(value, limits).map_err(|why| Refusal::Ulimit { arg: arg(), why }),
        Trust::Host => Err(Refusal::Host { arg: arg() }),
        Trust::Global | Trust::RuntimeName => Err(Refusal::Global { arg: arg() }),
    }
}

/// A runtime name as containers.conf's `[engine.runtimes]` table has them.
fn runtime_name(v: &str) -> bool {
    let mut chars = v.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// `NAME=SOFT[:HARD]` within this process's hard limit for NAME; why not otherwise.
fn ulimit(value: &str, limits: &HostLimits) -> Result<(), String> {
    let Some((name, range)) = value.split_once('=') else {
        return Err("only NAME=SOFT[:HARD]".into());
    };
    let Some(host) = limits.hard.get(name) else {
        return Err(format!("this process's own limit on `{}` is not known, so the recipe cannot be shown not to raise it", clip(name)));
    };
    for part in range.split(':') {
        let within = match (part.parse::<u64>(), host) {
            (Ok(_), None) => true,
            (Ok(n), Some(h)) => n <= *h,
            // `-1` (unlimited) is within an unlimited host limit only.
            _ => host.is_none() && part == "-1",
        };
        if !within {
            return Err(match host {
                Some(h) => format!("a recipe may set `{name}` up to this process's own hard limit, {h}, not above it"),
                None => "only numbers".into(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: &str = "Limit                     Soft Limit           Hard Limit           Units     \nMax processes             63433                63433                processes \nMax open files            1024                 524288               files     \nMax locked memory         unlimited            unlimited            bytes     \n";

    fn check_with(args: &[&str], allow: bool) -> Result<(), Refusal> {
        let v: Vec<String> = args.iter().map(std::string::ToString::to_string).collect();
        check_recipe_args(&v, allow, &HostLimits::parse(LIMITS))
    }

    fn check(args: &[&str]) -> Option<String> {
        check_with(args, false).err().map(|r| r.to_string())
    }

    #[test]
    fn only_container_scoped_flags_pass() {
        for ok in [
            &["--runtime", "runc", "--network", "none"][..],
            &["--env=A=b=c", "-e", "LANG=C.UTF-8", "-eB=1", "-e=C=2"],
            &["--ulimit=nofile=1024:1024", "-e", "A=1", "--rm", "-it"],
            &["--ulimit", "nproc=63433", "--ulimit=memlock=-1:-1"],
            &["--pids-limit=100", "--oom-score-adj", "500", "-c", "512"],
            &["--label", "a=b", "-l", "c", "--label=--hooks-dir=/x"],
            &[],
        ] {
            assert_eq!(check(ok), None, "{ok:?}");
        }
        for (args, bad) in [
            (&["-v", "/:/host"][..], "`-v`"),
            (&["--volume=/etc:/e"], "`--volume=/etc:/e`"),
            (&["-itv/:/h"], "`-v`"),
            (&["--mount", "type=bind,src=/,dst=/h"], "`--mount`"),
            (&["--device", "/dev/sda"], "`--device`"),
            (&["--privileged"], "`--privileged`"),
            (&["--cap-add", "SYS_ADMIN"], "`--cap-add`"),
            (&["--security-opt", "label=disable"], "`--security-opt`"),
            (&["--pid", "host"], "`--pid`"),
            (&["--ipc=host"], "`--ipc=host`"),
            (&["--uts=host"], "`--uts=host`"),
            (&["--userns=host"], "`--userns=host`"),
            (&["--cgroupns=host"], "`--cgroupns=host`"),
            (&["--cgroup-parent", "/"], "`--cgroup-parent`"),
            (&["--network", "host"], "`--network`"),
            (&["--net=container:x"], "`--net=container:x`"),
            (&["--runtime", "/tmp/evil"], "`--runtime`"),
            (&["--runtime=./evil"], "`--runtime=./evil`"),
            (&["--env-file", "/root/.secrets"], "`--env-file`"),
            (&["--env-host"], "`--env-host`"),
            (&["--secret", "s"], "`--secret`"),
            (&["--volumes-from", "c"], "`--volumes-from`"),
            (&["--annotation", "a=b"], "`--annotation`"),
            (&["-e", "A=1", "--userns=host"], "`--userns=host`"),
            (&["--rm=false", "-v", "/:/h"], "`--rm=false`"),
            (&["-e", "*"], "`-e`"),
            (
                &["--env=AWS_SECRET_ACCESS_KEY"],
                "`--env=AWS_SECRET_ACCESS_KEY`",
            ),
            (&["-e", "GITHUB_*=x"], "`-e`"),
            (&["--systemd=always"], "`--systemd=always`"),
            (&["--memory-swappiness=100"], "`--memory-swappiness=100`"),
            (&["--made-up-flag"], "`--made-up-flag`"),
            (&["alpine", "sh"], "`alpine`"),
            (&["--", "x"], "`--`"),
            (&["--label"], "`--label` without"),
        ] {
            let got = check(args).unwrap_or_else(|| panic!("{args:?} passed"));
            assert!(got.starts_with(bad), "{args:?}: {got}");
        }
    }

    #[test]
    fn limits_are_only_tightened() {
        for (args, what) in [
            (&["--pids-limit=-1"][..], "1 to 2048"),
            (&["--pids-limit=0"], "1 to 2048"),
            (&["--pids-limit", "4096"], "1 to 2048"),
            (&["--pids-limit=unlimited"], "1 to 2048"),
            (&["--oom-score-adj=-1000"], "0 to 1000"),
            (&["--oom-score-adj=-1"], "0 to 1000"),
            (&["--cpu-shares=262144"], "1 to 1024"),
            (&["-c", "4096"], "1 to 1024"),
            (&["--ulimit=nofile=1048576:1048576"], "hard limit, 524288"),
            (&["--ulimit", "nproc=-1"], "hard limit, 63433"),
            (&["--ulimit=rtprio=99"], "not known"),
            (&["--ulimit=host"], "NAME=SOFT"),
        ] {
            let got = check(args).unwrap_or_else(|| panic!("{args:?} passed"));
            assert!(got.contains(what), "{args:?}: {got}");
            assert!(got.contains("--allow-recipe-podman-args"), "{got}");
            // Allowed for this run, they pass.
            assert_eq!(check_with(args, true), Ok(()), "{args:?}");
        }
        // A separate negative value is refused as a value that starts with `-`.
        let got = check(&["--oom-score-adj", "-1000"]).unwrap();
        assert!(got.contains("must not start with `-`"), "{got}");
    }

    /// Every global option is refused, in `--flag=value`, `--flag value` and short forms, alone,
    /// after a valued flag, and with --allow-recipe-podman-args.
    #[test]
    fn global_options_never_come_from_a_recipe() {
        let mut n = 0;
        for f in args::flags().iter().filter(|f| f.trust == Trust::Global) {
            for name in f.names {
                let forms: Vec<Vec<String>> = if f.value {
                    vec![
                        vec![format!("{name}=/tmp/x")],
                        vec![name.to_string(), "/tmp/x".into()],
                    ]
                } else {
                    vec![vec![name.to_string()], vec![format!("{name}=true")]]
                };
                for form in forms {
                    for before in [&[][..], &["-e", "A=1"], &["--label", "x"], &["--rm"]] {
                        let mut args: Vec<String> = before
                            .iter()
                            .map(std::string::ToString::to_string)
                            .collect();
                        args.extend(form.iter().cloned());
                        for allow in [false, true] {
                            let r = check_recipe_args(&args, allow, &HostLimits::parse(LIMITS));
                            assert!(
                                matches!(&r, Err(Refusal::Global { arg }) if arg.starts_with(name)),
                                "{args:?} (allow {allow}): {r:?}"
                            );
                            n += 1;
                        }
                    }
                }
            }
        }
        assert!(n > 300, "{n}");
    }

    /// A global option given as the separate value of any valued flag is refused (it would be
    /// the flag's value to podman; a recipe has no reason to write it so).
    #[test]
    fn a_value_that_starts_with_a_dash_is_refused_after_any_valued_flag() {
        for f in args::flags()
            .iter()
            .filter(|f| f.value && f.trust != Trust::Global)
        {
            for name in f.names {
                for global in ["--hooks-dir=/tmp/h", "--conmon=/tmp/c", "--root", "-D"] {
                    for allow in [false, true] {
                        let r = check_with(&[name, global, "/tmp/r"], allow);
                        assert_eq!(
                            r,
                            Err(Refusal::DashValue {
                                flag: name.to_string(),
                                value: global.into()
                            }),
                            "{name} {global}"
                        );
                    }
                }
            }
        }
        let e = check(&["--label", "--hooks-dir=/tmp/h"]).unwrap();
        assert!(e.contains("write `--label=VALUE`"), "{e}");
    }
}
