//! Bounded capture of a test's output: the last lines, and a streaming substring matcher that
//! finds the expected text even when it is split across reads.

use std::collections::VecDeque;

/// Lines of output kept for the report.
pub const TAIL_LINES: usize = 20;
/// Longest line kept; the rest of a longer line is dropped and marked with `…`.
pub const MAX_LINE_BYTES: usize = 4096;

/// A streaming substring matcher (Knuth–Morris–Pratt): memory is the needle's length, whatever
/// the output's size, and a match split across any number of chunks is found.
#[derive(Debug, Clone)]
pub struct Matcher {
    needle: Vec<u8>,
    /// `fail[i]`: length of the longest proper prefix of `needle[..=i]` that is also its suffix.
    fail: Vec<usize>,
    state: usize,
    found: bool,
}

impl Matcher {
    pub fn new(needle: &str) -> Self {
        let needle = needle.as_bytes().to_vec();
        let mut fail = vec![0usize; needle.len()];
        let mut k = 0;
        for i in 1..needle.len() {
            while k > 0 && needle[i] != needle[k] {
                k = fail[k - 1];
            }
            if needle[i] == needle[k] {
                k += 1;
            }
            fail[i] = k;
        }
        let found = needle.is_empty();
        Matcher {
            needle,
            fail,
            state: 0,
            found,
        }
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        if self.found {
            return;
        }
        for &b in chunk {
            while self.state > 0 && b != self.needle[self.state] {
                self.state = self.fail[self.state - 1];
            }
            if b == self.needle[self.state] {
                self.state += 1;
            }
            if self.state == self.needle.len() {
                self.found = true;
                return;
            }
        }
    }

    pub fn found(&self) -> bool {
        self.found
    }
}

/// Per-stream state: the line being assembled and the matcher.
#[derive(Debug)]
struct StreamState {
    partial: Vec<u8>,
    truncated: bool,
    matcher: Option<Matcher>,
}

/// Output of a test from one or more streams (stdout = 0, stderr = 1), in arrival order.
/// Memory is bounded by `TAIL_LINES * MAX_LINE_BYTES` plus the needle.
#[derive(Debug)]
pub struct OutputCapture {
    streams: Vec<StreamState>,
    tail: VecDeque<String>,
    max_lines: usize,
    total_bytes: u64,
}

impl OutputCapture {
    /// `streams` separate inputs; each is matched on its own, so the expected text is found
    /// in stdout or in stderr even when chunks of the two interleave.
    pub fn new(streams: usize, expect: Option<&str>, max_lines: usize) -> Self {
        let streams = (0..streams)
            .map(|_| StreamState {
                partial: Vec::new(),
                truncated: false,
                matcher: expect.map(Matcher::new),
            })
            .collect();
        OutputCapture {
            streams,
            tail: VecDeque::new(),
            max_lines,
            total_bytes: 0,
        }
    }

    pub fn feed(&mut self, stream: usize, chunk: &[u8]) {
        self.total_bytes += chunk.len() as u64;
        let Some(st) = self.streams.get_mut(stream) else {
            return;
        };
        if let Some(m) = st.matcher.as_mut() {
            m.feed(chunk);
        }
        let mut rest = chunk;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            Self::append(st, &rest[..pos]);
            let line = Self::take_line(st);
            Self::push_line(&mut self.tail, self.max_lines, line);
            rest = &rest[pos + 1..];
        }
        Self::append(st, rest);
    }

    fn append(st: &mut StreamState, bytes: &[u8]) {
        let room = MAX_LINE_BYTES.saturating_sub(st.partial.len());
        if bytes.len() > room {
            st.truncated = true;
        }
        st.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn take_line(st: &mut StreamState) -> String {
        let mut bytes = std::mem::take(&mut st.partial);
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        let mut line = String::from_utf8_lossy(&bytes).into_owned();
        if std::mem::take(&mut st.truncated) {
            line.push('…');
        }
        line
    }

    fn push_line(tail: &mut VecDeque<String>, max: usize, line: String) {
        if max == 0 {
            return;
        }
        if tail.len() == max {
            tail.pop_front();
        }
        tail.push_back(line);
    }

    /// Whether the expected text was seen (true when none was asked for).
    pub fn matched(&self) -> bool {
        self.streams.iter().all(|s| s.matcher.is_none())
            || self
                .streams
                .iter()
                .any(|s| s.matcher.as_ref().is_some_and(Matcher::found))
    }

    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Flushes unterminated lines and returns the last lines.
    pub fn finish(mut self) -> Vec<String> {
        for i in 0..self.streams.len() {
            let st = &mut self.streams[i];
            if !st.partial.is_empty() || st.truncated {
                let line = Self::take_line(st);
                Self::push_line(&mut self.tail, self.max_lines, line);
            }
        }
        self.tail.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_in_chunks(m: &mut Matcher, data: &[u8], size: usize) {
        for c in data.chunks(size) {
            m.feed(c);
        }
    }

    #[test]
    fn matcher_finds_needle_across_every_chunk_boundary() {
        let hay = b"xxaabaabaaabyy the answer is 42\n";
        for needle in ["aabaaab", "answer is 42", "\n", "x", "yy the"] {
            for size in 1..=hay.len() {
                let mut m = Matcher::new(needle);
                feed_in_chunks(&mut m, hay, size);
                assert!(m.found(), "needle {needle:?} chunk size {size}");
            }
        }
        for needle in ["aabaaaa", "answer is 43", "42\n\n"] {
            for size in 1..=hay.len() {
                let mut m = Matcher::new(needle);
                feed_in_chunks(&mut m, hay, size);
                assert!(!m.found(), "needle {needle:?} chunk size {size}");
            }
        }
        assert!(Matcher::new("").found());
    }

    #[test]
    fn matcher_multibyte_utf8_split() {
        let hay = "température: 21°C".as_bytes();
        for size in 1..hay.len() {
            let mut m = Matcher::new("21°C");
            feed_in_chunks(&mut m, hay, size);
            assert!(m.found());
        }
    }

    #[test]
    fn tail_keeps_last_lines_across_chunks() {
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        for size in [1, 3, 7, 64, 10_000] {
            let mut c = OutputCapture::new(1, Some("line 57\nline 58"), TAIL_LINES);
            for chunk in text.as_bytes().chunks(size) {
                c.feed(0, chunk);
            }
            assert!(c.matched());
            let tail = c.finish();
            assert_eq!(tail.len(), TAIL_LINES);
            assert_eq!(tail[0], "line 80");
            assert_eq!(tail[19], "line 99");
        }
    }

    #[test]
    fn interleaved_streams_match_separately_and_flush_partial_lines() {
        let mut c = OutputCapture::new(2, Some("hello world"), 5);
        c.feed(0, b"hello ");
        c.feed(1, b"warning: x\nerr-partial");
        c.feed(0, b"world");
        assert!(c.matched());
        let tail = c.finish();
        assert_eq!(tail, vec!["warning: x", "hello world", "err-partial"]);

        let c = OutputCapture::new(2, None, 5);
        assert!(c.matched());
        let mut c = OutputCapture::new(2, Some("nope"), 5);
        c.feed(0, b"yes\r\n");
        assert!(!c.matched());
        assert_eq!(c.finish(), vec!["yes"]);
    }

    #[test]
    fn long_lines_are_truncated_not_kept_whole() {
        let mut c = OutputCapture::new(1, Some("needle"), 3);
        let big = vec![b'a'; MAX_LINE_BYTES * 3];
        c.feed(0, &big);
        c.feed(0, b"needle\nshort\n");
        assert!(c.matched());
        assert_eq!(c.total_bytes(), (MAX_LINE_BYTES * 3 + 13) as u64);
        let tail = c.finish();
        assert_eq!(tail.len(), 2);
        assert!(tail[0].ends_with('…'));
        assert_eq!(tail[0].chars().count(), MAX_LINE_BYTES + 1);
        assert_eq!(tail[1], "short");
    }
}
