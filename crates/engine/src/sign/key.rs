//! Signing and verification keys: ECDSA P-256, the one algorithm sigstore signatures, skopeo
//! and podman agree on. Private keys as openssl writes them (PKCS#8 `PRIVATE KEY`, SEC1
//! `EC PRIVATE KEY`) or as cosign writes them (`ENCRYPTED SIGSTORE PRIVATE KEY`: the
//! go-securesystemslib `encrypted` JSON, scrypt + NaCl secretbox around a PKCS#8 key); public
//! keys as SPKI `PUBLIC KEY` PEM. Nothing here keeps, prints or returns key material.

use std::path::Path;

use base64::Engine;
use p256::ecdsa::signature::{Signer, Verifier};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey, ObjectIdentifier};
use serde::Deserialize;
use zeroize::Zeroizing;

use super::SignError;

/// The OID of an elliptic-curve public key (id-ecPublicKey), the algorithm of a P-256 key.
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");

/// A key algorithm as people name it, with its OID (`an Ed25519 key (1.3.101.112)`); an OID
/// not listed is given as it is (`a key of algorithm 1.2.3`).
fn algorithm(oid: ObjectIdentifier) -> String {
    let (article, name) = match oid.to_string().as_str() {
        "1.3.101.112" => ("an", "Ed25519"),
        "1.3.101.113" => ("an", "Ed448"),
        "1.3.101.110" => ("an", "X25519"),
        "1.3.101.111" => ("an", "X448"),
        "1.2.840.113549.1.1.1" => ("an", "RSA"),
        "1.2.840.113549.1.1.10" => ("an", "RSA-PSS"),
        "1.2.840.10040.4.1" => ("a", "DSA"),
        "1.2.840.10046.2.1" => ("a", "Diffie-Hellman"),
        _ => return format!("a key of algorithm {oid}"),
    };
    format!("{article} {name} key ({oid})")
}

/// A private key ready to sign, and what was noticed about its file.
pub struct PrivateKey {
    key: SigningKey,
    /// Set when the file is readable by group or others: the caller says so (a warning).
    pub readable_by_others: Option<u32>,
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrivateKey(P-256, not shown)")
    }
}

impl PrivateKey {
    /// Reads the private key at `path`; `passphrase` opens a cosign key (a plain key has
    /// none, and one given is not used).
    pub fn load(path: &Path, passphrase: Option<&[u8]>) -> Result<PrivateKey, SignError> {
        let text = Zeroizing::new(read(path)?);
        let bad = |problem: String| SignError::Key {
            path: path.to_path_buf(),
            problem,
        };
        let (label, der) = decode_pem(&text).map_err(bad)?;
        let der = Zeroizing::new(der);
        let key = match label.as_str() {
            "PRIVATE KEY" => from_pkcs8(&der).map_err(bad)?,
            "EC PRIVATE KEY" => p256::SecretKey::from_sec1_der(&der)
                .map(SigningKey::from)
                .map_err(|_| {
                    bad(
                        "is an EC key, but not on the P-256 curve (ocibuild signs with \
                         ECDSA P-256, as cosign and skopeo verify)"
                            .into(),
                    )
                })?,
            "ENCRYPTED SIGSTORE PRIVATE KEY" | "ENCRYPTED COSIGN PRIVATE KEY" => {
                let Some(pass) = passphrase else {
                    return Err(bad("is a cosign key, encrypted: give its passphrase with \
                         --passphrase-file FILE or in $OCIBUILD_KEY_PASSPHRASE"
                        .into()));
                };
                let plain = Zeroizing::new(decrypt_cosign(&der, pass).map_err(bad)?);
                from_pkcs8(&plain).map_err(bad)?
            }
            "ENCRYPTED PRIVATE KEY" => {
                return Err(bad(
                    "is a passphrase-protected PKCS#8 key, which ocibuild does \
                     not read: write it unencrypted (`openssl pkcs8 -in KEY -out PLAIN.pem`, \
                     kept mode 600) or as a cosign key"
                        .into(),
                ))
            }
            "PUBLIC KEY" => {
                return Err(bad("is a public key; signing needs the private key".into()))
            }
            other => {
                return Err(bad(format!(
                    "holds a `{other}`, not a private key (PKCS#8 `PRIVATE KEY`, SEC1 \
                     `EC PRIVATE KEY` or cosign's `ENCRYPTED SIGSTORE PRIVATE KEY`)"
                )))
            }
        };
        Ok(PrivateKey {
            key,
            readable_by_others: others_can_read(path),
        })
    }

    /// The ASN.1 DER ECDSA signature of `message` (SHA-256, RFC 6979 nonce: deterministic).
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        let sig: Signature = self.key.sign(message);
        sig.to_der().as_bytes().to_vec()
    }

    /// A key from its scalar's bytes, for tests.
    #[cfg(test)]
    pub(crate) fn from_test_bytes(bytes: &[u8]) -> PrivateKey {
        PrivateKey {
            key: SigningKey::from_slice(bytes).unwrap(),
            readable_by_others: None,
        }
    }

    /// The matching public key.
    pub fn public(&self) -> PublicKey {
        PublicKey {
            key: *self.key.verifying_key(),
            name: String::new(),
        }
    }
}

/// A public key to verify with.
#[derive(Clone, Debug)]
pub struct PublicKey {
    key: VerifyingKey,
    /// The file it was read from, as given (empty for a key made here).
    name: String,
}

impl PublicKey {
    /// Reads an SPKI `PUBLIC KEY` PEM file (as `openssl pkey -pubout` and cosign write it).
    pub fn load(path: &Path) -> Result<PublicKey, SignError> {
        let text = read(path)?;
        let bad = |problem: String| SignError::Key {
            path: path.to_path_buf(),
            problem,
        };
        let (label, der) = decode_pem(&text).map_err(bad)?;
        if label != "PUBLIC KEY" {
            return Err(bad(format!(
                "holds a `{label}`, not a `PUBLIC KEY` (SPKI PEM)"
            )));
        }
        let key = VerifyingKey::from_public_key_der(&der).map_err(|_| {
            bad(match spki_algorithm(&der) {
                Some(oid) if oid == EC_PUBLIC_KEY => "is an EC key, but not on the P-256 curve \
                    (ocibuild verifies ECDSA P-256 signatures)"
                    .into(),
                Some(oid) => format!(
                    "is {}, not ECDSA P-256 (the one sigstore signatures use here)",
                    algorithm(oid)
                ),
                None => "is not a valid public key".into(),
            })
        })?;
        Ok(PublicKey {
            key,
            name: path.display().to_string(),
        })
    }

    /// The file it was read from, as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its id: `sha256:` and the hex sha256 of its SPKI DER (what `openssl pkey -pubin
    /// -outform DER | sha256sum` gives), the same whichever file holds it.
    pub fn id(&self) -> String {
        use p256::pkcs8::EncodePublicKey;
        match self.key.to_public_key_der() {
            Ok(der) => crate::digest::Digest::of(der.as_bytes()).to_string(),
            // Encoding a valid P-256 point does not fail; were it to, no id rather than a panic.
            Err(_) => String::new(),
        }
    }

    /// Whether `signature` (ASN.1 DER, or the raw 64-byte r‖s) signs `message`.
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        let sig = Signature::from_der(signature).or_else(|_| Signature::from_slice(signature));
        sig.is_ok_and(|s| self.key.verify(message, &s).is_ok())
    }
}

/// A key file: a regular file (a FIFO would block, a device never end) of at most
/// [`crate::bounded::MAX_SECRET_FILE`] bytes.
fn read(path: &Path) -> Result<String, SignError> {
    Ok(crate::bounded::read_regular_text(
        path,
        crate::bounded::MAX_SECRET_FILE,
    )?)
}

/// The first PEM block of `text` (its label and DER), past an `EC PARAMETERS` block such as
/// `openssl ecparam -genkey` writes before the key.
fn decode_pem(text: &str) -> Result<(String, Vec<u8>), String> {
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let block = &rest[start..];
        if block.starts_with("-----BEGIN EC PARAMETERS-----") {
            rest = &block["-----BEGIN ".len()..];
            continue;
        }
        // Up to the end of the block's END line.
        let end = block
            .find("-----END ")
            .map(|i| block[i..].find('\n').map_or(block.len(), |j| i + j))
            .unwrap_or(block.len());
        let (label, der) = p256::pkcs8::der::pem::decode_vec(block[..end].trim().as_bytes())
            .map_err(|e| format!("is not a PEM file ({e})"))?;
        return Ok((label.to_string(), der));
    }
    Err("is not a PEM file (no -----BEGIN line)".into())
}

/// The file's mode when group or others may read it.
fn others_can_read(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs_err::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o044 != 0).then_some(mode)
}

fn from_pkcs8(der: &[u8]) -> Result<SigningKey, String> {
    SigningKey::from_pkcs8_der(der).map_err(|_| {
        match p256::pkcs8::PrivateKeyInfo::try_from(der).map(|i| i.algorithm.oid) {
            Ok(oid) if oid == EC_PUBLIC_KEY => "is an EC key, but not on the P-256 curve \
                (ocibuild signs with ECDSA P-256, as cosign and skopeo verify)"
                .to_string(),
            Ok(oid) => format!(
                "is {}, not ECDSA P-256 (`openssl genpkey -algorithm EC -pkeyopt \
                 ec_paramgen_curve:P-256` makes one)",
                algorithm(oid)
            ),
            Err(_) => "is not a valid PKCS#8 private key".to_string(),
        }
    })
}

fn spki_algorithm(der: &[u8]) -> Option<ObjectIdentifier> {
    p256::pkcs8::spki::SubjectPublicKeyInfoRef::try_from(der)
        .ok()
        .map(|s| s.algorithm.oid)
}

/// go-securesystemslib's `encrypted` envelope, as cosign writes it.
#[derive(Deserialize)]
struct Encrypted {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(Deserialize)]
struct Kdf {
    name: String,
    params: KdfParams,
    salt: String,
}

#[derive(Deserialize)]
#[allow(non_snake_case)] // the format's own names
struct KdfParams {
    N: u64,
    r: u32,
    p: u32,
}

#[derive(Deserialize)]
struct Cipher {
    name: String,
    nonce: String,
}

/// The PKCS#8 DER inside a cosign key.
fn decrypt_cosign(json: &[u8], passphrase: &[u8]) -> Result<Vec<u8>, String> {
    use crypto_secretbox::aead::{Aead, KeyInit};
    let e: Encrypted =
        serde_json::from_slice(json).map_err(|e| format!("is not a cosign encrypted key ({e})"))?;
    if e.kdf.name != "scrypt" || e.cipher.name != "nacl/secretbox" {
        return Err(format!(
            "is encrypted with {} + {}; cosign keys use scrypt + nacl/secretbox",
            e.kdf.name, e.cipher.name
        ));
    }
    let b64 = |s: &str, what: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(|_| format!("has a {what} that is not base64"))
    };
    let salt = b64(&e.kdf.salt, "salt")?;
    let nonce = b64(&e.cipher.nonce, "nonce")?;
    let sealed = b64(&e.ciphertext, "ciphertext")?;
    let p = &e.kdf.params;
    // scrypt takes 128·r·N bytes: a key file that asks for more than 1 GiB is not cosign's
    // (which uses N = 65536, r = 8: 64 MiB).
    let memory = 128u64.saturating_mul(u64::from(p.r)).saturating_mul(p.N);
    if !p.N.is_power_of_two() || p.N < 2 || p.r == 0 || p.p == 0 || p.p > 16 || memory > 1 << 30 {
        return Err(format!(
            "has scrypt parameters out of range (N={}, r={}, p={})",
            p.N, p.r, p.p
        ));
    }
    let params = scrypt::Params::new(p.N.trailing_zeros() as u8, p.r, p.p, 32)
        .map_err(|e| format!("has bad scrypt parameters ({e})"))?;
    let mut key = Zeroizing::new([0u8; 32]);
    scrypt::scrypt(passphrase, &salt, &params, key.as_mut())
        .map_err(|e| format!("cannot derive its key ({e})"))?;
    if nonce.len() != 24 {
        return Err("has a nonce that is not 24 bytes".into());
    }
    let cipher = crypto_secretbox::XSalsa20Poly1305::new((&*key).into());
    cipher
        .decrypt(
            crypto_secretbox::Nonce::from_slice(&nonce),
            sealed.as_slice(),
        )
        .map_err(|_| "does not open with this passphrase".to_string())
}

/// Where a cosign key's passphrase comes from: a file (its first line) or an environment
/// variable; nothing when neither is given.
pub fn passphrase(file: Option<&Path>, env_var: &str) -> Result<Option<Vec<u8>>, SignError> {
    if let Some(f) = file {
        let text = Zeroizing::new(crate::bounded::read_regular(
            f,
            crate::bounded::MAX_SECRET_FILE,
        )?);
        let line = text.split(|&b| b == b'\n').next().unwrap_or_default();
        return Ok(Some(line.strip_suffix(b"\r").unwrap_or(line).to_vec()));
    }
    Ok(std::env::var_os(env_var).map(|v| {
        use std::os::unix::ffi::OsStrExt;
        v.as_bytes().to_vec()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithms_are_named() {
        let name = |s: &str| algorithm(ObjectIdentifier::new_unwrap(s));
        assert_eq!(name("1.3.101.112"), "an Ed25519 key (1.3.101.112)");
        assert_eq!(
            name("1.2.840.113549.1.1.1"),
            "an RSA key (1.2.840.113549.1.1.1)"
        );
        assert_eq!(name("1.2.840.10040.4.1"), "a DSA key (1.2.840.10040.4.1)");
        assert_eq!(name("1.2.3.4"), "a key of algorithm 1.2.3.4");
    }

    #[test]
    fn signatures_are_deterministic_and_verify() {
        let key = PrivateKey {
            key: SigningKey::from_slice(&[7u8; 32]).unwrap(),
            readable_by_others: None,
        };
        let a = key.sign(b"payload");
        assert_eq!(a, key.sign(b"payload"));
        let public = key.public();
        assert!(public.verifies(b"payload", &a));
        assert!(!public.verifies(b"payloae", &a));
        let mut bad = a.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(!public.verifies(b"payload", &bad));
    }
}
