//! Logins in URLs. A recipe whose `[[apt.source]]` and `[python] index` carry
//! `user:password@` builds against busybox httpd on 127.0.0.1 behind Basic auth (the index's
//! login opens the wheels it links to on its host), and the password shows in no file that
//! `build --attach`, `vendor`, `sbom` and `provenance` write (lock, layout, referrers, store,
//! vendor index) and in nothing they print. netrc works the same; a wrong or missing login is a
//! clear 401 without the password. A registry that echoes the request's Authorization in its
//! error body has it masked. A login pasted into an image reference is never shown (issue 31,
//! case 13; network_errors.rs's helpers).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use base64::Engine as _;
use fs_err as fs;

use crate::aptfix::{fixture, python_universe};
use crate::common::context::TestContext;
use crate::common::{self, ocibuild, run, run_ok, tempdir};
use crate::wheel_recipe::{wheels, Wheels};

const USER: &str = "alice";
/// As busybox's config and the decoded login have it; in a URL it is `s3cret%40pw`.
const PASSWORD: &str = "s3cret@pw";

/// busybox httpd serving `root`, every path behind `USER:PASSWORD`; killed on drop.
struct Httpd {
    child: Child,
    port: u16,
}

impl Drop for Httpd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn httpd(root: &Path, conf_dir: &Path) -> Httpd {
    let busybox = common::which("busybox").expect("busybox on PATH");
    let conf = conf_dir.join("httpd.conf");
    fs::write(&conf, format!("/:{USER}:{PASSWORD}\n")).unwrap();
    for _ in 0..5 {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new(&busybox)
            .args(["httpd", "-f", "-p", &format!("127.0.0.1:{port}"), "-h"])
            .arg(root)
            .arg("-c")
            .arg(&conf)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Httpd { child, port };
            }
            if child.try_wait().unwrap().is_some() {
                break; // the port was taken meanwhile: another one
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("busybox httpd did not start");
}

/// PEP 503 pages for the wheels (links relative, to `/files/` on the same host).
fn html_index(root: &Path, w: &Wheels) {
    for pkg in ["click", "fastlib"] {
        let d = root.join("simple").join(pkg);
        fs::create_dir_all(&d).unwrap();
        let links: Vec<String> = w
            .files
            .iter()
            .filter(|(f, _, _)| f.starts_with(&format!("{pkg}-")))
            .map(|(f, sha, _)| format!("<a href=\"../../files/{f}#sha256={sha}\">{f}</a><br/>"))
            .collect();
        fs::write(
            d.join("index.html"),
            format!("<html><body>{}</body></html>", links.join("\n")),
        )
        .unwrap();
    }
    fs::create_dir_all(root.join("files")).unwrap();
    for (f, _, _) in &w.files {
        fs::copy(w.dir.join(f), root.join("files").join(f)).unwrap();
    }
}

fn requirements(dir: &Path, w: &Wheels) {
    let hashes = |pkg: &str| -> Vec<String> {
        w.files
            .iter()
            .filter(|(f, _, _)| f.starts_with(&format!("{pkg}-")))
            .map(|(_, sha, _)| format!("--hash=sha256:{sha}"))
            .collect()
    };
    fs::write(
        dir.join("requirements.txt"),
        format!(
            "click==8.1.7 {}\nfastlib==1.0 {}\n",
            hashes("click").join(" "),
            hashes("fastlib").join(" ")
        ),
    )
    .unwrap();
}

/// The recipe, with `login` (`user:password@`, or empty) in both URLs.
fn recipe(dir: &Path, name: &str, port: u16, login: &str, key: &Path) -> PathBuf {
    let text = format!(
        r#"[image]
name = "example.com/secrets"
platform = "linux/amd64"

[[apt.source]]
url = "http://{login}127.0.0.1:{port}/debian"
suite = "stable"
components = ["main"]
signed-by = "{key}"

[apt]
packages = ["python3"]

[python]
requirements = "requirements.txt"
index = "http://{login}127.0.0.1:{port}/simple"
"#,
        key = key.display()
    );
    let p = dir.join(name);
    fs::write(&p, text).unwrap();
    p
}

/// Every form the secret could take: the password raw and percent-encoded, and the Basic
/// token of the login.
fn forms(password: &str) -> Vec<String> {
    vec![
        password.to_string(),
        password.replace('@', "%40"),
        base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{password}")),
    ]
}

/// The files under `dirs` (recursively) that hold any of `needles`.
fn files_holding(dirs: &[&Path], needles: &[String]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    while let Some(p) = stack.pop() {
        let Ok(meta) = fs::symlink_metadata(&p) else {
            continue;
        };
        if meta.is_dir() {
            for e in fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        } else if meta.is_file() {
            let bytes = fs::read(&p).unwrap();
            let hit = needles
                .iter()
                .any(|n| bytes.windows(n.len()).any(|w| w == n.as_bytes()));
            if hit {
                found.push(p);
            }
        }
    }
    found
}

fn output_text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn assert_no_secret(text: &str, what: &str) {
    for f in forms(PASSWORD).iter().chain(forms("wrong@pw").iter()) {
        assert!(!text.contains(f.as_str()), "{what} shows `{f}`:\n{text}");
    }
}

/// The generated archive and the wheels' index, served by busybox httpd behind `USER:PASSWORD`:
/// made once by the first test that asks (`None` without busybox).
struct Served {
    cx: TestContext,
    f: crate::aptfix::Fixture,
    w: Wheels,
    server: Httpd,
}

fn served() -> Option<&'static Served> {
    static SERVED: OnceLock<Option<Served>> = OnceLock::new();
    SERVED
        .get_or_init(|| {
            if !common::require_tool("busybox") {
                return None;
            }
            let f = fixture(&python_universe(), false);
            let cx = TestContext::new().shared();
            let served = cx.join("served");
            fs::create_dir_all(&served).unwrap();
            let cp = Command::new("cp")
                .arg("-a")
                .arg(&f.repo.root)
                .arg(served.join("debian"))
                .status()
                .unwrap();
            assert!(cp.success());
            let w = wheels(cx.path());
            html_index(&served, &w);
            let server = httpd(&served, cx.path());
            common::context::clean_up_after_exit(&[server.child.id().to_string()], &[]);
            Some(Served { cx, f, w, server })
        })
        .as_ref()
}

impl Served {
    /// A work directory of `name` with the requirements file the recipes name.
    fn work(&self, name: &str) -> PathBuf {
        let work = self.cx.join(name);
        fs::create_dir_all(&work).unwrap();
        requirements(&work, &self.w);
        work
    }

    /// `ocibuild` with `cache` and no netrc.
    fn cmd(&self, cache: &Path) -> Command {
        let mut c = ocibuild();
        c.env("OCIBUILD_CACHE", cache)
            .env("NETRC", self.cx.join("no-netrc"));
        c
    }
}

#[test]
fn url_logins_authenticate_and_are_written_nowhere() {
    let Some(s) = served() else {
        return;
    };
    let (f, server) = (&s.f, &s.server);
    let cmd = |cache: &Path| s.cmd(cache);
    let work = s.work("work");
    // The login in the URLs opens the archive, the index and the wheels on the same host.
    let login = format!("{USER}:{}@", PASSWORD.replace('@', "%40"));
    let r = recipe(&work, "app.toml", server.port, &login, &f.key);
    let (img, cache, vend) = (work.join("img"), work.join("cache"), work.join("vendor"));
    let mut printed = String::new();
    let o = run_ok(
        cmd(&cache)
            .args(["build", "--attach", "--json", "-o"])
            .arg(&img)
            .arg(&r),
    );
    printed += &output_text(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v["layers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["name"].as_str())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("wheels-")) && names.contains(&"apt"),
        "{names:?}"
    );
    let lock = fs::read_to_string(work.join("app.lock")).unwrap();
    assert!(
        lock.contains(&format!(
            "http://127.0.0.1:{}/files/click-8.1.7",
            server.port
        )),
        "{lock}"
    );
    let oci_ref = format!("oci:{}", img.display());
    for args in [
        vec!["sbom", "--image", &oci_ref],
        vec!["sbom", "--format", "cyclonedx", "--image", &oci_ref],
        vec!["provenance", "--image", &oci_ref],
    ] {
        let o = run_ok(cmd(&cache).args(&args).arg(&r));
        printed += &output_text(&o);
    }
    let o = run_ok(cmd(&cache).args(["vendor", "--into"]).arg(&vend).arg(&r));
    printed += &output_text(&o);
    // A lock written with a login inside (by hand, or by an older ocibuild) loses it on the
    // next write, and the login still comes from the recipe.
    let leaky = lock.replace("http://127.0.0.1", &format!("http://{login}127.0.0.1"));
    fs::write(work.join("app.lock"), &leaky).unwrap();
    let o = run_ok(
        cmd(&work.join("cache2"))
            .args(["build", "--locked", "-o"])
            .arg(work.join("img2"))
            .arg(&r),
    );
    printed += &output_text(&o);
    run_ok(cmd(&cache).args(["lock"]).arg(&r));

    assert_no_secret(&printed, "the commands' output");
    let lock_file = work.join("app.lock");
    let leaks = files_holding(
        &[
            &img,
            &cache,
            &vend,
            &work.join("img2"),
            &work.join("cache2"),
            &lock_file,
        ],
        &forms(PASSWORD),
    );
    assert!(leaks.is_empty(), "the login was written to {leaks:?}");
}

#[test]
fn a_wrong_or_missing_login_is_a_clear_401_without_the_password() {
    let Some(s) = served() else {
        return;
    };
    let (f, server) = (&s.f, &s.server);
    let cmd = |cache: &Path| s.cmd(cache);
    let work = s.work("work-fail");
    // A wrong login, and none: a clear 401 naming the host, without the password.
    let wrong = recipe(
        &work,
        "wrong.toml",
        server.port,
        &format!("{USER}:wrong%40pw@"),
        &f.key,
    );
    let none = recipe(&work, "none.toml", server.port, "", &f.key);
    for (r, what, hint) in [
        (
            &wrong,
            "a wrong login",
            "the login sent for this host was refused",
        ),
        (&none, "no login", "the server asks for a login"),
    ] {
        let o = run(cmd(&work.join("cache-fail"))
            .args(["build", "-o"])
            .arg(work.join("img-fail"))
            .arg(r));
        let text = output_text(&o);
        assert!(!o.status.success(), "{what}: built\n{text}");
        assert!(
            text.contains("401")
                && text.contains(hint)
                && text.contains(&format!("127.0.0.1:{}", server.port)),
            "{what}: {text}"
        );
        assert_no_secret(&text, what);
    }
}

#[test]
fn a_netrc_login_serves_a_recipe_without_one() {
    let Some(s) = served() else {
        return;
    };
    let (f, server, t) = (&s.f, &s.server, &s.cx);
    let work = s.work("work-netrc");
    let none = recipe(&work, "none.toml", server.port, "", &f.key);
    // netrc: the same login for the host, for a recipe without one.
    let netrc = t.path().join("netrc");
    fs::write(
        &netrc,
        format!("machine 127.0.0.1\n  login {USER}\n  password {PASSWORD}\n"),
    )
    .unwrap();
    fs::remove_file(work.join("none.lock")).ok();
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", work.join("cache-netrc"))
            .env("NETRC", &netrc)
            .args(["build", "-o"])
            .arg(work.join("img-netrc"))
            .arg(&none),
    );
    assert_no_secret(&output_text(&o), "the netrc build");
    let leaks = files_holding(
        &[
            &work.join("img-netrc"),
            &work.join("cache-netrc"),
            &work.join("none.lock"),
        ],
        &forms(PASSWORD),
    );
    assert!(leaks.is_empty(), "the netrc login was written to {leaks:?}");
}

/// A registry that refuses every request with a Basic challenge and an error body echoing the
/// request's Authorization header: what a misconfigured proxy does.
#[test]
fn a_registry_echoing_the_authorization_header_has_it_masked() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut auth = String::new();
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                if let Some((k, v)) = line.split_once(':') {
                    if k.eq_ignore_ascii_case("authorization") {
                        auth = v.trim().to_string();
                    }
                }
                line.clear();
            }
            let token = auth.strip_prefix("Basic ").unwrap_or("");
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(token)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            let body = serde_json::json!({"errors": [{
                "code": "UNAUTHORIZED",
                "message": format!("refused Authorization: {auth} (that is {decoded}, token {token})"),
            }]})
            .to_string();
            let _ = write!(
                conn,
                "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"x\"\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let t = tempdir();
    let auth_file = t.path().join("auth.json");
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    fs::write(
        &auth_file,
        serde_json::json!({"auths": {&addr: {"auth": token}}}).to_string(),
    )
    .unwrap();
    let registries = t.path().join("registries.toml");
    fs::write(
        &registries,
        format!("[[registry]]\nname = \"{addr}\"\ninsecure-http = true\n"),
    )
    .unwrap();
    let o = run(ocibuild()
        .env("REGISTRY_AUTH_FILE", &auth_file)
        .env("OCIBUILD_CACHE", t.path().join("cache"))
        .arg("--registries")
        .arg(&registries)
        .args([
            "diff",
            &format!("docker://{addr}/app:v1"),
            &format!("docker://{addr}/app:v2"),
        ]));
    let text = output_text(&o);
    assert!(!o.status.success(), "{text}");
    assert!(
        text.contains("UNAUTHORIZED") && text.contains("refused Authorization: Basic ***"),
        "{text}"
    );
    assert_no_secret(&text, "the registry's error");
}

// ---------------------------------------------------------------------------------------------
// Issue 31, case 13: a login in an image reference

#[test]
fn a_login_in_an_image_reference_is_never_shown() {
    use crate::network_errors::{listing, recipe, text};
    let d = common::test_dir("w");
    let r = recipe(&d);
    let layout = d.join("app.oci");
    common::run_ok(
        common::ocibuild()
            .current_dir(&d)
            .args(["-q", "build"])
            .arg(&r)
            .arg("-o")
            .arg(&layout),
    );
    let key = d.join("k.pem");
    let public = d.join("pub.pem");
    assert!(std::process::Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256"
        ])
        .arg("-out")
        .arg(&key)
        .status()
        .unwrap()
        .success());
    assert!(std::process::Command::new("openssl")
        .args(["pkey", "-pubout", "-in"])
        .arg(&key)
        .arg("-out")
        .arg(&public)
        .status()
        .unwrap()
        .success());
    let port = crate::common::registry::free_port();
    for (password, fragments) in [
        ("s3cret", &["s3cret"][..]),
        ("s3%40cret", &["s3%40cret", "s3%40", "cret"][..]),
    ] {
        let reference = format!("user:{password}@127.0.0.1:{port}/team/x");
        let base_recipe = d.join("based.toml");
        fs::write(
            &base_recipe,
            format!("[image]\nname = \"example.com/x\"\n\n[base]\nimage = \"{reference}:1\"\n"),
        )
        .unwrap();
        let (l, k, p) = (
            layout.to_str().unwrap(),
            key.to_str().unwrap(),
            public.to_str().unwrap(),
        );
        let docker = format!("docker://{reference}");
        let registry_only = format!("user:{password}@127.0.0.1:{port}");
        let rs = r.to_str().unwrap();
        let cases: Vec<Vec<&str>> = vec![
            vec!["build", rs, "-o", "out.oci", "--push", &reference],
            vec!["build", rs, "-o", "out.oci", "--push", &docker],
            vec!["build", rs, "-o", "out.oci", "--cache-repo", &reference],
            vec!["build", base_recipe.to_str().unwrap(), "-o", "out.oci"],
            vec!["lock", base_recipe.to_str().unwrap()],
            vec!["push", l, &reference],
            vec!["push", l, &docker],
            vec!["diff", l, &docker],
            vec!["diff", &docker, l],
            vec!["diff", l, &reference],
            vec!["verify", rs, "--against", &docker],
            vec!["plan", rs, "--against", &reference],
            vec!["mirror", "--to", &registry_only, l],
            vec!["sign", "--key", k, &reference],
            vec!["verify-signature", "--key", p, &reference],
        ];
        for args in cases {
            let before = listing(&d);
            let out = common::run(common::ocibuild().current_dir(&d).args(&args));
            let all = text(&out);
            assert!(!out.status.success(), "{args:?}: {all}");
            for f in fragments {
                assert!(!all.contains(f), "{args:?} shows `{f}`: {all}");
            }
            assert!(
                all.contains("a login (`user:password@`) does not belong in an image reference")
                    && all.contains("REGISTRY_AUTH_FILE")
                    && all.contains(&format!("***@127.0.0.1:{port}")),
                "{args:?}: {all}"
            );
            assert_eq!(all.lines().count(), 1, "{args:?}: {all}");
            assert_eq!(listing(&d), before, "{args:?} changed {}", d.display());
        }
    }
}
