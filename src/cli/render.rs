//! The text a person reads of a build ([`crate::outcome::BuildOutcome`]): what was built as it
//! is known (before the test stage), then what the push did. `--json` prints the outcome
//! itself instead.

use crate::bounded::human_bytes;
use crate::outcome::{BuildOutcome, ManifestOutcome, WheelsOutcome};

/// The build's result, before its tests and push: where it went, the manifest (or the index
/// and each platform's manifest), the interpreter, the rootfs step, the layers; with `quiet`
/// only `NAME:TAG@DIGEST` (nothing when the push will print the pushed reference).
pub(super) fn built(outcome: &BuildOutcome, quiet: bool, pushing: bool) {
    let (image, output, digest) = match outcome {
        BuildOutcome::Image(o) => (&o.image, &o.output, o.manifest.manifest),
        BuildOutcome::Index(o) => (&o.image, &o.output, o.index),
    };
    if quiet {
        // Only the result, as ko prints only the reference (with --push, the pushed
        // reference instead, printed once pushed).
        if !pushing {
            println!("{image}@{digest}");
        }
        return;
    }
    match output {
        Some(o) => println!("{image} -> {o}"),
        None => println!("{image} (no local output: --push-only)"),
    }
    match outcome {
        BuildOutcome::Image(o) => {
            println!("manifest {}", o.manifest.manifest);
            manifest(&o.manifest, "  ");
        }
        BuildOutcome::Index(o) => {
            println!("index {}", o.index);
            for m in &o.manifests {
                println!(
                    "  {}: manifest {}",
                    m.platform.as_deref().unwrap_or_default(),
                    m.manifest.manifest
                );
                manifest(&m.manifest, "    ");
            }
        }
    }
}

/// One manifest's interpreter, rootfs step, host-provided names, wheel notes and layers.
fn manifest(m: &ManifestOutcome, indent: &str) {
    if let Some(i) = &m.python {
        println!(
            "{}python {} ({}, {}, glibc {}) at {}; packages go to {}",
            &indent[2..],
            i.version,
            i.abi,
            i.machine,
            i.glibc.as_deref().unwrap_or("none"),
            i.executable,
            i.purelib
        );
    }
    if let Some(r) = &m.rootfs {
        rootfs(r);
    }
    host_provides(
        m.host_provides
            .iter()
            .map(|h| (h.name.as_str(), &h.satisfies[..])),
        &m.warnings,
    );
    wheels(&m.wheels);
    if let Some(c) = &m.cuda {
        cuda(c, &indent[2..]);
    }
    for st in &m.steps {
        match st.duration_secs {
            Some(d) => println!("{}step {}: ran in {d:.1}s", &indent[2..], st.name),
            None => println!("{}step {}: cached", &indent[2..], st.name),
        }
    }
    for l in &m.layers {
        println!(
            "{indent}layer {}: {} ({}{})",
            l.name,
            l.digest,
            human_bytes(l.size),
            if l.cached { ", cached" } else { "" }
        );
    }
}

/// `[image] cuda-archs`: the bytes removed in all, then each library: the bytes removed and
/// the architectures kept and removed, or why it was left as it is.
fn cuda(c: &crate::cuda::CudaReport, indent: &str) {
    let pruned = c.libraries.iter().filter(|l| l.pruned.is_some()).count();
    println!(
        "{indent}cuda: pruned to {} (PTX: {}): {} removed from {pruned} of {} CUDA libraries",
        c.archs.join(", "),
        c.ptx,
        human_bytes(c.bytes_removed()),
        c.libraries.len()
    );
    for l in &c.libraries {
        match (&l.pruned, &l.reason) {
            (Some(p), _) => println!(
                "{indent}  {}: {} of {} removed (kept {}{})",
                l.path,
                human_bytes(p.bytes_removed),
                human_bytes(l.size),
                p.kept.join(" "),
                if p.removed.is_empty() {
                    String::new()
                } else {
                    format!("; removed {}", p.removed.join(" "))
                }
            ),
            (None, reason) => println!(
                "{indent}  {}: left as it is: {}",
                l.path,
                reason.as_deref().unwrap_or("not pruned")
            ),
        }
    }
}

/// What the push did: each blob and the reference pushed (with `quiet` only the reference),
/// each referrer and the referrers tag, each signature.
pub(super) fn pushed(outcome: &BuildOutcome, quiet: bool) {
    let (referrers, signatures) = match outcome {
        BuildOutcome::Image(o) => {
            let Some(r) = &o.push else { return };
            if quiet {
                println!("{}", r.pushed);
            } else {
                for b in &r.blobs {
                    println!(
                        "  blob {} ({}): {}",
                        b.digest,
                        human_bytes(b.size),
                        b.result
                    );
                }
                println!(
                    "pushed {} ({} uploaded)",
                    r.pushed,
                    human_bytes(r.uploaded_bytes)
                );
            }
            (
                o.referrers_push.iter().collect::<Vec<_>>(),
                o.signature.iter().collect::<Vec<_>>(),
            )
        }
        BuildOutcome::Index(o) => {
            let Some(r) = &o.push else { return };
            if quiet {
                println!("{}", r.pushed);
            } else {
                println!(
                    "pushed {} ({} uploaded)",
                    r.pushed,
                    human_bytes(r.uploaded_bytes)
                );
            }
            (
                o.referrers_push.iter().collect(),
                o.signatures.iter().collect(),
            )
        }
    };
    if quiet {
        return;
    }
    for r in referrers {
        for d in &r.documents {
            println!("attached {} ({})", d.reference, d.describe());
        }
        println!("referrers tag {} ({})", r.fallback_tag, r.fallback_digest);
        if let Some(att) = &r.attestation_tag {
            println!("attestations for cosign {att}");
        }
    }
    for s in signatures {
        super::sign::print_signed_line(s);
    }
}

/// `[apt] host-provides` (stdout): each name with the packages whose dependency it satisfied;
/// the warnings (stderr).
pub(super) fn host_provides<'a>(
    host: impl Iterator<Item = (&'a str, &'a [String])>,
    warnings: &[String],
) {
    for (name, satisfies) in host {
        if satisfies.is_empty() {
            continue;
        }
        let mut by: Vec<&str> = satisfies
            .iter()
            .map(|s| s.split_once(':').map_or(s.as_str(), |(p, _)| p))
            .collect();
        by.dedup();
        println!(
            "host provides {name} at run time (not in the image), for {}",
            by.join(", ")
        );
    }
    for w in warnings {
        eprintln!("warning: {w}");
    }
}

/// What the `rootfs` layer holds and which maintainer scripts were not run (stdout); a needed
/// `ld.so.cache` as a warning (stderr).
fn rootfs(r: &crate::rootfs::Report) {
    let mut parts = Vec::new();
    if r.baseline {
        parts.push("the Debian baseline directories".to_string());
    }
    if let Some(a) = &r.accounts {
        parts.push(format!(
            "{} users, {} groups",
            a.users.len(),
            a.groups.len()
        ));
    }
    if !r.alternatives.is_empty() {
        let names: Vec<String> = r
            .alternatives
            .iter()
            .map(|a| format!("{} -> {}", a.link, a.path))
            .collect();
        parts.push(format!("alternatives {}", names.join(", ")));
    }
    if !parts.is_empty() {
        println!("rootfs: {}", parts.join("; "));
    }
    if !r.scripts_not_run.is_empty() {
        let c = &r.script_effects;
        println!(
            "maintainer scripts (none run): {} packages; {} effects emulated, {} not needed in an image, {} not done (build --json: rootfs.scriptsNotRun)",
            c.packages, c.emulated, c.not_needed, c.not_done
        );
        for line in not_done_lines(r) {
            println!("  not done: {line}");
        }
    }
    if r.ld_so_cache.needed {
        eprintln!("warning: /etc/ld.so.cache {}", r.ld_so_cache.reason);
    }
}

/// One line per package and action not done: `package: action → consequence` (the
/// consequence up to its first `; `, a trigger's "activated by …" left out; unrecognized lines
/// counted).
fn not_done_lines(r: &crate::rootfs::Report) -> Vec<String> {
    use crate::rootfs::effects::Outcome;
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for s in &r.scripts_not_run {
        for e in s.effects.iter().filter(|e| e.outcome == Outcome::NotDone) {
            if !seen.insert((s.package.as_str(), e.action.as_str())) {
                continue;
            }
            let detail = match e.detail.strip_prefix("activated by") {
                Some(rest) => rest.split_once(": ").map_or(rest, |(_, d)| d),
                None => e.detail.as_str(),
            };
            let short = detail.split("; ").next().unwrap_or(detail);
            if e.action == "unrecognized" {
                let n: usize = s
                    .effects
                    .iter()
                    .filter(|x| x.action == e.action && x.outcome == Outcome::NotDone)
                    .map(|x| x.lines.len())
                    .sum();
                out.push(format!(
                    "{}: {n} unrecognized script line(s) → not run",
                    s.package
                ));
            } else {
                out.push(format!("{}: {} → {short}", s.package, e.action));
            }
        }
    }
    out
}

/// Which copy of a duplicate library loads, why, and what the other costs: one line.
fn loads_text(d: &crate::system::wheelset::DuplicateLibrary, place: &str) -> String {
    let users = |copy: &str| d.users.iter().filter(|u| u.loads == copy).count();
    let first = d.users.first().map_or(String::new(), |u| {
        format!(" (e.g. {} through {})", u.path, u.via)
    });
    // What becomes of the earlier copy when the wheel's loads.
    let earlier = if d.origin == "base" {
        " (the base's layers are reused as they are: a base without it saves them)".to_string()
    } else if d.dropped.is_some() {
        ": left out of the apt layer ([image] drop-unused-copies)".to_string()
    } else if let Some(why) = &d.kept {
        format!(" (kept: {why})")
    } else {
        " ([image] drop-unused-copies = true leaves it out)".to_string()
    };
    match d.loads.as_str() {
        "wheel" if d.users.is_empty() => format!(
            "loaded: the wheel's copy ({}); the {place}'s copy is unused: {}{earlier}",
            d.via.as_deref().unwrap_or("dlopen"),
            human_bytes(d.unused_bytes),
        ),
        "wheel" => format!(
            "loaded: the wheel's copy, by the {} ELF file(s) that link it{first}; the {place}'s copy is unused: {}{earlier}",
            d.users.len(),
            human_bytes(d.unused_bytes),
        ),
        "mixed" => format!(
            "loaded: whichever is loaded first: {} ELF file(s) reach the wheel's copy, {} the {place}'s{first}; a process keeps the first copy it loads (the loader reuses a loaded soname), so which one serves depends on the import order{}",
            users("wheel"),
            users(&d.origin),
            d.via.as_deref().map(|v| format!(" ({v})")).unwrap_or_default()
        ),
        "unknown" => format!(
            "loaded: unknown ({})",
            d.via.as_deref().unwrap_or("no ELF file links it")
        ),
        _ => format!(
            "loaded: the {place}'s copy, by the {} ELF file(s) that link it{first}; the wheel's copy is unused: {}{}{}",
            d.users.len(),
            human_bytes(d.unused_bytes),
            if d.dropped.is_some() {
                ": left out of the wheel's layer ([image] drop-unused-copies)"
            } else {
                " ([image] drop-unused-copies = true leaves it out)"
            },
            d.via.as_deref().map(|v| format!("; but {v}")).unwrap_or_default()
        ),
    }
}

/// Notes on stderr: files several wheels share or that `overlap = "last"` settled, and the
/// shared libraries that the base and a wheel both ship.
fn wheels(r: &WheelsOutcome) {
    if !r.shared_files.is_empty() {
        let wheels: std::collections::BTreeSet<&String> =
            r.shared_files.iter().flat_map(|f| &f.wheels).collect();
        eprintln!(
            "note: {} path(s) installed with the same content by several wheels ({}): kept once \
             per layer",
            r.shared_files.len(),
            wheels.into_iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    for f in &r.replaced_files {
        eprintln!(
            "note: {}: installed from {} (overlap = \"last\"), left out of {}",
            f.path,
            f.installed_by,
            f.left_out_by.join(", ")
        );
    }
    let dups = r.duplicate_libraries.as_deref().unwrap_or_default();
    let wasted: u64 = dups.iter().map(|d| d.wheel_size).sum();
    for d in dups {
        let place = if d.origin == "apt" {
            "apt layer"
        } else {
            "base"
        };
        eprintln!(
            "note: {} is in the {place} at {} and installed again by wheel {} at {} ({} twice)",
            d.soname,
            d.base_path,
            d.wheel,
            d.wheel_path,
            human_bytes(d.wheel_size)
        );
        eprintln!("  {}", loads_text(d, place));
    }
    if dups.len() > 1 {
        eprintln!(
            "note: {} shared libraries of the base or the apt layer are shipped again by wheels: \
             {}",
            dups.len(),
            human_bytes(wasted)
        );
    }
}
