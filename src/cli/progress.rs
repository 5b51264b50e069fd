//! Progress display: indicatif bars on a terminal, nothing otherwise. Several layers build at
//! once (the wheel layers side by side) and several files download at once, so each has its
//! own bar, by name. A finished layer leaves one line (built or cached, and how long); with
//! `-v` every step's decision is printed too, terminal or not; `-q` prints none of it.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{HumanBytes, MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::digest::Digest;
use crate::progress::Reporter;

/// Downloads smaller than this get no bar of their own (a few hundred small .debs would only
/// flicker); their bytes still count in the layer they go into.
const FILE_BAR_MIN: u64 = 1 << 20;

/// The width of a bar's label: a longer one is cut in the middle ([`cut_label`]).
const LABEL_WIDTH: usize = 24;

pub(super) struct Bars {
    enabled: bool,
    quiet: bool,
    verbose: bool,
    multi: MultiProgress,
    bars: Mutex<HashMap<String, (ProgressBar, Instant)>>,
    /// With `verbose`: each transfer's start and bytes so far, bar or no bar (a pipe).
    transfers: Mutex<HashMap<String, (Instant, u64)>>,
}

impl Bars {
    /// Bars only when stderr is a terminal and not `quiet`; decisions only with `verbose`
    /// (on stderr, so `--json` can have them too).
    pub(super) fn new(quiet: bool, verbose: bool) -> Self {
        let enabled = !quiet && std::io::stderr().is_terminal();
        let target = if enabled {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Bars {
            enabled,
            quiet,
            verbose,
            multi: MultiProgress::with_draw_target(target),
            bars: Mutex::new(HashMap::new()),
            transfers: Mutex::new(HashMap::new()),
        }
    }

    /// A line above the bars (or on stderr when there are none).
    fn line(&self, msg: &str) {
        if self.enabled {
            let _ = self.multi.println(msg);
        } else {
            eprintln!("{msg}");
        }
    }

    /// Starts bar `key` (replacing one of that key): with a byte total, or a spinner.
    fn start(&self, key: String, label: &str, total: Option<u64>) {
        if !self.enabled {
            return;
        }
        let (bar, template) = match total {
            Some(t) if t > 0 => (
                ProgressBar::new(t),
                "{prefix:>24} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}",
            ),
            Some(_) => (ProgressBar::new_spinner(), "{spinner} {prefix} {elapsed}"),
            None => (
                ProgressBar::new_spinner(),
                "{prefix:>24} {spinner} {bytes} {bytes_per_sec}",
            ),
        };
        let bar = self.multi.add(bar);
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        // A bar's label is in a column; a task's spinner line has room for all of it.
        bar.set_prefix(match total {
            Some(0) => label.to_string(),
            _ => cut_label(label, LABEL_WIDTH),
        });
        // Drawn at once: a step shorter than a tick is still seen.
        bar.tick();
        bar.enable_steady_tick(Duration::from_millis(120));
        if let Ok(mut bars) = self.bars.lock() {
            if let Some((old, _)) = bars.insert(key, (bar, Instant::now())) {
                old.finish_and_clear();
                self.multi.remove(&old);
            }
        }
    }

    fn advance(&self, key: &str, bytes: u64) {
        if let Ok(bars) = self.bars.lock() {
            if let Some((bar, _)) = bars.get(key) {
                bar.inc(bytes);
            }
        }
    }

    /// Ends bar `key`; returns how long it ran.
    fn end(&self, key: &str) -> Option<Duration> {
        let (bar, started) = self.bars.lock().ok()?.remove(key)?;
        bar.finish_and_clear();
        self.multi.remove(&bar);
        Some(started.elapsed())
    }

    /// A transfer (re)starts: its bar, and with `-v` its count.
    fn transfer_started(&self, key: String, label: &str, size: Option<u64>, bar: bool) {
        if self.verbose {
            if let Ok(mut t) = self.transfers.lock() {
                t.insert(key.clone(), (Instant::now(), 0));
            }
        }
        if bar {
            self.start(key, label, size);
        }
    }

    fn transfer_progress(&self, key: &str, bytes: u64) {
        if self.verbose {
            if let Ok(mut t) = self.transfers.lock() {
                if let Some((_, n)) = t.get_mut(key) {
                    *n += bytes;
                }
            }
        }
        self.advance(key, bytes);
    }

    /// A transfer is done: its bar ends; `-v` says what it moved, and how fast.
    fn transfer_finished(&self, what: &str, key: &str) {
        self.end(key);
        let done = self.transfers.lock().ok().and_then(|mut t| t.remove(key));
        if let Some((started, n)) = done {
            self.detail(&format!(
                "{what}: {} in {:.1} s",
                HumanBytes(n),
                started.elapsed().as_secs_f64()
            ));
        }
    }
}

impl Reporter for Bars {
    fn layer_started(&self, name: &str, total_bytes: u64) {
        self.start(format!("layer {name}"), name, Some(total_bytes));
    }

    fn layer_progress(&self, name: &str, bytes: u64) {
        self.advance(&format!("layer {name}"), bytes);
    }

    /// A built layer leaves `built NAME in T`, a cache hit `cached NAME`, on a terminal.
    fn layer_finished(&self, name: &str, cached: bool) {
        let elapsed = self.end(&format!("layer {name}"));
        if !self.enabled {
            return;
        }
        match (cached, elapsed) {
            (true, _) | (false, None) => self.line(&format!("{:>12} {name}", "cached")),
            (false, Some(t)) => self.line(&format!(
                "{:>12} {name} in {:.1} s",
                "built",
                t.as_secs_f64()
            )),
        }
    }

    /// A note from the library (a pinned base, a resolved `[apt]`): one line on stderr unless
    /// `--quiet`, above the bars when there are some.
    fn message(&self, msg: &str) {
        if !self.quiet {
            self.line(msg);
        }
    }

    fn blob_started(&self, digest: &Digest, size: Option<u64>) {
        // One bar per blob, by its digest's first hex digits; restarted from zero when a
        // transfer starts over.
        self.transfer_started(format!("blob {digest}"), &blob_name(digest), size, true);
    }

    fn blob_progress(&self, digest: &Digest, bytes: u64) {
        self.transfer_progress(&format!("blob {digest}"), bytes);
    }

    fn blob_finished(&self, digest: &Digest) {
        self.transfer_finished(&blob_name(digest), &format!("blob {digest}"));
    }

    fn retrying(&self, what: &str, attempt: u32, delay: Duration, reason: &str) {
        self.message(&format!(
            "{what}: {reason}; retrying in {:.1} s (attempt {attempt})",
            delay.as_secs_f64()
        ));
    }

    /// `url` is the download's key; its bar shows the file name.
    fn file_started(&self, url: &str, size: Option<u64>) {
        let bar = size.is_none_or(|s| s >= FILE_BAR_MIN);
        self.transfer_started(format!("file {url}"), &file_label(url), size, bar);
    }

    fn file_progress(&self, url: &str, bytes: u64) {
        self.transfer_progress(&format!("file {url}"), bytes);
    }

    fn file_finished(&self, url: &str) {
        self.transfer_finished(&format!("downloaded {url}"), &format!("file {url}"));
    }

    fn task_started(&self, what: &str) {
        self.transfer_started(format!("task {what}"), what, Some(0), true);
    }

    fn task_finished(&self, what: &str) {
        self.end(&format!("task {what}"));
        let done = self
            .transfers
            .lock()
            .ok()
            .and_then(|mut t| t.remove(&format!("task {what}")));
        if let Some((started, _)) = done {
            self.detail(&format!("{what}: {:.1} s", started.elapsed().as_secs_f64()));
        }
    }

    fn detail(&self, msg: &str) {
        if self.verbose {
            self.line(msg);
        }
    }
}

/// `label` in at most `width` characters: a longer one keeps its start (a package's or wheel's
/// name) and its end (version, architecture, extension), cut in the middle with `…`.
/// (indicatif's own truncation keeps only the end, which drops the package name.)
fn cut_label(label: &str, width: usize) -> String {
    let chars: Vec<char> = label.chars().collect();
    if chars.len() <= width || width < 5 {
        return label.to_string();
    }
    // A little more of the start than of the end: the name is what a person looks for.
    let tail = (width - 1) / 2 - 1;
    let head = width - 1 - tail;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

/// A download's bar label: its URL's last path segment (the file's name), percent-decoded.
fn file_label(url: &str) -> String {
    let last = url.trim_end_matches('/').rsplit('/').next().unwrap_or(url);
    percent_encoding::percent_decode_str(last)
        .decode_utf8_lossy()
        .into_owned()
}

/// The bar name of a blob: `sha256:` and its first 12 hex digits.
fn blob_name(digest: &Digest) -> String {
    format!("sha256:{}", &digest.hex()[..12])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_keep_the_file_name() {
        let url = "http://deb.debian.org/debian/pool/main/p/python3.13/libpython3.13-stdlib_3.13.5-2_amd64.deb";
        let label = cut_label(&file_label(url), LABEL_WIDTH);
        assert_eq!(label, "libpython3.13…_amd64.deb");
        assert_eq!(label.chars().count(), LABEL_WIDTH);
        let wheel = "https://files.example/packages/ab/cd/numpy-2.3.1-cp313-cp313-manylinux_2_28_x86_64.whl";
        assert_eq!(
            cut_label(&file_label(wheel), LABEL_WIDTH),
            "numpy-2.3.1-c…x86_64.whl"
        );
        // Short labels and multibyte names are left whole or cut on characters.
        assert_eq!(cut_label("app", LABEL_WIDTH), "app");
        assert_eq!(cut_label(&"é".repeat(30), 10).chars().count(), 10);
        assert_eq!(file_label("https://h/p/caf%C3%A9.deb"), "café.deb");
    }
}
