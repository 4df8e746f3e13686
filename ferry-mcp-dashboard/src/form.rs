//! The fields of a query string or of a form's body (`application/x-www-form-urlencoded`).
//!
//! Why its own module: every action reads its arguments from here, and a plain form is the
//! page's only way to change anything, so this one small decoder is all the parsing the page
//! needs; a bad escape decodes to U+FFFD rather than failing the request.

/// The decoded name-value pairs of a urlencoded text, in their order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields(Vec<(String, String)>);

impl Fields {
    pub fn parse(text: &str) -> Self {
        Self(
            text.split('&')
                .filter(|pair| !pair.is_empty())
                .map(|pair| {
                    let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                    (decode(name), decode(value))
                })
                .collect(),
        )
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.as_str())
    }

    /// The first value of `name`, trimmed, or `None` when it is missing or blank.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.get(name)
            .map(str::trim)
            .filter(|value| !value.is_empty())
    }

    /// Whether a checkbox `name` was ticked.
    pub fn checked(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

/// `+` is a space, `%XX` a byte; the bytes are read as UTF-8 (bad sequences become U+FFFD).
pub fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'+' => out.push(b' '),
            b'%' => {
                let digit = |at: usize| bytes.get(at).copied().and_then(hex);
                match (digit(at + 1), digit(at + 2)) {
                    (Some(high), Some(low)) => {
                        out.push(high << 4 | low);
                        at += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        at += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `text` escaped for a query string.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

const fn hex(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_decode_plus_percent_and_bad_escapes() {
        let fields = Fields::parse("a=x+y%21&b=%E2%9C%93&c=%zz&d=%4&e");
        assert_eq!(fields.get("a"), Some("x y!"));
        assert_eq!(fields.get("b"), Some("✓"));
        assert_eq!(fields.get("c"), Some("%zz"));
        assert_eq!(fields.get("d"), Some("%4"));
        assert_eq!(fields.get("e"), Some(""));
        assert_eq!(decode(&encode("a b/ü")), "a b/ü");
    }
}
