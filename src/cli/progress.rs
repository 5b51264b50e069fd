//! Progress display: indicatif bars on a terminal, nothing otherwise.

use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};

use crate::progress::Reporter;

pub struct Bars {
    enabled: bool,
    bar: Mutex<Option<ProgressBar>>,
}

impl Bars {
    /// Bars only when stderr is a terminal and not `--quiet`.
    pub fn new(quiet: bool) -> Self {
        Bars {
            enabled: !quiet && std::io::stderr().is_terminal(),
            bar: Mutex::new(None),
        }
    }
}

impl Reporter for Bars {
    fn layer_started(&self, name: &str, total_bytes: u64) {
        if !self.enabled {
            return;
        }
        let bar = ProgressBar::new(total_bytes);
        let style = ProgressStyle::with_template(
            "{prefix:>12} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(name.to_string());
        if let Ok(mut slot) = self.bar.lock() {
            *slot = Some(bar);
        }
    }

    fn layer_progress(&self, bytes: u64) {
        if let Ok(slot) = self.bar.lock() {
            if let Some(bar) = slot.as_ref() {
                bar.inc(bytes);
            }
        }
    }

    fn layer_finished(&self, _name: &str, _cached: bool) {
        if let Ok(mut slot) = self.bar.lock() {
            if let Some(bar) = slot.take() {
                bar.finish_and_clear();
            }
        }
    }
}
