//! Text for a terminal. Whatever came from the channel (file and folder names in problem lines,
//! a pause reason, a registered path) may hold control characters that clear the screen, move
//! the cursor or print fake lines, so everything `ferry` prints for a human goes through here.
//! JSON output (`--json`) keeps its own escapes: serde_json writes C0 characters as `\u001b`,
//! and [`escape_json`] adds the DEL and C1 characters it leaves raw.
//!
//! Whatever reached the channel may also hold a secret (a client without a guard, the human's
//! own paste): every text is masked by the guard here too (`[redacted: <kind>]`), so no command
//! prints one, in text or in JSON.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every control character escaped: `\n`, `\r` and `\t` as such, the other C0
/// characters and DEL as `\x1b`, C1 characters as `\u{9b}`. Every other character, any
/// Unicode included, is kept as it is.
pub fn escape(text: &str) -> Cow<'_, str> {
    masked(text, |t| escape_where(t, char::is_control))
}

/// `text` masked by the guard, then passed through `then`.
fn masked<'a>(text: &'a str, then: impl Fn(&str) -> Cow<'_, str>) -> Cow<'a, str> {
    let clean = ferry_mcp_core::guard::redact(text);
    match clean.text {
        Cow::Borrowed(raw) => then(raw),
        Cow::Owned(owned) => Cow::Owned(then(&owned).into_owned()),
    }
}

/// [`escape`], keeping `\n`: for a text of several lines whose parts were escaped already, as
/// a last guard before it is printed.
pub fn escape_lines(text: &str) -> Cow<'_, str> {
    masked(text, |t| escape_where(t, |c| c.is_control() && c != '\n'))
}

/// Compact JSON text with DEL and the C1 characters (which serde_json leaves raw) written as
/// `\u009b` escapes: the same JSON value, with no control character left for a terminal.
pub fn escape_json(json: &str) -> Cow<'_, str> {
    if ferry_mcp_core::guard::redact(json).redacted
        && let Ok(mut value) = serde_json::from_str::<serde_json::Value>(json)
    {
        // Masked string by string, so a mark never eats a quote or a comma of the JSON.
        mask_strings(&mut value);
        return Cow::Owned(escape_json(&value.to_string()).into_owned());
    }
    let escaped = |c: char| c.is_control() && !c.is_ascii_whitespace();
    if !json.chars().any(escaped) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if escaped(c) {
            // Outside strings JSON has only ASCII punctuation, so this is inside a string.
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn mask_strings(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) => {
            let clean = ferry_mcp_core::guard::redact(text);
            if clean.redacted {
                *text = clean.text.into_owned();
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(mask_strings),
        serde_json::Value::Object(map) => map.values_mut().for_each(mask_strings),
        _ => {}
    }
}

fn escape_where(text: &str, escaped: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            c if !escaped(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_writes_every_control_character_as_an_escape() {
        assert_eq!(escape("logs/\x1b[2Jevil"), "logs/\\x1b[2Jevil");
        assert_eq!(escape("a\rb\nc\td"), "a\\rb\\nc\\td");
        assert_eq!(escape("\0\x07\x08\x1f\x7f"), "\\x00\\x07\\x08\\x1f\\x7f");
        assert_eq!(escape("\u{80}\u{9b}2J\u{9f}"), "\\u{80}\\u{9b}2J\\u{9f}");
    }

    #[test]
    fn escape_leaves_every_other_character_alone() {
        for kept in [
            "plain",
            "é ü ß",
            "日本語",
            "emoji 😀",
            "\u{a0}\u{2028}",
            "back\\slash",
        ] {
            assert!(matches!(escape(kept), Cow::Borrowed(_)), "{kept:?}");
        }
    }

    #[test]
    fn escape_leaves_no_control_character_in_any_text() {
        // Escaping is the last step of `escape` and `escape_lines`, after the guard's mask: it
        // is held to every character there is. Masking all of them at once (4 MB of text that
        // looks like nothing a person writes) would only time the guard's decoders.
        let every: String = (0..=0x10ffff).filter_map(char::from_u32).collect();
        assert!(
            !escape_where(&every, char::is_control)
                .chars()
                .any(char::is_control)
        );
        assert_eq!(
            escape_where(&every, |c| c.is_control() && c != '\n')
                .chars()
                .filter(|c| c.is_control())
                .collect::<String>(),
            "\n"
        );
        // The public functions, mask included, on every control character around a token.
        let controls: String = (0..=0x10ffff)
            .filter_map(char::from_u32)
            .filter(|c| c.is_control())
            .collect();
        let text = format!("{controls} 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 {controls}");
        assert!(!escape(&text).chars().any(char::is_control));
        assert!(
            !escape(&text).contains("BwthjcS5"),
            "the token was not masked"
        );
        let lines: String = escape_lines(&text)
            .chars()
            .filter(|c| c.is_control())
            .collect();
        assert_eq!(lines, "\n\n");
    }

    #[test]
    fn escape_lines_keeps_newlines_only() {
        assert_eq!(escape_lines("a\nb\rc\x1b"), "a\nb\\rc\\x1b");
    }

    #[test]
    fn escape_json_keeps_the_value_and_leaves_no_control_character() {
        let value = serde_json::json!({ "name": "a\x1b[2J\r\u{7f}\u{9b}b é" });
        let compact = serde_json::to_string(&value).unwrap();
        let escaped = escape_json(&compact);
        assert!(!escaped.chars().any(char::is_control), "{escaped}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&escaped).unwrap(),
            value
        );
        assert!(matches!(escape_json(r#"{"a":"b"}"#), Cow::Borrowed(_)));
    }

    #[test]
    fn a_secret_is_masked_in_text_and_in_json() {
        let token = "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";
        let text = format!("deploy with {token}\nthanks");
        for shown in [escape(&text), escape_lines(&text)] {
            assert!(!shown.contains(&token[4..]), "{shown}");
            assert!(shown.contains("[redacted: github_token]"), "{shown}");
        }
        let json = serde_json::json!({ "body": text, "n": 1 }).to_string();
        let shown = escape_json(&json);
        assert!(!shown.contains(&token[4..]), "{shown}");
        let value: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(value["n"], 1);
    }

    #[test]
    fn escaping_twice_changes_nothing_more() {
        let once = escape("x\x1b[2J\r\u{9b}y").into_owned();
        assert_eq!(escape(&once), once);
        assert_eq!(escape_lines(&once), once);
    }
}
