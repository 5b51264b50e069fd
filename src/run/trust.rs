//! A recipe is code: its `[podman] args` go onto `podman run` when `ocibuild test` runs, so a
//! recipe from elsewhere could bind-mount the host (`-v /:/host`), pass devices, or drop the
//! container's isolation. Only flags that act inside the container are taken from a recipe;
//! anything else must come from the user (`--podman-arg`, `OCIBUILD_PODMAN_ARGS`) or be
//! allowed for this run (`--allow-recipe-podman-args`).

/// Flags that take no value and act only inside the container.
const BARE: &[&str] = &[
    "--rm",
    "--init",
    "--read-only",
    "--read-only-tmpfs",
    "--no-hosts",
    "-t",
    "--tty",
    "-i",
    "--interactive",
    "-q",
    "--quiet",
];

/// Flags whose value, whatever it is, acts only inside the container (or on its limits).
const VALUED: &[&str] = &[
    "-w",
    "--workdir",
    "-u",
    "--user",
    "--tmpfs",
    "--ulimit",
    "-m",
    "--memory",
    "--memory-swap",
    "--cpus",
    "--cpu-shares",
    "--shm-size",
    "-h",
    "--hostname",
    "-l",
    "--label",
    "--stop-timeout",
    "--timeout",
    "--pids-limit",
    "--entrypoint",
    "--cap-drop",
    "--add-host",
    "--dns",
    "--dns-search",
    "--dns-option",
    "--tz",
    "--umask",
    "--stop-signal",
    "--oom-score-adj",
    "--systemd",
    "--pull",
];

/// Networks that keep the container off the host's namespaces.
const NETWORKS: &[&str] = &["none", "bridge", "slirp4netns", "pasta", "private"];

/// The first of a recipe's `[podman] args` that is not known to act only inside the container,
/// with why; `None` when all are.
pub fn untrusted_podman_arg(args: &[String]) -> Option<(String, &'static str)> {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with('-') => (f, Some(v)),
            _ => (a, None),
        };
        if BARE.contains(&flag) && inline.is_none() {
            i += 1;
            continue;
        }
        let value = |i: usize| inline.or_else(|| args.get(i + 1).map(String::as_str));
        let step = if inline.is_some() { 1 } else { 2 };
        let ok = if flag == "-e" || flag == "--env" {
            // `NAME=VALUE` only: podman copies the host's value for a bare `NAME`, and every
            // matching host variable for `PREFIX*`.
            match value(i).and_then(|v| v.split_once('=')) {
                Some((name, _)) if !name.is_empty() && !name.contains('*') => Some(()),
                _ => {
                    return Some((
                        a.to_string(),
                        "only NAME=VALUE: a bare name or a `*` copies the host's environment",
                    ))
                }
            }
        } else if VALUED.contains(&flag) {
            value(i).is_some().then_some(())
        } else if flag == "--network" || flag == "--net" {
            match value(i) {
                Some(v) if NETWORKS.contains(&v) => Some(()),
                _ => return Some((a.to_string(), "only a network of the container's own")),
            }
        } else if flag == "--runtime" {
            // A runtime by name (looked up in containers.conf), not a host path.
            match value(i) {
                Some(v) if !v.contains('/') => Some(()),
                _ => return Some((a.to_string(), "a runtime by name, not by path")),
            }
        } else {
            None
        };
        match ok {
            Some(()) => i += step,
            None => {
                return Some((
                    a.to_string(),
                    "it can reach the host (mounts, devices, namespaces, privileges, host files) or is not known to be harmless",
                ))
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(args: &[&str]) -> Option<String> {
        let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        untrusted_podman_arg(&v).map(|(a, _)| a)
    }

    #[test]
    fn only_container_scoped_flags_pass() {
        assert_eq!(check(&["--runtime", "runc", "--network", "none"]), None);
        assert_eq!(check(&["--env=A=b=c", "-e", "LANG=C.UTF-8"]), None);
        assert_eq!(
            check(&["--ulimit=nofile=1024:1024", "-e", "A=1", "--rm"]),
            None
        );
        assert_eq!(check(&[]), None);
        for (args, bad) in [
            (&["-v", "/:/host"][..], "-v"),
            (&["--volume=/etc:/e"], "--volume"),
            (&["--mount", "type=bind,src=/,dst=/h"], "--mount"),
            (&["--device", "/dev/sda"], "--device"),
            (&["--privileged"], "--privileged"),
            (&["--cap-add", "SYS_ADMIN"], "--cap-add"),
            (&["--security-opt", "label=disable"], "--security-opt"),
            (&["--pid", "host"], "--pid"),
            (&["--network", "host"], "--network"),
            (&["--net=container:x"], "--net=container:x"),
            (&["--runtime", "/tmp/evil"], "--runtime"),
            (&["--env-file", "/root/.secrets"], "--env-file"),
            (&["-e", "A=1", "--userns=host"], "--userns=host"),
            (&["--rm=false", "-v", "/:/h"], "--rm=false"),
            (&["-e", "*"], "-e"),
            (
                &["--env=AWS_SECRET_ACCESS_KEY"],
                "--env=AWS_SECRET_ACCESS_KEY",
            ),
            (&["-e", "GITHUB_*=x"], "-e"),
        ] {
            let got = check(args).unwrap_or_else(|| panic!("{args:?} passed"));
            assert!(got.starts_with(bad), "{args:?}: {got}");
        }
    }
}
