//! Progress display: indicatif bars on a terminal, nothing otherwise. Several layers build at
//! once (the wheel layers side by side), so each has its own bar, by name.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::progress::Reporter;

pub struct Bars {
    enabled: bool,
    quiet: bool,
    multi: MultiProgress,
    bars: Mutex<HashMap<String, ProgressBar>>,
}

impl Bars {
    /// Bars only when stderr is a terminal and not `--quiet`.
    pub fn new(quiet: bool) -> Self {
        let enabled = !quiet && std::io::stderr().is_terminal();
        let target = if enabled {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Bars {
            enabled,
            quiet,
            multi: MultiProgress::with_draw_target(target),
            bars: Mutex::new(HashMap::new()),
        }
    }
}

impl Reporter for Bars {
    fn layer_started(&self, name: &str, total_bytes: u64) {
        if !self.enabled {
            return;
        }
        let bar = self.multi.add(ProgressBar::new(total_bytes));
        let style = ProgressStyle::with_template(
            "{prefix:>24!} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(name.to_string());
        if let Ok(mut bars) = self.bars.lock() {
            if let Some(old) = bars.insert(name.to_string(), bar) {
                old.finish_and_clear();
            }
        }
    }

    fn layer_progress(&self, name: &str, bytes: u64) {
        if let Ok(bars) = self.bars.lock() {
            if let Some(bar) = bars.get(name) {
                bar.inc(bytes);
            }
        }
    }

    /// A note from the library (a pinned base, a resolved `[apt]`): one line on stderr unless
    /// `--quiet`, above the bars when there are some.
    fn message(&self, msg: &str) {
        if self.quiet {
            return;
        }
        if self.enabled {
            let _ = self.multi.println(msg);
        } else {
            eprintln!("{msg}");
        }
    }

    fn blob_started(&self, digest: &crate::digest::Digest, size: Option<u64>) {
        // One bar per blob, named by its digest's first hex digits; restarted from zero
        // when a download starts over.
        self.layer_finished(&blob_name(digest), false);
        self.layer_started(&blob_name(digest), size.unwrap_or(0));
    }

    fn blob_progress(&self, digest: &crate::digest::Digest, bytes: u64) {
        self.layer_progress(&blob_name(digest), bytes);
    }

    fn blob_finished(&self, digest: &crate::digest::Digest) {
        self.layer_finished(&blob_name(digest), false);
    }

    fn retrying(&self, what: &str, attempt: u32, delay: std::time::Duration, reason: &str) {
        self.message(&format!(
            "{what}: {reason}; retrying in {:.1} s (attempt {attempt})",
            delay.as_secs_f64()
        ));
    }

    fn layer_finished(&self, name: &str, _cached: bool) {
        if let Ok(mut bars) = self.bars.lock() {
            if let Some(bar) = bars.remove(name) {
                bar.finish_and_clear();
                self.multi.remove(&bar);
            }
        }
    }
}

/// The bar name of a blob: `sha256:` and its first 12 hex digits.
fn blob_name(digest: &crate::digest::Digest) -> String {
    format!("sha256:{}", &digest.hex()[..12])
}
