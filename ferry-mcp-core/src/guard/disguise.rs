//! The text as it would be read once undisguised.
//!
//! A rule that only sees the bytes as written is beaten by the simplest wrapping: a token in
//! base64, hex or percent-encoding, rot13 or reversed, with zero-width characters between its
//! letters, Cyrillic or fullwidth look-alikes of them, its letters spaced out, or its halves in
//! two quoted strings. So the guard looks at each of these readings too ([`views`]), each built
//! only when the text has what it undoes, so ordinary ASCII prose costs one cheap scan.
//!
//! Every reading keeps, piece by piece, where its text came from, so a secret found in it is
//! masked over the whole of what spelled it ([`View::origin`]).

use std::ops::{Not as _, Range};
use std::sync::LazyLock;

use regex::Regex;
use unicode_normalization::UnicodeNormalization;

use super::checksum;

/// One reading of a text, and where each of its pieces came from in the text as written.
#[derive(Debug)]
pub(super) struct View {
    pub(super) text: String,
    /// `(start in this view, range in the original)`, sorted by start, covering the view.
    pieces: Vec<(usize, Range<usize>)>,
}

impl View {
    fn new() -> Self {
        Self {
            text: String::new(),
            pieces: Vec::new(),
        }
    }

    fn push(&mut self, text: &str, origin: Range<usize>) {
        if text.is_empty() {
            return;
        }
        self.pieces.push((self.text.len(), origin));
        self.text.push_str(text);
    }

    /// The range of the original text that spelled `range` of this view.
    pub(super) fn origin(&self, range: &Range<usize>) -> Range<usize> {
        let first = self
            .pieces
            .partition_point(|(start, _)| *start <= range.start)
            .saturating_sub(1);
        let mut out = self.pieces[first].1.clone();
        for (start, origin) in &self.pieces[first..] {
            if *start >= range.end {
                break;
            }
            out.start = out.start.min(origin.start);
            out.end = out.end.max(origin.end);
        }
        out
    }
}

/// The readings of `text` other than itself: normalised, joined, and its suspicious runs
/// decoded. Empty for plain prose that has nothing to undo.
pub(super) fn views(text: &str) -> Vec<View> {
    let mut out = Vec::new();
    let normal = normalised(text);
    let base = normal.as_ref().map_or(text, |v| v.text.as_str());
    let joined = joined(base);
    let runs_of = joined
        .as_ref()
        .or(normal.as_ref())
        .map_or(text, |v| v.text.as_str());
    let decoded = decoded_runs(runs_of);
    // Each later view was read off the one before it: map its pieces back to the original.
    let back = |view: View, through: &[&View]| -> View {
        let mut mapped = view;
        for under in through.iter().rev() {
            for piece in &mut mapped.pieces {
                piece.1 = under.origin(&piece.1);
            }
        }
        mapped
    };
    let decoded = decoded.map(|d| {
        let through: Vec<&View> = normal.iter().chain(joined.iter()).collect();
        back(d, &through)
    });
    let joined = joined.map(|j| back(j, &normal.iter().collect::<Vec<_>>()));
    out.extend(normal);
    out.extend(joined);
    out.extend(decoded);
    out
}

/// Characters that render as nothing or steer the text's direction: zero-width spaces and
/// joiners, soft hyphens, bidi controls, the BOM, and control characters other than line
/// breaks and tabs.
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}' | '\u{E0000}'..='\u{E007F}')
        || (c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
}

/// [`invisible`] for one ASCII byte: a control character other than a line break or a tab.
fn invisible_ascii(b: u8) -> bool {
    (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t')) || b == 0x7f
}

/// Whether every byte is printable ASCII, a line break or a tab: nothing to normalise. One
/// pass without an early exit, so the compiler reads many bytes at a time (ordinary text
/// has nothing to find, and is read whole either way).
fn plain_ascii(bytes: &[u8]) -> bool {
    bytes.chunks(64).all(|chunk| {
        chunk
            .iter()
            .fold(false, |odd, &b| odd | (b >= 0x80) | invisible_ascii(b))
            .not()
    })
}

/// The Latin letter or digit a Cyrillic, Greek or Armenian look-alike stands for.
fn confusable(c: char) -> Option<char> {
    Some(match c {
        'А' => 'A',
        'В' => 'B',
        'Е' => 'E',
        'К' => 'K',
        'М' => 'M',
        'Н' => 'H',
        'О' => 'O',
        'Р' => 'P',
        'С' => 'C',
        'Т' => 'T',
        'Х' => 'X',
        'У' => 'Y',
        'І' => 'I',
        'Ј' => 'J',
        'Ѕ' => 'S',
        'Ԁ' => 'D',
        'Ԍ' => 'G',
        'Ԛ' => 'Q',
        'Ԝ' => 'W',
        'Ү' => 'Y',
        'Ӏ' => 'I',
        'а' => 'a',
        'в' => 'b',
        'е' => 'e',
        'к' => 'k',
        'м' => 'm',
        'н' => 'h',
        'о' => 'o',
        'р' => 'p',
        'с' => 'c',
        'т' => 't',
        'х' => 'x',
        'у' => 'y',
        'і' => 'i',
        'ј' => 'j',
        'ѕ' => 's',
        'ԁ' => 'd',
        'ԛ' => 'q',
        'ԝ' => 'w',
        'һ' => 'h',
        'ӏ' => 'l',
        'ɡ' => 'g',
        'ү' => 'y',
        'ꓲ' => 'I',
        'Α' => 'A',
        'Β' => 'B',
        'Ε' => 'E',
        'Ζ' => 'Z',
        'Η' => 'H',
        'Ι' => 'I',
        'Κ' => 'K',
        'Μ' => 'M',
        'Ν' => 'N',
        'Ο' => 'O',
        'Ρ' => 'P',
        'Τ' => 'T',
        'Υ' => 'Y',
        'Χ' => 'X',
        'ο' => 'o',
        'ν' => 'v',
        'ι' => 'i',
        'α' => 'a',
        'κ' => 'k',
        'ρ' => 'p',
        'τ' => 't',
        'υ' => 'u',
        'χ' => 'x',
        'օ' => 'o',
        'ս' => 'u',
        'ց' => 'g',
        'ո' => 'n',
        'հ' => 'h',
        'ք' => 'q',
        'Տ' => 'S',
        'Օ' => 'O',
        'ı' => 'i',
        'ȷ' => 'j',
        _ => return None,
    })
}

/// NFKC (fullwidth and styled letters to plain ones), invisible characters dropped and
/// look-alikes mapped to Latin; `None` when that changes nothing.
///
/// Only the words that change are read (each with the word before it, for `KEY=` and
/// `token:` contexts), so a page of Cyrillic or CJK prose is not read twice over.
fn normalised(text: &str) -> Option<View> {
    if plain_ascii(text.as_bytes()) {
        return None;
    }
    let mut view = View::new();
    let mut previous: Option<Range<usize>> = None;
    let mut start = 0;
    for (at, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        if !c.is_whitespace() {
            continue;
        }
        if start < at {
            let word = start..at;
            if let Some(folded) = fold(&text[word.clone()], word.start) {
                if let Some(before) = previous.take() {
                    view.push(&text[before.clone()], before);
                    view.push(" ", word.start..word.start);
                }
                for (piece, origin) in folded {
                    view.push(&piece, origin);
                }
                view.push("\n", word.end..word.end);
            } else {
                previous = Some(word);
            }
        }
        start = at + c.len_utf8();
    }
    (!view.text.is_empty()).then_some(view)
}

/// One word normalised, piece by piece with where each came from; `None` if unchanged.
fn fold(word: &str, offset: usize) -> Option<Vec<(String, Range<usize>)>> {
    if word.is_ascii() && !word.bytes().any(invisible_ascii) {
        return None;
    }
    let mut view = View::new();
    let mut changed = false;
    let mut buf = [0u8; 4];
    for (at, c) in word.char_indices() {
        let at = at + offset;
        let origin = at..at + c.len_utf8();
        if invisible(c) {
            changed = true;
            continue;
        }
        if c.is_ascii() {
            view.push(c.encode_utf8(&mut buf), origin);
            continue;
        }
        if let Some(latin) = confusable(c) {
            changed = true;
            view.push(latin.encode_utf8(&mut buf), origin);
            continue;
        }
        let folded: String = std::iter::once(c)
            .nfkc()
            .map(|f| confusable(f).unwrap_or(f))
            .collect();
        changed |= folded.len() != c.len_utf8() || !folded.starts_with(c);
        view.push(&folded, origin);
    }
    changed.then(|| {
        let ends = view
            .pieces
            .iter()
            .skip(1)
            .map(|(start, _)| *start)
            .chain(std::iter::once(view.text.len()));
        view.pieces
            .iter()
            .zip(ends)
            .map(|((start, origin), end)| (view.text[*start..end].to_owned(), origin.clone()))
            .collect()
    })
}

/// Letters spelled apart: `g h p _ a 1 …` (one character at a time between spaces, dots or
/// dashes) and a token's halves in adjacent quoted strings (`"ghp_ab" + "cd…"`, `'ab' 'cd'`).
static SPACED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[^A-Za-z0-9_+/=-])((?:[A-Za-z0-9_+/=-][ \t]{1,3}){12,}[A-Za-z0-9_+/=-])")
        .expect("compiles")
});

/// A character a spaced-out token is spelled with.
fn spelled(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'/' | b'=' | b'-')
}

/// Whether the text has twelve characters in a row each followed by one to three blanks: a
/// scan that lets prose, where such runs do not occur, skip [`SPACED`].
///
/// Prose without two characters alone between blanks close together ([`lone_pair`]) has
/// none. Otherwise a run can only start at a character right before a blank, so the scan
/// jumps from blank to blank and follows a run only from there.
fn may_be_spaced(bytes: &[u8]) -> bool {
    if !lone_pair(bytes) {
        return false;
    }
    // One spelled character and the one to three blanks after it: where the next one starts.
    let step = |at: usize| -> Option<usize> {
        if !spelled(*bytes.get(at)?) {
            return None;
        }
        let mut j = at + 1;
        while j < bytes.len() && j - at <= 3 && matches!(bytes[j], b' ' | b'\t') {
            j += 1;
        }
        (j > at + 1 && j - at <= 4).then_some(j)
    };
    let mut from = 0;
    while let Some(found) = bytes
        .get(from..)
        .and_then(|rest| memchr::memchr2(b' ', b'\t', rest))
    {
        let blank = from + found;
        from = blank + 1;
        let Some(start) = blank.checked_sub(1) else {
            continue;
        };
        let (mut count, mut at) = (0, start);
        while let Some(next) = step(at) {
            count += 1;
            if count >= 12 {
                return true;
            }
            at = next;
        }
        // The characters up to where the run broke were read: none starts a longer one.
        from = from.max(at + 1);
    }
    false
}

/// Whether a character stands alone between blanks with another alone one to three blanks
/// after it (`a b`, `x   y`): the second and third characters of every spaced-out run do.
///
/// A lookup a byte or less (three bytes at a step where two of them are no blank), and a
/// closer look only between blanks: prose has words, not letters, between its blanks, and
/// most of its bytes are no blank.
fn lone_pair(bytes: &[u8]) -> bool {
    const WIDE: usize = 7;
    let Some(last) = bytes.len().checked_sub(WIDE) else {
        return false;
    };
    let kind = |at: usize| SPACING[usize::from(bytes[at])];
    let mut i = 0;
    while i <= last {
        // The pair at `i` and the one at `i + 2` need a blank at `i + 2`, the one at `i + 1`
        // a blank at `i + 1`: without either, none of the three is there.
        if kind(i + 2) != BLANK {
            i += if kind(i + 1) == BLANK { 1 } else { 3 };
            continue;
        }
        if kind(i) == BLANK
            && kind(i + 1) == SPELLED
            && kind(i + 2) == BLANK
            && ((kind(i + 3) == SPELLED && kind(i + 4) == BLANK)
                || (kind(i + 3) == BLANK
                    && ((kind(i + 4) == SPELLED && kind(i + 5) == BLANK)
                        || (kind(i + 4) == BLANK
                            && kind(i + 5) == SPELLED
                            && kind(i + 6) == BLANK))))
        {
            return true;
        }
        i += 1;
    }
    false
}

/// A blank between spaced-out characters, for [`lone_pair`].
const BLANK: u8 = 1;
/// A character a spaced-out token is spelled with ([`spelled`]).
const SPELLED: u8 = 2;

/// [`BLANK`] or [`SPELLED`] for every byte, looked up.
static SPACING: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        if byte == b' ' || byte == b'\t' {
            table[b] = BLANK;
        } else if byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'+' | b'/' | b'=' | b'-') {
            table[b] = SPELLED;
        }
        b += 1;
    }
    table
};

/// The seams between quoted halves (`"ab" + "cd"`, `'ab''cd'`, `"ab" . "cd"`): each from
/// the closing quote to the opening one, the characters around them a token's.
fn quote_seams(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let quote = |b: u8| matches!(b, b'"' | b'\'' | b'`');
    let word = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-');
    let blanks = |mut at: usize| {
        while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        at
    };
    let mut seams = Vec::new();
    let mut i = 1;
    while i < bytes.len() {
        // Only a quote can close a half: jump to the next one.
        match memchr::memchr3(b'"', b'\'', b'`', &bytes[i..]) {
            Some(found) => i += found,
            None => break,
        }
        if !word(bytes[i - 1]) {
            i += 1;
            continue;
        }
        let mut at = blanks(i + 1);
        if bytes[at..].starts_with(b"||") {
            at = blanks(at + 2);
        } else if matches!(bytes.get(at), Some(b'+' | b'.' | b'&')) {
            at = blanks(at + 1);
        }
        if bytes.get(at).copied().is_some_and(quote) && bytes.get(at + 1).copied().is_some_and(word)
        {
            seams.push(i..at + 1);
            i = at + 2;
        } else {
            i += 1;
        }
    }
    seams
}

fn joined(text: &str) -> Option<View> {
    let spaced: Vec<Range<usize>> = if may_be_spaced(text.as_bytes()) {
        SPACED
            .captures_iter(text)
            .filter_map(|c| c.get(1).map(|m| m.range()))
            .collect()
    } else {
        Vec::new()
    };
    let quoted = quote_seams(text);
    if spaced.is_empty() && quoted.is_empty() {
        return None;
    }
    // Every gap to drop: the blanks inside a spaced run, and each quote seam.
    let mut gaps: Vec<Range<usize>> = quoted;
    for run in spaced {
        let bytes = &text.as_bytes()[run.clone()];
        let mut i = 0;
        while i < bytes.len() {
            if matches!(bytes[i], b' ' | b'\t') {
                let start = i;
                while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
                    i += 1;
                }
                gaps.push(run.start + start..run.start + i);
            } else {
                i += 1;
            }
        }
    }
    gaps.sort_by_key(|g| g.start);
    // Only the lines that hold a gap are read again, each joined.
    let line_of = |at: usize| {
        let start = text[..at].rfind('\n').map_or(0, |n| n + 1);
        let end = text[at..].find('\n').map_or(text.len(), |n| at + n);
        start..end
    };
    let mut view = View::new();
    let mut gaps = gaps.into_iter().peekable();
    while let Some(first) = gaps.next() {
        let line = line_of(first.start);
        let mut at = line.start;
        let mut gap = Some(first);
        while let Some(g) = gap {
            if g.start >= at {
                view.push(&text[at..g.start], at..g.start);
                at = g.end;
            }
            gap = gaps.next_if(|next| next.start < line.end);
        }
        let end = line.end.max(at);
        view.push(&text[at..end], at..end);
        view.push("\n", end..end);
    }
    Some(view)
}

/// A character of a run that may be a secret wrapped: the characters encodings use.
const fn encoded_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'+' | b'/' | b'=' | b'_' | b'%' | b'.' | b'~' | b':' | b'-'
        )
}

/// [`encoded_byte`] for every byte, looked up: the run scan reads every byte of the text.
static ENCODED: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = encoded_byte(b as u8);
        b += 1;
    }
    table
};

fn encoded(b: u8) -> bool {
    ENCODED[usize::from(b)]
}

/// How long a run must be to be read as a secret wrapped.
const LONG_RUN: usize = 20;

/// The runs that may be a secret wrapped: long ([`LONG_RUN`] characters or more), no
/// blanks, of the characters encodings use.
///
/// Ordinary text is mostly short words, so the scan looks at the last byte a run from where
/// it stands would hold, and back from there only as far as the first byte no run holds: a
/// blank twenty bytes on rules out every run that starts before it, at one look.
fn runs(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let bytes = text.as_bytes();
    // Where a run may start: the text's start, or right after a byte no run holds.
    let mut start = 0;
    std::iter::from_fn(move || {
        while let Some(window) = bytes.get(start..start + LONG_RUN) {
            match window.iter().rposition(|&b| !encoded(b)) {
                Some(last) => start += last + 1,
                None => {
                    let from = start + LONG_RUN;
                    let end = bytes[from..]
                        .iter()
                        .position(|&b| !encoded(b))
                        .map_or(bytes.len(), |n| from + n);
                    let run = start..end;
                    start = end;
                    return Some(run);
                }
            }
        }
        None
    })
}

/// Each suspicious run decoded (base64, base64url, hex, percent-encoding), rot13'd and
/// reversed, one reading per line, each mapped to its whole run.
fn decoded_runs(text: &str) -> Option<View> {
    let mut view = View::new();
    for run in runs(text) {
        let word = &text[run.clone()];
        if !suspicious(word) {
            continue;
        }
        let mut add = |reading: &str| {
            view.push(reading, run.clone());
            view.push("\n", run.clone());
        };
        for decoded in decodings(word) {
            add(&decoded);
            // A wrapping inside a wrapping: base64 of hex, hex of base64, …
            for again in decodings(&decoded) {
                add(&again);
            }
        }
        // Only a token's own characters are worth turning: a URL or a path is not a token.
        let bytes = word.as_bytes();
        if !bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
        {
            continue;
        }
        // A prefixed token rot13'd keeps its separator after the prefix; reversed, before it.
        let separator = |b: &u8| matches!(b, b'_' | b'-');
        // An unprefixed one (an AWS key id) has upper case and digits, and is no hex digest.
        let bare = word.len() <= 100
            && bytes.iter().any(u8::is_ascii_uppercase)
            && bytes.iter().any(u8::is_ascii_digit)
            && !bytes.iter().all(u8::is_ascii_hexdigit);
        if bare || bytes.iter().take(13).skip(2).any(separator) {
            add(&rot13(word));
        }
        if bare || bytes.iter().rev().take(13).skip(2).any(separator) {
            add(&word.chars().rev().collect::<String>());
        }
    }
    (!view.text.is_empty()).then_some(view)
}

/// A run with letters and digits or escapes in it: a word of prose or a path is not worth
/// decoding, a token-shaped one is.
fn suspicious(word: &str) -> bool {
    let (mut letters, mut digits, mut upper, mut lower) = (0, 0, false, false);
    for b in word.bytes() {
        letters += usize::from(b.is_ascii_alphabetic());
        digits += usize::from(b.is_ascii_digit());
        upper |= b.is_ascii_uppercase();
        lower |= b.is_ascii_lowercase();
    }
    word.contains('%') || (letters > 0 && (digits > 0 || (upper && lower)))
}

/// The printable texts a run decodes to, in each encoding it is valid in.
fn decodings(word: &str) -> Vec<String> {
    let mut out = Vec::new();
    let printable = |bytes: Vec<u8>| -> Option<String> {
        let text = String::from_utf8(bytes).ok()?;
        let shown = text
            .chars()
            .filter(|c| !c.is_control() || c.is_ascii_whitespace())
            .count();
        (text.chars().count() >= 8 && shown == text.chars().count()).then_some(text)
    };
    // Text decodes to text from its first bytes on: a commit id or a digest (most runs in
    // ordinary talk) is refused on its first eight characters, before anything is decoded
    // whole (and nothing is allocated for that look).
    let trimmed = {
        let bytes = word.as_bytes();
        let edge = |b: &u8| !matches!(b, b'.' | b':' | b'~');
        let start = bytes.iter().position(edge).unwrap_or(bytes.len());
        let end = bytes.iter().rposition(edge).map_or(start, |last| last + 1);
        // Both on ASCII bytes, so on character boundaries.
        &word[start..end]
    };
    if trimmed.len() >= 16
        && trimmed.len().is_multiple_of(2)
        && trimmed.bytes().all(|b| b.is_ascii_hexdigit())
        && printable_start(
            &[0, 2, 4, 6].map(|at| hex_pair(&trimmed.as_bytes()[at..at + 2]).unwrap_or_default()),
        )
        && let Some(text) = hex(trimmed).and_then(printable)
    {
        out.push(text);
    }
    if trimmed.len() >= 16
        && !trimmed
            .bytes()
            .any(|b| matches!(b, b':' | b'.' | b'%' | b'~'))
        // A run decoded once may not be ASCII: its eighth byte may be inside a character.
        && trimmed.get(..8).is_some_and(|first| {
            let (mut start, mut len) = ([0u8; 6], 0);
            checksum::base64_each(first, |b| {
                // Eight characters are six bytes.
                if let Some(slot) = start.get_mut(len) {
                    *slot = b;
                    len += 1;
                }
                true
            }) && printable_start(&start[..len])
        })
        && let Some(text) = checksum::base64_decode(trimmed).and_then(printable)
    {
        out.push(text);
    }
    if word.contains('%')
        && let Some(text) = percent(word).and_then(printable)
    {
        out.push(text);
    }
    out
}

/// Whether `start` can be the start of a text [`decodings`] keeps: valid UTF-8 but perhaps
/// for a character cut at its end, and no control character but a blank.
fn printable_start(start: &[u8]) -> bool {
    let valid = match std::str::from_utf8(start) {
        Ok(text) => text,
        // A character cut at the end is what a start of a text may have.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&start[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return false,
    };
    valid
        .chars()
        .all(|c| !c.is_control() || c.is_ascii_whitespace())
}

fn hex(text: &str) -> Option<Vec<u8>> {
    text.as_bytes().chunks(2).map(hex_pair).collect()
}

/// One byte from two hex digits (`None` for one digit alone or a non-digit).
fn hex_pair(pair: &[u8]) -> Option<u8> {
    let digit = |b: u8| char::from(b).to_digit(16).map(|d| d as u8);
    Some(digit(pair[0])? << 4 | digit(*pair.get(1)?)?)
}

fn percent(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let pair = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(pair, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

fn rot13(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='m' | 'A'..='M' => char::from(c as u8 + 13),
            'n'..='z' | 'N'..='Z' => char::from(c as u8 - 13),
            _ => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ascii_prose_has_no_other_reading() {
        assert!(views("rotate the deploy key on Friday, then tell ops").is_empty());
    }

    #[test]
    fn a_reading_maps_back_to_the_characters_that_spelled_it() {
        let text = "x ｇｈｐ y";
        let view = normalised(text).unwrap();
        assert_eq!(view.text, "x ghp\n");
        let at = view.text.find("ghp").unwrap();
        let origin = view.origin(&(at..at + 3));
        assert_eq!(&text[origin], "ｇｈｐ");
    }

    #[test]
    fn invisible_characters_are_dropped_and_look_alikes_mapped() {
        let view = normalised("g\u{200b}h\u{200d}p_ Аkіа").unwrap();
        assert_eq!(view.text, "ghp_\nAkia\n");
    }

    #[test]
    fn spaced_letters_and_quoted_halves_are_joined() {
        let spaced = joined("key: g h p _ a b c d e f g h i j k l").unwrap();
        assert_eq!(spaced.text, "key: ghp_abcdefghijkl\n");
        let quoted = joined(r#"t = "ghp_abc" + "def""#).unwrap();
        assert_eq!(quoted.text, "t = \"ghp_abcdef\"\n");
    }

    #[test]
    fn spaced_letters_are_told_to_the_last_byte_without_a_panic() {
        let twelve = "a ".repeat(12);
        assert!(may_be_spaced(twelve.as_bytes()));
        // The last character needs its blank too: twelve, then a thirteenth without one.
        assert!(!may_be_spaced(twelve.trim_end().as_bytes()));
        assert!(may_be_spaced(format!("{twelve}a").as_bytes()));
        assert!(may_be_spaced(format!("xy{twelve}").as_bytes()));
        assert!(may_be_spaced("a ".repeat(700).trim_end().as_bytes()));
        for short in [
            "",
            " ",
            "a",
            "a ",
            " a",
            "a b",
            "a b c d e f g h i j k",
            "ab    c d",
        ] {
            assert!(!may_be_spaced(short.as_bytes()), "{short:?}");
        }
        // Four blanks break a run; a word breaks it; a run starts again after either.
        assert!(!may_be_spaced("a b c d e f    g h i j k l m".as_bytes()));
        assert!(!may_be_spaced("a b c d e f gh i j k l m n".as_bytes()));
        assert!(may_be_spaced("a b cd e f g h i j k l m n o p".as_bytes()));
    }

    #[test]
    fn every_spaced_out_run_has_a_lone_pair_and_a_short_text_is_read_without_a_panic() {
        for short in ["", "a", "a b", "a b c", " a b  "] {
            assert!(!lone_pair(short.as_bytes()), "{short:?}");
        }
        assert!(lone_pair(b" a b c "));
        assert!(lone_pair(b"x a   b\t"));
        assert!(!lone_pair(b"x a    b "));
        assert!(!lone_pair(b"fixed by a72b907 in a bit"));
        let mut texts = crate::guard::secrets::tests::corpus();
        texts.extend(
            [
                "g h p _ a b c d e f g h i j k l",
                "k\te\ty  :  a  b  c  d  e  f  g  h  i  j  k  l",
            ]
            .map(String::from),
        );
        let mut spaced = 0;
        for text in &texts {
            if SPACED.is_match(text) {
                spaced += 1;
                assert!(lone_pair(text.as_bytes()), "{text:?}");
            }
        }
        assert!(spaced > 10, "{spaced} spaced-out texts");
    }

    #[test]
    fn long_runs_are_found_as_a_byte_at_a_time_scan_finds_them() {
        fn one_at_a_time(text: &str) -> Vec<Range<usize>> {
            let bytes = text.as_bytes();
            let (mut at, mut out) = (0, Vec::new());
            while at < bytes.len() {
                while at < bytes.len() && !encoded(bytes[at]) {
                    at += 1;
                }
                let start = at;
                while at < bytes.len() && encoded(bytes[at]) {
                    at += 1;
                }
                if at - start >= LONG_RUN {
                    out.push(start..at);
                }
            }
            out
        }
        let twenty = "a".repeat(20);
        let mut texts = crate::guard::secrets::tests::corpus();
        texts.extend([
            twenty.clone(),
            twenty[1..].to_owned(),
            format!(" {twenty}"),
            format!("{twenty} "),
            format!("{twenty} {twenty}"),
            format!("{} b{twenty}", &twenty[1..]),
            format!("é{twenty}é{}é", &twenty[..19]),
        ]);
        for text in &texts {
            assert_eq!(
                runs(text).collect::<Vec<_>>(),
                one_at_a_time(text),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_run_is_decoded_when_its_first_bytes_cut_a_character_and_not_when_they_are_no_text() {
        let hex_of = |text: &str| text.bytes().map(|b| format!("{b:02x}")).collect::<String>();
        // `é` is two bytes: the first four decoded end inside it.
        let cut = "abc\u{e9} is the rest of it";
        assert_eq!(decodings(&hex_of(cut)), [cut]);
        assert!(printable_start(&[b'a', b'b', b'c', 0xc3]));
        assert!(!printable_start(&[0xbd, 0xfc, 0x1f, 0x03]));
        assert!(!printable_start(&[b'a', 0x01]));
        // A commit id decodes to no text in either encoding.
        assert!(decodings("bdfc1f0345973fdc6f8caa093f841aa5c8d235e0").is_empty());
    }

    #[test]
    fn a_decoded_run_with_a_character_across_its_eighth_byte_is_read_again_without_a_panic() {
        // A decoding is decoded again, and it may not be ASCII: `é` holds bytes 7 and 8.
        assert!(decodings("aaaaaaa\u{e9}bbbbbbbbbb").is_empty());
    }

    #[test]
    fn runs_are_decoded_from_each_encoding() {
        assert_eq!(hex("6869").unwrap(), b"hi");
        assert_eq!(percent("a%5Fb").unwrap(), b"a_b");
        assert_eq!(rot13("Hello"), "Uryyb");
        let view = decoded_runs("see Z2hwX2FiY2RlZmdoaWprbG1ub3A= now").unwrap();
        assert!(view.text.contains("ghp_abcdefghijklmnop"), "{}", view.text);
    }
}
