//! What a git ref in a hand-in or a submission may be: a commit id (7 to 40 hex digits) or a ref
//! name of the shape git itself accepts (`git check-ref-format`), judged from the text alone.
//!
//! Why: a ref is where the reviewer looks for the work; anything else (a sentence, a diff, a
//! path with `..`) is refused with the reason before it is written, so an agent learns at once
//! and a reader never sees work content where a ref belongs.

/// Why `text` is not a git ref, or nothing when it is one.
pub fn judge(text: &str) -> Result<(), &'static str> {
    if (7..=40).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(());
    }
    if text.starts_with('-') {
        return Err("it starts with '-'");
    }
    if text == "@" {
        return Err("it is '@' alone");
    }
    if text.starts_with('/') || text.ends_with('/') {
        return Err("it starts or ends with '/'");
    }
    if text.ends_with('.') {
        return Err("it ends with '.'");
    }
    if text.contains("..") {
        return Err("it holds '..'");
    }
    if text.contains("@{") {
        return Err("it holds '@{'");
    }
    if text.contains("//") {
        return Err("it holds '//'");
    }
    if text
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c))
    {
        return Err("it holds a space, a control character or one of ~ ^ : ? * [ \\");
    }
    if text
        .split('/')
        .any(|part| part.starts_with('.') || part.ends_with(".lock"))
    {
        return Err("a part of it starts with '.' or ends with '.lock'");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::judge;

    #[test]
    fn commit_ids_and_ref_names_of_the_usual_shape_pass() {
        for good in [
            "a1b2c3d",
            "0123456789abcdef0123456789abcdef01234567",
            "main",
            "dev/parser",
            "feature/work-2",
            "v1.2.3",
            "refs/heads/main",
            "abc",
        ] {
            assert_eq!(judge(good), Ok(()), "{good}");
        }
    }

    #[test]
    fn what_git_check_ref_format_refuses_is_refused_with_the_reason() {
        for (bad, why) in [
            ("HEAD~1", "~"),
            ("a..b", ".."),
            ("-rf", "'-'"),
            ("topic/", "'/'"),
            ("/topic", "'/'"),
            ("a//b", "//"),
            ("x.lock", ".lock"),
            ("dev/.hidden", "'.'"),
            ("main.", "'.'"),
            ("a@{1}", "@{"),
            ("@", "'@'"),
            ("what:ever", ":"),
            ("glob*", "*"),
            ("tab\there", "space"),
        ] {
            let reason = judge(bad).expect_err(bad);
            assert!(reason.contains(why), "{bad}: {reason}");
        }
    }
}
