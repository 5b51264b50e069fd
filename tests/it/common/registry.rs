//! Real registries for tests, on 127.0.0.1 with ephemeral ports: Debian's `docker-registry`
//! (CNCF Distribution 2.8) with htpasswd Basic auth, and optionally TLS; and ferro-oci-server,
//! a second implementation (no auth).

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;

pub const USER: &str = "ocibuild";
pub const PASS: &str = "test-password-123";

/// A docker-registry process, killed on drop.
pub struct Registry {
    child: Child,
    pub addr: String,
    _dir: tempfile::TempDir,
    log: PathBuf,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Start docker-registry with htpasswd auth, and TLS when `tls` has (cert, key) PEM files.
pub fn start_registry(tls: Option<(&Path, &Path)>) -> Registry {
    start_registry_with(tls, None)
}

/// [`start_registry`], also requiring TLS clients to present a certificate signed by the CA in
/// `client_ca` (a PEM file).
pub fn start_registry_with(tls: Option<(&Path, &Path)>, client_ca: Option<&Path>) -> Registry {
    let dir = super::tempdir();
    let htpasswd = dir.path().join("htpasswd");
    let hash = bcrypt::hash(PASS, 4).unwrap();
    fs_err::write(&htpasswd, format!("{USER}:{hash}\n")).unwrap();
    let data = dir.path().join("data");
    fs_err::create_dir(&data).unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let tls_yaml = match tls {
        Some((cert, key)) => format!(
            "  tls:\n    certificate: {}\n    key: {}\n{}",
            cert.display(),
            key.display(),
            client_ca
                .map(|ca| format!("    clientcas:\n      - {}\n", ca.display()))
                .unwrap_or_default()
        ),
        None => String::new(),
    };
    let config = format!(
        "version: 0.1\n\
         log:\n  level: info\n  accesslog:\n    disabled: true\n\
         storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
         http:\n  addr: {addr}\n  secret: ocibuild-test-secret\n{tls_yaml}\
         auth:\n  htpasswd:\n    realm: ocibuild-test\n    path: {}\n",
        data.display(),
        htpasswd.display()
    );
    let config_path = dir.path().join("config.yml");
    fs_err::write(&config_path, config).unwrap();
    let log = dir.path().join("registry.log");
    let child = Command::new("docker-registry")
        .arg("serve")
        .arg(&config_path)
        .stdin(Stdio::null())
        .stdout(fs_err::File::create(&log).unwrap().into_file())
        .stderr(
            fs_err::File::create(dir.path().join("registry.err"))
                .unwrap()
                .into_file(),
        )
        .spawn()
        .expect("start docker-registry");
    let reg = Registry {
        child,
        addr,
        _dir: dir,
        log,
    };
    wait_listening(reg, "docker-registry")
}

/// The second registry implementation: ferro-oci-server (from the crates registry; an OCI
/// Distribution 1.1 server in Rust, with the referrers API that Distribution 2.8 lacks), on
/// 127.0.0.1 with an ephemeral port, blobs on disk under a temporary directory. It has no
/// authentication: its tests use no login. scripts/test.sh installs it (`cargo install`).
pub fn start_ferro() -> Registry {
    let dir = super::tempdir();
    let data = dir.path().join("data");
    fs_err::create_dir(&data).unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let log = dir.path().join("registry.log");
    let child = Command::new("ferro-oci-server")
        .env("FERRO_OCI_LISTEN", &addr)
        .env("FERRO_OCI_STORAGE_DIR", &data)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(fs_err::File::create(&log).unwrap().into_file())
        .stderr(
            fs_err::File::create(dir.path().join("registry.err"))
                .unwrap()
                .into_file(),
        )
        .spawn()
        .expect("start ferro-oci-server");
    let reg = Registry {
        child,
        addr,
        _dir: dir,
        log,
    };
    wait_listening(reg, "ferro-oci-server")
}

/// `reg` once its port accepts connections (a panic with its stderr if it exits first).
fn wait_listening(mut reg: Registry, what: &str) -> Registry {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if TcpStream::connect(&reg.addr).is_ok() {
            return reg;
        }
        if let Ok(Some(status)) = reg.child.try_wait() {
            let err =
                fs_err::read_to_string(reg.log.with_file_name("registry.err")).unwrap_or_default();
            panic!("{what} exited ({status}):\n{err}");
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not listen on {}",
            reg.addr
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Registry {
    /// The registry process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The directory holding its configuration, log and data (removed on drop).
    pub fn dir(&self) -> &Path {
        self._dir.path()
    }

    /// Where the registry keeps its blobs (`docker/registry/v2/blobs/sha256/XX/HEX/data` below
    /// it), for tests that make it serve bytes other than what was pushed.
    pub fn data_dir(&self) -> PathBuf {
        self._dir.path().join("data")
    }

    /// What the registry logged so far (each request's method and URI, at `info`).
    pub fn log_text(&self) -> String {
        let err =
            fs_err::read_to_string(self.log.with_file_name("registry.err")).unwrap_or_default();
        let out = fs_err::read_to_string(&self.log).unwrap_or_default();
        format!("{out}{err}")
    }
}

/// A containers-auth.json holding `USER:pass` for `registry`; returns its path.
/// `skopeo copy` of `oci:LAYOUT:TAG` to `docker://ADDR/DEST` (plain HTTP, the test login).
pub fn push_layout(layout: &Path, tag: &str, addr: &str, dest: &str) {
    super::run_ok(
        std::process::Command::new("skopeo")
            .args(["copy", "--quiet", "--dest-tls-verify=false", "--dest-creds"])
            .arg(format!("{USER}:{PASS}"))
            .arg(format!("oci:{}:{tag}", layout.display()))
            .arg(format!("docker://{addr}/{dest}")),
    );
}

pub fn auth_file(dir: &Path, registry: &str, pass: &str) -> PathBuf {
    auth_file_for(dir, &[registry], pass)
}

/// [`auth_file`] with the same login for each of `registries`.
pub fn auth_file_for(dir: &Path, registries: &[&str], pass: &str) -> PathBuf {
    let f = dir.join("auth.json");
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{pass}"));
    let auths: serde_json::Map<String, serde_json::Value> = registries
        .iter()
        .map(|r| (r.to_string(), serde_json::json!({ "auth": auth })))
        .collect();
    fs_err::write(
        &f,
        serde_json::to_vec(&serde_json::json!({ "auths": auths })).unwrap(),
    )
    .unwrap();
    f
}

/// A CA and a server certificate for 127.0.0.1 signed by it: (CA PEM, cert PEM, key PEM).
pub fn make_ca_and_server_cert() -> (String, String, String) {
    let (ca, cert, key, _, _) = make_ca_server_and_client_certs();
    (ca, cert, key)
}

/// [`make_ca_and_server_cert`] plus a client certificate signed by the same CA:
/// (CA, server cert, server key, client cert, client key), all PEM.
pub fn make_ca_server_and_client_certs() -> (String, String, String, String, String) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "ocibuild test CA");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut srv =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    srv.distinguished_name.push(DnType::CommonName, "127.0.0.1");
    srv.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = srv.signed_by(&key, &issuer).unwrap();
    let ckey = KeyPair::generate().unwrap();
    let mut cli = CertificateParams::new(Vec::<String>::new()).unwrap();
    cli.distinguished_name
        .push(DnType::CommonName, "ocibuild test client");
    cli.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let ccert = cli.signed_by(&ckey, &issuer).unwrap();
    (
        ca_cert.pem(),
        cert.pem(),
        key.serialize_pem(),
        ccert.pem(),
        ckey.serialize_pem(),
    )
}
