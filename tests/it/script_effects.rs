//! `build --json`'s report of what each maintainer script would have done: every package with
//! scripts has effects (none empty), a fontconfig-like `interest` trigger that another
//! package's fonts activate is `not-done` with its consequence, and the text output counts
//! the outcomes and names each effect not done. The online test reads the scripts of real
//! trixie and bookworm packages (python3, fontconfig, shared-mime-info, gdk-pixbuf, GLib).

use fs_err as fs;
use serde_json::Value;

use crate::aptfix::{self, deb, fixture, python_universe, Data, Deb};
use crate::common::{self, ocibuild, run_ok, stdout, tempdir};

// Written for these tests in the shape of the packages' scripts, not copied from them.
const FONTCONF_POSTINST: &str = "#!/bin/sh\nset -e\nif [ \"$1\" = triggered ]; then\n  mkdir -p /var/cache/fontconf\n  fc-cache -s 1>/var/log/fontconf.log 2>&1 || printf \"fc-cache failed.\\n\"\n  exit 0\nfi\nif [ \"$1\" = configure ]; then\n  mkdir -p /var/cache/fontconf\n  fc-cache -s -f\nfi\n";
const SCHEMAS_POSTINST: &str = "#!/bin/sh\nset -e\n\"/usr/lib/x86_64-linux-gnu/glib-2.0/glib-compile-schemas\" /usr/share/glib-2.0/schemas || true\n";
const SERVICE_POSTINST: &str = "#!/bin/sh\nset -e\nif [ \"$1\" = \"configure\" ] || [ \"$1\" = \"abort-upgrade\" ]; then\n\tdeb-systemd-helper unmask 'demo.service' >/dev/null || true\n\tif [ -d /run/systemd/system ]; then\n\t\tsystemctl --system daemon-reload >/dev/null || true\n\t\tdeb-systemd-invoke start 'demo.service' >/dev/null || true\n\tfi\nfi\nfrob-config --regenerate /etc/demo\n";

fn universe() -> Vec<Deb> {
    let mut u = python_universe();
    u.push(
        deb("fontconf", "2.15")
            .script("postinst", FONTCONF_POSTINST)
            .script("postrm", "#!/bin/sh\nset -e\nrm -rf /var/cache/fontconf\n")
            .script(
                "triggers",
                "interest-noawait /usr/share/fonts\ninterest-noawait /usr/share/texmf/fonts\n",
            )
            .data(Data::Dir("./usr/bin/"))
            .data(Data::File("./usr/bin/fc-cache", "#!fake\n", 0o755)),
    );
    u.push(
        deb("fonts-demo", "1.0")
            .data(Data::Dir("./usr/share/fonts/"))
            .data(Data::Dir("./usr/share/fonts/truetype/"))
            .data(Data::File(
                "./usr/share/fonts/truetype/Demo.ttf",
                "not a font",
                0o644,
            )),
    );
    u.push(
        deb("libschemas0", "2.84")
            .script("postinst", SCHEMAS_POSTINST)
            .script(
                "triggers",
                "interest-await /usr/share/glib-2.0/schemas\nactivate-noawait ldconfig\n",
            )
            .data(Data::Dir("./usr/lib/"))
            .data(Data::File("./usr/lib/libschemas.so.0", "ELF", 0o644)),
    );
    u.push(deb("demo-daemon", "1.0").script("postinst", SERVICE_POSTINST));
    u.push(deb("quiet", "1.0").script("prerm", "#!/bin/sh\nset -e\nexit 0\n"));
    u
}

#[test]
fn every_package_with_scripts_is_reported_and_a_font_trigger_is_not_done() {
    let f = fixture(&universe(), false);
    let t = tempdir();
    let pkgs = [
        "python3",
        "fontconf",
        "fonts-demo",
        "libschemas0",
        "demo-daemon",
        "quiet",
    ];
    let r = aptfix::apt_recipe(t.path(), &f, &f.key, &pkgs, "");
    let cache = t.path().join("cache");
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", &cache)
            .args(["build", "--json", "-o"])
            .arg(t.path().join("img"))
            .arg(&r),
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rf = &v["rootfs"];
    let scripts = rf["scriptsNotRun"].as_array().unwrap();
    let names: Vec<&str> = scripts
        .iter()
        .map(|s| s["package"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["demo-daemon", "fontconf", "libschemas0", "quiet"],
        "{rf:#}"
    );
    for s in scripts {
        let effects = s["effects"].as_array().unwrap();
        assert!(!effects.is_empty(), "{s:#}");
        // Every script the package has appears among its effects.
        for script in s["scripts"].as_array().unwrap() {
            assert!(
                effects.iter().any(|e| &e["script"] == script),
                "{script}: {s:#}"
            );
        }
        // The older keys stay.
        assert!(
            s["emulated"].is_array() && s["notEmulated"].is_array(),
            "{s:#}"
        );
    }
    let of = |p: &str, script: &str, action: &str| -> Value {
        let s = scripts.iter().find(|s| s["package"] == p).unwrap();
        s["effects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["script"] == script && e["action"] == action)
            .unwrap_or_else(|| panic!("{p} {script} {action}: {s:#}"))
            .clone()
    };
    // fonts-demo's font activates fontconf's interest: fc-cache is not done, and says why.
    let trig = of("fontconf", "triggers", "fc-cache");
    assert_eq!(trig["outcome"], "not-done", "{trig:#}");
    let detail = trig["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("activated by /usr/share/fonts/truetype"),
        "{detail}"
    );
    assert!(detail.contains("no fontconfig cache"), "{detail}");
    assert_eq!(
        trig["lines"],
        serde_json::json!(["interest-noawait /usr/share/fonts"])
    );
    assert_eq!(
        of("fontconf", "postinst", "fc-cache")["outcome"],
        "not-done"
    );
    assert_eq!(of("fontconf", "postrm", "remove")["outcome"], "not-needed");
    // No schema installed: compiling them is not needed, and the trigger has nothing under it.
    assert_eq!(
        of("libschemas0", "postinst", "glib-compile-schemas")["outcome"],
        "not-needed"
    );
    assert_eq!(
        of("libschemas0", "triggers", "glib-compile-schemas")["outcome"],
        "not-needed"
    );
    assert_eq!(
        of("libschemas0", "triggers", "ldconfig")["outcome"],
        "not-needed"
    );
    // Services are not needed in an image; the unknown command is listed as written.
    assert_eq!(
        of("demo-daemon", "postinst", "services")["outcome"],
        "not-needed"
    );
    let odd = of("demo-daemon", "postinst", "unrecognized");
    assert_eq!(
        (odd["outcome"].as_str(), &odd["lines"]),
        (
            Some("not-done"),
            &serde_json::json!(["frob-config --regenerate /etc/demo"])
        )
    );
    assert_eq!(of("quiet", "prerm", "nothing")["outcome"], "not-needed");
    let c = &rf["scriptEffects"];
    assert_eq!(c["packages"], 4);
    let total: u64 = scripts
        .iter()
        .map(|s| s["effects"].as_array().unwrap().len() as u64)
        .sum();
    assert_eq!(
        c["emulated"].as_u64().unwrap()
            + c["notNeeded"].as_u64().unwrap()
            + c["notDone"].as_u64().unwrap(),
        total
    );

    // The text output: the counts, then one line per effect not done.
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", &cache)
            .args(["build", "-o"])
            .arg(t.path().join("img"))
            .arg(&r),
    );
    let text = stdout(&o);
    let want = format!(
        "maintainer scripts (none run): 4 packages; {} effects emulated, {} not needed in an image, {} not done (build --json: rootfs.scriptsNotRun)",
        c["emulated"], c["notNeeded"], c["notDone"]
    );
    assert!(text.contains(&want), "{text}");
    assert!(
        text.contains(
            "  not done: fontconf: fc-cache → no fontconfig cache in /var/cache/fontconfig"
        ),
        "{text}"
    );
    assert!(
        text.contains("  not done: demo-daemon: 1 unrecognized script line(s) → not run"),
        "{text}"
    );
    assert!(!text.contains("not done: demo-daemon: services"), "{text}");
}

/// A scratch recipe with the packages whose scripts and triggers matter most, on `suite`.
fn field_recipe(
    dir: &std::path::Path,
    suite: &str,
    glib: &str,
    python: &str,
) -> std::path::PathBuf {
    let keys = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/keys");
    let text = format!(
        "[image]\nname = \"localhost/ocibuild/effects\"\ntag = \"{suite}\"\n\n[[apt.source]]\nurl = \"{}\"\nsuite = \"{suite}\"\ncomponents = [\"main\"]\nsigned-by = \"{}/debian-{suite}.asc\"\n\n[apt]\npackages = [\"python3\", \"ca-certificates\", \"fontconfig\", \"shared-mime-info\", \"libgdk-pixbuf-2.0-0\", \"{glib}\"]\n\n[python]\nversion = \"{python}\"\n",
        ocibuild::defaults::DEBIAN_ARCHIVE,
        keys.display()
    );
    let p = dir.join(format!("{suite}.toml"));
    fs::write(&p, text).unwrap();
    p
}

#[test]
fn online_real_trixie_and_bookworm_packages_report_their_scripts() {
    if !common::online("reads the maintainer scripts of trixie's and bookworm's python3, fontconfig, shared-mime-info, gdk-pixbuf and GLib") {
        return;
    }
    let t = tempdir();
    for (suite, glib, python) in [
        ("trixie", "libglib2.0-0t64", "3.13"),
        ("bookworm", "libglib2.0-0", "3.11"),
    ] {
        let r = field_recipe(t.path(), suite, glib, python);
        let cache = t.path().join("cache");
        run_ok(ocibuild().env("OCIBUILD_CACHE", &cache).arg("lock").arg(&r));
        let o = run_ok(
            ocibuild()
                .env("OCIBUILD_CACHE", &cache)
                .args(["build", "--json", "-o"])
                .arg(t.path().join(format!("img-{suite}")))
                .arg(&r),
        );
        let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
        let scripts = v["rootfs"]["scriptsNotRun"].as_array().unwrap();
        assert!(scripts.len() > 20, "{suite}: {}", scripts.len());
        for s in scripts {
            assert!(
                !s["effects"].as_array().unwrap().is_empty(),
                "{suite}: {s:#}"
            );
        }
        let has = |p: &str, action: &str, outcome: &str| {
            scripts.iter().any(|s| {
                s["package"] == p
                    && s["effects"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|e| e["action"] == action && e["outcome"] == outcome)
            })
        };
        // fontconfig pulls in fonts-dejavu-core, whose fonts activate its trigger.
        assert!(has("fontconfig", "fc-cache", "not-done"), "{suite}");
        assert!(
            has("shared-mime-info", "update-mime-database", "not-done"),
            "{suite}"
        );
        assert!(
            has(
                "libgdk-pixbuf-2.0-0",
                "gdk-pixbuf-query-loaders",
                "not-done"
            ),
            "{suite}"
        );
        assert!(has(glib, "glib-compile-schemas", "not-needed"), "{suite}");
        assert!(has("python3", "python-bytecompile", "not-done"), "{suite}");
        assert!(
            has("ca-certificates", "update-ca-certificates", "emulated"),
            "{suite}"
        );
        assert!(has("libc6", "ldconfig", "not-needed"), "{suite}");
        eprintln!("{suite}: {}", v["rootfs"]["scriptEffects"]);
    }
}
