//! The small decoders and checksums that tell a real token from a look-alike.
//!
//! Written out here rather than pulled in as crates: each is a few lines, and the guard needs
//! only the verifying half of each format.

/// The CRC-32 of zlib and PNG (reflected, polynomial 0xEDB88320), as GitHub and npm tokens use.
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut n = 0;
        while n < 256 {
            let mut c = n as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 == 1 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[n] = c;
            n += 1;
        }
        table
    };
    let mut crc = !0u32;
    for &b in bytes {
        crc = TABLE[((crc ^ u32::from(b)) & 0xFF) as usize] ^ (crc >> 8);
    }
    !crc
}

/// Decodes base62 digits (`0-9A-Za-z`) into a number; `None` on another character or overflow.
pub(crate) fn base62_value(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |acc, &d| {
        let v = match d {
            b'0'..=b'9' => d - b'0',
            b'A'..=b'Z' => d - b'A' + 10,
            b'a'..=b'z' => d - b'a' + 36,
            _ => return None,
        };
        acc.checked_mul(62)?.checked_add(u64::from(v))
    })
}

/// The checksum of GitHub's and npm's tokens since 2021: the last six characters are the
/// base62 CRC-32 of the random part between the prefix and them.
pub(crate) fn crc32_base62_tail(random_and_tail: &str) -> bool {
    let bytes = random_and_tail.as_bytes();
    let Some(split) = bytes.len().checked_sub(6) else {
        return false;
    };
    let (random, tail) = bytes.split_at(split);
    base62_value(tail) == Some(u64::from(crc32(random)))
}

/// Decodes unpadded or padded base64 in either alphabet (`+/` or `-_`); `None` if not base64.
pub(crate) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    base64_each(text, |b| {
        out.push(b);
        true
    })
    .then_some(out)
}

/// [`base64_decode`] a byte at a time, without a buffer: whether the text is base64 and
/// `keep` accepted every byte it decodes to (it stops at the first refused).
pub(crate) fn base64_each(text: &str, mut keep: impl FnMut(u8) -> bool) -> bool {
    let text = text.trim_end_matches('=');
    let mut acc = 0u32;
    let mut bits = 0;
    for b in text.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return false,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            if !keep((acc >> bits) as u8) {
                return false;
            }
        }
    }
    // One leftover character carries fewer than eight bits: no encoder writes that.
    bits < 6
}

/// Verifies a bech32 string (BIP 173, as age keys use): the human-readable part, `1`, then
/// data characters whose last six are the checksum. Case-insensitive, like the format.
pub(crate) fn bech32_valid(text: &str) -> bool {
    const CHARSET: &[u8; 32] = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";
    const GENERATOR: [u32; 5] = [
        0x3b6a_57b2,
        0x2650_8e6d,
        0x1ea1_19fa,
        0x3d42_33dd,
        0x2a14_62b3,
    ];
    fn step(chk: u32, value: u8) -> u32 {
        let top = chk >> 25;
        let mut chk = ((chk & 0x01ff_ffff) << 5) ^ u32::from(value);
        for (i, g) in GENERATOR.iter().enumerate() {
            if (top >> i) & 1 == 1 {
                chk ^= g;
            }
        }
        chk
    }
    let Some(split) = text.rfind('1') else {
        return false;
    };
    let (hrp, data) = (&text.as_bytes()[..split], &text.as_bytes()[split + 1..]);
    if hrp.is_empty() || data.len() < 6 {
        return false;
    }
    let mut chk = 1u32;
    for &c in hrp {
        chk = step(chk, c.to_ascii_lowercase() >> 5);
    }
    chk = step(chk, 0);
    for &c in hrp {
        chk = step(chk, c.to_ascii_lowercase() & 31);
    }
    for &c in data {
        let Some(v) = CHARSET.iter().position(|&x| x == c.to_ascii_lowercase()) else {
            return false;
        };
        chk = step(chk, v as u8);
    }
    chk == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_zlib_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn base62_reads_digits_then_upper_then_lower_case() {
        assert_eq!(base62_value(b"0"), Some(0));
        assert_eq!(base62_value(b"A"), Some(10));
        assert_eq!(base62_value(b"z"), Some(61));
        assert_eq!(base62_value(b"10"), Some(62));
        assert_eq!(base62_value(b"1-"), None);
    }

    #[test]
    fn base64_reads_both_alphabets_and_refuses_a_dangling_character() {
        assert_eq!(base64_decode("aGk").as_deref(), Some(&b"hi"[..]));
        assert_eq!(base64_decode("aGk=").as_deref(), Some(&b"hi"[..]));
        assert_eq!(
            base64_decode("-_-_").as_deref(),
            Some(&[0xfb, 0xff, 0xbf][..])
        );
        assert_eq!(
            base64_decode("+/+/").as_deref(),
            Some(&[0xfb, 0xff, 0xbf][..])
        );
        assert_eq!(base64_decode("aGkhx"), None);
        assert_eq!(base64_decode("a b"), None);
    }

    #[test]
    fn bech32_accepts_the_bip173_vectors_and_refuses_a_changed_character() {
        assert!(bech32_valid("A12UEL5L"));
        assert!(bech32_valid(
            "abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw"
        ));
        assert!(!bech32_valid(
            "abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxx"
        ));
        assert!(!bech32_valid("nohrp"));
    }
}
