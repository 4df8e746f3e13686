//! Reading newline-delimited input with a size cap.
//!
//! MCP over stdio is one JSON-RPC message per line, but a client (or an attacker) can send a
//! line of any length. `BufRead::read_until` would hold all of it in memory, so this reader
//! stops buffering at the cap, keeps only the prefix, skips the rest up to the newline and
//! reports the line as oversized for the core to answer.

use std::io::{self, BufRead};

/// One input line without its `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A line within the cap, bytes as read (the core judges UTF-8 and a trailing `\r`).
    Complete(Vec<u8>),
    /// A line longer than the cap: only its first `cap` bytes.
    Oversized(Vec<u8>),
}

/// Splits a byte stream into [`Line`]s, holding at most `cap` bytes of any one line.
#[derive(Debug)]
pub struct CappedLines<R> {
    input: R,
    cap: usize,
}

impl<R: BufRead> CappedLines<R> {
    pub fn new(input: R, cap: usize) -> Self {
        Self { input, cap }
    }

    /// The next line, or `None` at end of input. A last line without a newline still counts.
    pub fn next_line(&mut self) -> io::Result<Option<Line>> {
        let mut kept = Vec::new();
        let mut oversized = false;
        let mut read_any = false;
        loop {
            let available = match self.input.fill_buf() {
                Ok(bytes) => bytes,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            };
            if available.is_empty() {
                return Ok(read_any.then(|| finish(kept, oversized)));
            }
            read_any = true;
            let newline = available.iter().position(|&byte| byte == b'\n');
            let content = &available[..newline.unwrap_or(available.len())];
            if !oversized {
                let room = self.cap - kept.len();
                if content.len() > room {
                    kept.extend_from_slice(&content[..room]);
                    oversized = true;
                } else {
                    kept.extend_from_slice(content);
                }
            }
            let used = newline.map_or(available.len(), |at| at + 1);
            self.input.consume(used);
            if newline.is_some() {
                return Ok(Some(finish(kept, oversized)));
            }
        }
    }
}

impl Line {
    /// The bytes held, which is what the line costs in memory.
    pub fn len(&self) -> usize {
        match self {
            Line::Complete(bytes) | Line::Oversized(bytes) => bytes.len(),
        }
    }
}

fn finish(kept: Vec<u8>, oversized: bool) -> Line {
    if oversized {
        Line::Oversized(kept)
    } else {
        Line::Complete(kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads every line of `input` through a buffer of `chunk` bytes, so that lines
    /// straddle buffer boundaries the way they do on a pipe.
    fn lines(input: &[u8], cap: usize, chunk: usize) -> Vec<Line> {
        let reader = io::BufReader::with_capacity(chunk, input);
        let mut lines = CappedLines::new(reader, cap);
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().unwrap() {
            out.push(line);
        }
        out
    }

    fn complete(text: &str) -> Line {
        Line::Complete(text.as_bytes().to_vec())
    }

    #[test]
    fn lines_are_split_at_newlines_without_the_newline() {
        for chunk in [1, 2, 3, 64] {
            assert_eq!(
                lines(b"ab\ncd\r\n\nef\n", 16, chunk),
                [
                    complete("ab"),
                    complete("cd\r"),
                    complete(""),
                    complete("ef")
                ]
            );
        }
    }

    #[test]
    fn a_last_line_without_a_newline_is_still_a_line() {
        assert_eq!(lines(b"ab\ncd", 16, 2), [complete("ab"), complete("cd")]);
    }

    #[test]
    fn empty_input_has_no_lines() {
        assert_eq!(lines(b"", 16, 2), []);
    }

    #[test]
    fn a_line_of_exactly_the_cap_is_complete() {
        assert_eq!(lines(b"abcd\nx\n", 4, 3), [complete("abcd"), complete("x")]);
    }

    #[test]
    fn a_line_over_the_cap_keeps_only_its_prefix_and_the_next_line_is_intact() {
        for chunk in [1, 3, 5, 64] {
            assert_eq!(
                lines(b"abcdefghij\nnext\n", 4, chunk),
                [Line::Oversized(b"abcd".to_vec()), complete("next")]
            );
        }
    }

    #[test]
    fn an_oversized_last_line_without_a_newline_is_reported() {
        assert_eq!(
            lines(b"abcdefghij", 4, 3),
            [Line::Oversized(b"abcd".to_vec())]
        );
    }

    #[test]
    fn invalid_utf8_is_passed_through_as_bytes() {
        assert_eq!(
            lines(b"\xff\xfe\n", 16, 1),
            [Line::Complete(vec![0xff, 0xfe])]
        );
    }
}
