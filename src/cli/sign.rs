//! `ocibuild sign REF --key FILE`, `ocibuild verify-signature REF --key PUB`, and the key
//! options `build --sign-key` shares.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::Cli;
use crate::sign::{self, PrivateKey, PublicKey};

/// The environment variable a cosign key's passphrase may come from.
pub(super) const PASSPHRASE_ENV: &str = "OCIBUILD_KEY_PASSPHRASE";

/// How a private key's passphrase is given (cosign keys only).
#[derive(Args, Debug, Clone, Default)]
pub(super) struct PassphraseArgs {
    /// A cosign key's passphrase file (else $OCIBUILD_KEY_PASSPHRASE).
    #[arg(long, value_name = "FILE")]
    pub passphrase_file: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub(super) struct SignArgs {
    /// The image: `[docker://]registry/repository[:tag|@sha256:…]`.
    pub reference: String,
    /// The private key: PKCS#8 or SEC1 PEM (as openssl writes it), or a cosign key.
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    #[command(flatten)]
    pub passphrase: PassphraseArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub(super) struct VerifySignatureArgs {
    /// The image: `[docker://]registry/repository[:tag|@sha256:…]`.
    pub reference: String,
    /// A public key (SPKI `PUBLIC KEY` PEM, as `openssl pkey -pubout` or cosign writes it);
    /// repeat for several signers (a release key and an auditor's): each signature and
    /// attestation must verify with one of them.
    #[arg(long, value_name = "FILE", required = true)]
    pub key: Vec<PathBuf>,
    /// The repository the signature must name, when it is not the one verified (a mirror's
    /// images are signed as `registry/repository` they were first pushed to).
    #[arg(long, value_name = "REGISTRY/REPO")]
    pub signed_identity: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Loads a private key, warning (on stderr) when its file is readable by others.
pub(super) fn load_key(
    cli: &Cli,
    path: &Path,
    pass: &PassphraseArgs,
) -> anyhow::Result<PrivateKey> {
    let phrase = sign::key::passphrase(pass.passphrase_file.as_deref(), PASSPHRASE_ENV)?;
    let key = PrivateKey::load(path, phrase.as_deref())?;
    if let (Some(mode), false) = (key.readable_by_others, cli.quiet) {
        eprintln!(
            "warning: key file {} is readable by others (mode {mode:03o}): `chmod 600` it",
            path.display()
        );
    }
    Ok(key)
}

/// Signs `digest` in `target`'s repository, as `target` names it (its tag kept, a digest
/// left out: the identity is the name the image is pulled by).
pub(super) fn sign_pushed(
    cli: &Cli,
    client: &crate::registry::Client,
    target: &crate::registry::Reference,
    digest: &crate::digest::Digest,
    key: &PrivateKey,
) -> anyhow::Result<sign::SignReport> {
    let identity = sign::identity_of(target);
    Ok(sign::sign_image(
        client,
        &cli.store()?,
        target,
        digest,
        &identity,
        key,
    )?)
}

/// The line a signature gets (unless `-q`).
pub(super) fn print_signed(cli: &Cli, report: &sign::SignReport) {
    if !cli.quiet {
        print_signed_line(report);
    }
}

/// `signed IMAGE as IDENTITY (TAG[, already there])`.
pub(super) fn print_signed_line(report: &sign::SignReport) {
    println!(
        "signed {} as {} ({}{})",
        report.image,
        report.identity,
        report.signature_tag,
        if report.added { "" } else { ", already there" }
    );
}

pub(super) fn run_sign(cli: &Cli, args: &SignArgs) -> anyhow::Result<ExitCode> {
    let key = load_key(cli, &args.key, &args.passphrase)?;
    let target = crate::imageref::ImageRef::parse_registry(&args.reference)?;
    let client = super::push::client(cli)?;
    let fetched = client.get_manifest(&target)?;
    // An image index: the index and each platform's manifest (as `cosign sign --recursive`),
    // so that a pull by a platform's digest verifies too.
    let mut digests = vec![fetched.digest];
    if fetched.media_type == crate::image::MEDIA_TYPE_INDEX
        || fetched.media_type == crate::image::DOCKER_LIST
    {
        let index: crate::image::Index = serde_json::from_slice(&fetched.bytes)
            .map_err(|e| anyhow::anyhow!("{target}: not a valid image index: {e}"))?;
        digests.extend(
            index
                .manifests
                .iter()
                .filter(|m| {
                    m.artifact_type.is_none()
                        && !m
                            .platform
                            .as_ref()
                            .is_some_and(ocibuild_apt::image::Platform::is_unknown)
                })
                .map(|m| m.digest),
        );
    }
    let mut reports = Vec::new();
    for d in &digests {
        let report = sign_pushed(cli, &client, &target, d, &key)?;
        if !args.json {
            print_signed(cli, &report);
        }
        reports.push(report);
    }
    if args.json {
        // One image: its report, as before; an index: the index's first, then each manifest's.
        let doc = match reports.as_slice() {
            [one] => serde_json::to_value(one)?,
            all => serde_json::to_value(all)?,
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn run_verify(cli: &Cli, args: &VerifySignatureArgs) -> anyhow::Result<ExitCode> {
    let keys = args
        .key
        .iter()
        .map(|k| PublicKey::load(k))
        .collect::<Result<Vec<_>, _>>()?;
    let reference = crate::imageref::ImageRef::parse_registry(&args.reference)?;
    let client = super::push::client(cli)?;
    let report = sign::verify_image(
        &client,
        &cli.store()?,
        &reference,
        &keys,
        args.signed_identity.as_deref(),
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_grid(&report);
        println!(
            "{}: {}",
            report.image,
            if report.ok() {
                "signature verified"
            } else {
                "NOT verified"
            }
        );
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// A key as the grid names it: its file's name and the start of its id.
fn key_cell(f: &sign::Finding) -> String {
    let Some(file) = &f.key else {
        return "-".into();
    };
    let name = Path::new(file)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.clone());
    match f
        .key_id
        .as_deref()
        .and_then(|id| id.strip_prefix("sha256:"))
    {
        Some(hex) => format!("{name} ({})", &hex[..hex.len().min(12)]),
        None => name,
    }
}

/// `verify-signature`'s grid: one row per item (signature, SPDX SBOM, CycloneDX SBOM, SLSA
/// provenance, SLSA verification summary, anything else attached) and platform, with its
/// result and the key that verified it, in aligned columns (the detail last).
fn print_grid(report: &sign::VerifyReport) {
    let header = ["ITEM", "PLATFORM", "RESULT", "KEY", "DETAIL"].map(String::from);
    let rows: Vec<[String; 5]> = std::iter::once(header)
        .chain(report.findings.iter().map(|f| {
            [
                f.item.clone(),
                f.platform.clone().unwrap_or_else(|| "-".into()),
                f.status.word().to_string(),
                key_cell(f),
                f.detail.clone(),
            ]
        }))
        .collect();
    let mut widths = [0usize; 4];
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for r in &rows {
        let mut line = String::new();
        for (w, cell) in widths.iter().zip(r) {
            line.push_str(&format!("{cell:<w$}  "));
        }
        line.push_str(&r[4]);
        println!("{line}");
    }
}
