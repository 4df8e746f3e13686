//! Code and diff shapes, for posts and summaries.
//!
//! Judged by structure, never by a word: a diff has its headers and hunks (or, pasted without
//! them, its `+` and `-` lines of code), a code block its fences, source code is consecutive
//! statements that each look like code (a definition, a statement, a brace) whether on
//! several lines or one, a configuration blob parses as JSON or nests YAML keys, and a stack
//! trace has its frames. A line that names code inside prose is a mention, not a paste:
//! "renamed fn foo to bar" passes, and so does a single command or call.

use std::fmt;
use std::sync::LazyLock;

use regex::{Regex, RegexSet};

/// The shapes of work that belongs in the repository, not in a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CodeKind {
    /// A unified diff (`diff --git`, `--- a/` and `+++ b/`, `@@ -1,3 +1,4 @@`).
    Diff,
    /// A fenced code block (```` ``` ```` or `~~~`).
    FencedCode,
    /// Source code in any of the common languages, on several lines or one.
    SourceCode,
    /// A configuration blob: JSON with several values, nested YAML, a TOML section.
    Config,
    /// A stack trace (Python, Java, JavaScript, Rust, Go, .NET frames).
    StackTrace,
}

impl CodeKind {
    /// Every kind.
    pub const ALL: [CodeKind; 5] = [
        Self::Diff,
        Self::FencedCode,
        Self::SourceCode,
        Self::Config,
        Self::StackTrace,
    ];

    /// The stable snake_case name, for reports.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Diff => "diff",
            Self::FencedCode => "fenced_code",
            Self::SourceCode => "source_code",
            Self::Config => "config",
            Self::StackTrace => "stack_trace",
        }
    }

    /// The kind in words with its article, as the refusal says it ("a diff").
    pub const fn described(self) -> &'static str {
        match self {
            Self::Diff => "a diff",
            Self::FencedCode => "a code block",
            Self::SourceCode => "source code",
            Self::Config => "a configuration blob",
            Self::StackTrace => "a stack trace",
        }
    }
}

impl fmt::Display for CodeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a text that is going into a post or a summary looks like, if it looks like work.
pub(super) fn detect(text: &str) -> Option<CodeKind> {
    let (lines, held) = lines(text);
    // Each line is trimmed once, and matched against every line pattern once (if its bytes
    // or its first word say it may match one), for all the shapes below.
    let trimmed: Vec<&str> = lines.iter().map(|l| trim(l)).collect();
    let rules = &*LINE_RULES;
    let judged: Vec<Judged> = trimmed
        .iter()
        .zip(&held)
        .map(|(l, &held)| {
            if l.is_empty() || may_be_code(l, held) {
                judge(rules, l)
            } else {
                Judged {
                    weight: 0,
                    one_line: false,
                }
            }
        })
        .collect();
    if lines.len() > 1 {
        if diff(&lines) || headerless_diff(&lines, &trimmed) {
            return Some(CodeKind::Diff);
        } else if fenced(&lines, &trimmed) {
            return Some(CodeKind::FencedCode);
        } else if stack_trace(&lines, &held) {
            return Some(CodeKind::StackTrace);
        } else if source(&lines, &trimmed, |i| judged[i].weight) {
            return Some(CodeKind::SourceCode);
        }
    }
    if config(text, &lines, &trimmed) {
        Some(CodeKind::Config)
    } else if trimmed
        .iter()
        .zip(&judged)
        .zip(&held)
        .any(|((line, judged), held)| {
            (judged.one_line || held & STATEMENT != 0) && one_line_code(line, judged.one_line)
        })
    {
        Some(CodeKind::SourceCode)
    } else {
        None
    }
}

/// The lines of `text` as [`str::lines`] splits them (at `\n`, a `\r` before it dropped),
/// found a byte at a time, and for each the kinds of byte it holds ([`LINE_BYTE`], and
/// [`FLAG`]): the same pass tells both, and spares each shape a search of its own.
fn lines(text: &str) -> (Vec<&str>, Vec<u8>) {
    let bytes = text.as_bytes();
    let (mut lines, mut held) = (Vec::new(), Vec::new());
    let (mut start, mut seen) = (0, 0);
    let mut push = |line: &'_ str, mut seen: u8| {
        // A `-` in a line with no byte of code yet: is it a flag, after a blank?
        if seen & (DASH | CODE) == DASH
            && line
                .as_bytes()
                .windows(2)
                .any(|pair| pair[1] == b'-' && LINE_BYTE[usize::from(pair[0])] & BLANK != 0)
        {
            seen |= FLAG;
        }
        held.push(seen);
    };
    for (at, &b) in bytes.iter().enumerate() {
        let class = LINE_BYTE[usize::from(b)];
        if class & BREAK != 0 {
            let line = &text[start..at];
            push(line, seen);
            lines.push(line.strip_suffix('\r').unwrap_or(line));
            (start, seen) = (at + 1, 0);
        } else {
            seen |= class;
        }
    }
    if start < text.len() {
        let line = &text[start..];
        push(line, seen);
        lines.push(line);
    }
    (lines, held)
}

/// [`str::trim`], without reading a character when the line opens and ends with a printable
/// ASCII byte (most lines do): no blank the trim takes off starts or ends with one.
fn trim(line: &str) -> &str {
    match line.as_bytes() {
        [first, .., last] if first.is_ascii_graphic() && last.is_ascii_graphic() => line,
        [only] if only.is_ascii_graphic() => line,
        _ => line.trim(),
    }
}

/// One of `( ) [ ] { } ; = # @ $ < > | &`: the bytes of the line patterns that open with no
/// word of [`opens_with_keyword`] (every one of them holds one, or a [`FLAG`]).
const CODE: u8 = 1;
/// `-`.
const DASH: u8 = 2;
/// A byte a blank the patterns' `\s` matches ends in: an ASCII blank or a byte above ASCII.
const BLANK: u8 = 4;
/// `:` or `(`: every stack frame has one.
const PLACE: u8 = 8;
/// `"`.
const QUOTE: u8 = 16;
/// `;`, `{` or `}`: what splits one line into statements.
const STATEMENT: u8 = 32;
/// A `-` after a blank (`ls -la`).
const FLAG: u8 = 64;
/// `\n`.
const BREAK: u8 = 128;

/// The kinds of each byte, for [`lines`].
static LINE_BYTE: [u8; 256] = {
    const fn mark(mut table: [u8; 256], bytes: &[u8], class: u8) -> [u8; 256] {
        let mut i = 0;
        while i < bytes.len() {
            table[bytes[i] as usize] |= class;
            i += 1;
        }
        table
    }
    let mut table = mark([0; 256], b"()[]{};=#@$<>|&", CODE);
    table = mark(table, b"-", DASH);
    table = mark(table, b" \t\n\r\x0b\x0c", BLANK);
    table = mark(table, b":(", PLACE);
    table = mark(table, b"\"", QUOTE);
    table = mark(table, b";{}", STATEMENT);
    table = mark(table, b"\n", BREAK);
    let mut b = 0x80;
    while b < 256 {
        table[b] |= BLANK;
        b += 1;
    }
    table
};

/// Whether a trimmed line may match one of the line patterns: by the bytes it holds
/// ([`lines`] says) or by the word it opens with. Most lines of prose may not, and are not
/// asked.
fn may_be_code(trimmed: &str, held: u8) -> bool {
    held & (CODE | FLAG) != 0 || opens_with_keyword(trimmed.as_bytes())
}

/// A diff pasted without its headers: a block of `+` and `-` lines (and context lines that
/// start with a blank) with both signs, whose changed lines are code, not list items.
/// `trimmed` holds each line trimmed.
fn headerless_diff(lines: &[&str], trimmed: &[&str]) -> bool {
    let rules = &*LINE_RULES;
    let (mut plus, mut minus, mut score, mut heaviest) = (false, false, 0, 0);
    for (line, trimmed) in lines.iter().zip(trimmed) {
        let sign = line.as_bytes().first().copied();
        let changed =
            matches!(sign, Some(b'+' | b'-')) && !line.starts_with("++") && !line.starts_with("--");
        // `- renamed x`, `+ one more test`: a list, not a change.
        let bullet = changed
            && line[1..].starts_with(' ')
            && line[2..].starts_with(|c: char| c.is_ascii_alphabetic());
        if changed && bullet {
            (plus, minus, score, heaviest) = (false, false, 0, 0);
        } else if changed {
            let w = weight(rules, line[1..].trim());
            if w == 0 {
                (plus, minus, score, heaviest) = (false, false, 0, 0);
                continue;
            }
            plus |= sign == Some(b'+');
            minus |= sign == Some(b'-');
            score += w;
            heaviest = heaviest.max(w);
            if plus && minus && score >= 4 && heaviest >= 2 {
                return true;
            }
        } else if !(line.starts_with(' ') || trimmed.is_empty()) {
            (plus, minus, score, heaviest) = (false, false, 0, 0);
        }
    }
    false
}

static FRAME: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new([
        // Java, JavaScript, .NET: `at pkg.Class.method(File.java:42)`, `at fn (file.js:1:2)`
        r"^\s+at\s+\S.*(?:\(.*(?::[0-9]+|Native Method|Unknown Source|native)\)|:[0-9]+(?::[0-9]+)?|:line [0-9]+)\s*$",
        // Python: `  File "x.py", line 3, in f`
        r#"^\s*File "[^"]+", line [0-9]+"#,
        // Rust: `  12: core::panicking::panic` then `at ./src/main.rs:4:5`
        r"^\s*[0-9]+: (?:<|[A-Za-z_][A-Za-z0-9_]*::)\S*",
        r"^\s+at \S+\.rs:[0-9]+:[0-9]+$",
        // Go: `main.main()` then `\t/app/main.go:12 +0x1d`
        r"^\s*\S+\.go:[0-9]+(?: \+0x[0-9a-f]+)?$",
    ])
    .expect("the frame patterns compile")
});

static TRACE_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:Traceback \(most recent call last\):|thread '[^']*' panicked at|goroutine [0-9]+ \[|Exception in thread |stack backtrace:|Unhandled exception\.|panic: |(?:[A-Za-z_][A-Za-z0-9_.$]*)?(?:Exception|Error)(?::|$))")
        .expect("compiles")
});

/// A stack trace: two frames, or a header and a frame.
fn stack_trace(lines: &[&str], held: &[u8]) -> bool {
    // Every frame names a place (`file:line`, `File "…", line`) or a parenthesised method.
    let frames = lines
        .iter()
        .zip(held)
        .filter(|(l, held)| {
            (*held & PLACE != 0 || (*held & QUOTE != 0 && l.contains("File \"")))
                && FRAME.is_match(l)
        })
        .count();
    frames >= 2 || (frames >= 1 && lines.iter().any(|l| TRACE_HEADER.is_match(l.trim_start())))
}

/// Values in a JSON blob, counting each scalar once.
fn leaves(value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::Object(map) => map.values().map(leaves).sum(),
        serde_json::Value::Array(items) => items.iter().map(leaves).sum(),
        _ => 1,
    }
}

static YAML_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<indent>\s*)(?:- )?[A-Za-z_][A-Za-z0-9_.-]*:(?P<value>\s+\S.*)?$")
        .expect("compiles")
});
static TOML_SECTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[\[?[A-Za-z0-9_.-]+\]\]?$").expect("compiles"));
static TOML_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^[A-Za-z_][A-Za-z0-9_.-]*\s*=\s*(?:"|'|[0-9]|true|false|\[|\{)"#)
        .expect("compiles")
});

/// Where the colon is, if the line starts (after blanks and a `- `) with a word of
/// [`YAML_KEY`]'s key characters and a colon: a byte scan that spares prose lines the
/// pattern. On a line the pattern matches, that is the pattern's colon (the key's characters
/// hold none, and the pattern's blanks and `- ` are these).
fn yaml_colon(line: &str) -> Option<usize> {
    let rest = line.trim_start();
    let rest = rest.strip_prefix("- ").unwrap_or(rest);
    let key = rest
        .bytes()
        .take_while(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        .count();
    (key > 0 && rest.as_bytes().get(key) == Some(&b':')).then(|| line.len() - rest.len() + key)
}

/// A configuration blob: JSON (an object or array with three values or more), YAML of five
/// keys with nesting (or four, nested two deep), or a TOML section with two keys.
fn config(text: &str, lines: &[&str], trimmed: &[&str]) -> bool {
    let bytes = text.as_bytes();
    if let (Some(open), Some(close)) = (
        memchr::memchr2(b'{', b'[', bytes),
        memchr::memrchr2(b'}', b']', bytes),
    ) && open < close
        && let Ok(value) = serde_json::from_str::<serde_json::Value>(&text[open..=close])
        && value.is_object() | value.is_array()
        && leaves(&value) >= 3
    {
        return true;
    }
    // A status note is often `Results:` with a few indented `name: word` lines; a config
    // has more keys, or keys nested two deep.
    let (mut run, mut indents, mut parent) = (0, Vec::new(), false);
    for (line, trimmed) in lines.iter().zip(trimmed) {
        // The pattern's groups, read off the line: its `indent` is the blanks it opens with
        // (`\s*` takes them all), and it has no `value` when nothing follows the colon.
        let key = yaml_colon(line).filter(|_| YAML_KEY.is_match(line));
        match key {
            Some(colon) => {
                run += 1;
                let indent = line.len() - line.trim_start().len();
                if indent > 0 && !indents.contains(&indent) {
                    indents.push(indent);
                }
                parent |= colon + 1 == line.len();
                let deep = indents.len() >= 2 && run >= 4;
                let many = !indents.is_empty() && run >= 5;
                if parent && (deep || many) {
                    return true;
                }
            }
            None if trimmed.is_empty() || trimmed.starts_with('#') => {}
            None => (run, indents, parent) = (0, Vec::new(), false),
        }
    }
    trimmed.iter().enumerate().any(|(i, line)| {
        line.starts_with('[')
            && TOML_SECTION.is_match(line)
            && trimmed[i + 1..]
                .iter()
                .take_while(|l| !l.is_empty())
                .filter(|l| TOML_KEY.is_match(l))
                .count()
                >= 2
    })
}

const ONE_LINE: &[&str] = &[
    // Python: a definition or a block with its body on the same line, a comprehension
    r"^(?:async\s+)?def\s+[A-Za-z_][A-Za-z0-9_]*\s*\([^)]*\)\s*(?:->\s*[^:]+)?:\s*\S",
    r"^class\s+[A-Z][A-Za-z0-9_]*(?:\([^)]*\))?:\s*\S",
    r"^(?:for|while|if|with)\s[^:]+:\s*(?:return\b|print\(|yield\b|[A-Za-z_][A-Za-z0-9_.\[\]]*\s*[-+*/]?=\s*\S|[A-Za-z_][A-Za-z0-9_.]*\()",
    r"^[A-Za-z_][A-Za-z0-9_]*\s*=\s*(?:lambda\b|\[.+\sfor\s+[A-Za-z_(][^\]]*\sin\s.+\])",
    // SQL written as SQL: upper-case keywords
    r"^SELECT\s+.+\s+FROM\s+[A-Za-z_][A-Za-z0-9_.]*(?:\s+(?:WHERE|JOIN|GROUP BY|ORDER BY|LIMIT|INNER|LEFT)\b.*)?;?$",
    r"^(?:INSERT INTO\s+\S+.*VALUES\s*\(|UPDATE\s+\S+\s+SET\s+\S+\s*=|DELETE FROM\s+\S+\s+WHERE\b|CREATE TABLE\s+\S+\s*\()",
    // C-family and Go: a test whose block returns, on one line
    r"^if\s*\(?[^{]+\)?\s*\{\s*return\b[^}]*\}$",
    // Shell: a loop or a test with its body on the line
    r"^(?:for|while|until)\s.+;\s*do\s.+;\s*done$",
    r"^if\s.+;\s*then\s.+;\s*fi$",
    // JavaScript: an arrow function bound to a name
    r"^(?:export\s+)?(?:const|let|var)\s+[A-Za-z_$][A-Za-z0-9_$]*\s*=\s*(?:async\s+)?(?:\([^)]*\)|[A-Za-z_$][A-Za-z0-9_$]*)\s*=>",
];

/// One line that is code by itself: a definition with its body, two statements or more
/// (split at `;`, `{` and `}`, each weighed as a line), or a one-line idiom of a language
/// (`idiom`: the line matches one of [`ONE_LINE`]). The line comes trimmed.
fn one_line_code(line: &str, idiom: bool) -> bool {
    if line.len() < 12 {
        return false;
    }
    if idiom {
        return true;
    }
    if memchr::memchr3(b';', b'{', b'}', line.as_bytes()).is_none() {
        return false;
    }
    // One statement alone (`let x = foo()?;`) is a mention, and `key=value;` pairs are a
    // connection string: two statements or more, one a definition or a block, are a paste.
    let pieces = statements(line);
    let rules = &*LINE_RULES;
    (line.contains('{') || pieces.iter().any(|p| rules.strong.is_match(p)))
        && source(&pieces, &pieces, |i| weight(rules, pieces[i]))
}

/// A line split after each `;` and `{` and around each `}`, outside quoted strings.
fn statements(line: &str) -> Vec<&str> {
    fn push<'a>(piece: &'a str, pieces: &mut Vec<&'a str>) {
        let piece = piece.trim();
        if !piece.is_empty() {
            pieces.push(piece);
        }
    }
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut quote: Option<char> = None;
    for (at, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'' | '`') => quote = Some(c),
            (None, ';' | '{') => {
                push(&line[start..=at], &mut pieces);
                start = at + 1;
            }
            (None, '}') => {
                push(&line[start..at], &mut pieces);
                start = at;
            }
            _ => {}
        }
    }
    push(&line[start..], &mut pieces);
    pieces
}

static HUNK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^@@ -[0-9]+(?:,[0-9]+)? \+[0-9]+(?:,[0-9]+)? @@").expect("compiles")
});

/// A diff has a hunk with its lines, a `---`/`+++` pair, or a `diff --git` header with its
/// second header line. Each needs two lines, so a message naming one header passes.
fn diff(lines: &[&str]) -> bool {
    lines.iter().enumerate().any(|(i, line)| {
        let next = lines.get(i + 1).copied().unwrap_or("");
        let hunk_line = |l: &str| l.starts_with([' ', '+', '-', '\\']) || l.is_empty();
        (line.starts_with("@@ ") && HUNK.is_match(line) && i + 1 < lines.len() && hunk_line(next))
            || (line.starts_with("--- ") && next.starts_with("+++ "))
            || (line.starts_with("diff --git ")
                && [
                    "index ",
                    "--- ",
                    "new file mode",
                    "deleted file mode",
                    "similarity index",
                    "old mode",
                    "rename from",
                    "Binary files",
                ]
                .iter()
                .any(|h| next.starts_with(h)))
    })
}

/// A fence (up to three spaces in, as CommonMark allows) with a non-empty line after it.
/// `trimmed` holds each line trimmed: a fence's opens with its first backtick or tilde.
fn fenced(lines: &[&str], trimmed: &[&str]) -> bool {
    let fence = |l: &str| {
        let l = l.trim_end();
        let body = l.trim_start_matches(' ');
        l.len() - body.len() <= 3 && (body.starts_with("```") || body.starts_with("~~~"))
    };
    lines.iter().enumerate().any(|(i, &line)| {
        trimmed[i].starts_with(['`', '~'])
            && fence(line)
            && lines[i + 1..]
                .iter()
                .any(|&l| !l.trim().is_empty() && !fence(l))
    })
}

/// How much one trimmed line looks like code: definitions and headers weigh 3, statements
/// 2, and a bare brace, semicolon or flag 1.
struct LineRules {
    strong: RegexSet,
    /// [`STRONG`], [`MEDIUM`], [`WEAK`] and [`ONE_LINE`] in one set, so a line is read once.
    all: RegexSet,
    /// Whether [`LineRules::all`] matches an empty line: asked once, so the blank lines
    /// between paragraphs cost no call of the set each.
    all_match_empty: bool,
}

/// What a trimmed line's one match against [`LineRules::all`] says.
struct Judged {
    weight: u32,
    /// It matches one of [`ONE_LINE`].
    one_line: bool,
}

const STRONG: &[&str] = &[
    // Rust
    r#"^(?:pub(?:\([a-z]+\))?\s+)?(?:(?:const|async|unsafe)\s+)*(?:extern\s+"[A-Za-z]+"\s+)?fn\s+[A-Za-z_][A-Za-z0-9_]*\s*(?:<[^>]*>)?\s*\("#,
    r"^(?:pub(?:\([a-z]+\))?\s+)?(?:struct|enum|trait|union)\s+[A-Z][A-Za-z0-9_]*(?:<[^>]*>)?\s*(?:\{|\(|;|where\b)",
    r"^impl(?:<[^>]*>)?\s+[A-Za-z_][^{]*\{$",
    r"^(?:pub(?:\([a-z]+\))?\s+)?use\s+[A-Za-z_][A-Za-z0-9_]*::[A-Za-z0-9_:{}*, ]+;$",
    r"^(?:pub\s+)?mod\s+[a-z_][a-z0-9_]*\s*[;{]$",
    r"^let\s+(?:mut\s+)?[A-Za-z_(][^=]*=[^=].*;$",
    r"^#!?\[[a-z_]+(?:\(.*\))?\]$",
    r"^match\s+.+\{$",
    r"^(?:if|while|for|switch)\s*\(.*\)\s*\{$",
    r"^(?:if|while|for|loop)\b[^.!?]*\{$",
    r"^\}\s*else(?:\s+if\s.+)?\s*\{$",
    // Python
    r"^(?:async\s+)?def\s+[A-Za-z_][A-Za-z0-9_]*\s*\(.*\)\s*(?:->\s*[^:]+)?:$",
    r"^class\s+[A-Z][A-Za-z0-9_]*\s*(?:\([^)]*\))?\s*:$",
    r"^from\s+\.*[A-Za-z_][A-Za-z0-9_.]*\s+import\s+(?:\*|\(|[A-Za-z_][A-Za-z0-9_]*(?:\s+as\s+[A-Za-z_][A-Za-z0-9_]*)?(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*(?:\s+as\s+[A-Za-z_][A-Za-z0-9_]*)?)*)$",
    r"^if\s+__name__\s*==",
    r"^self\.[A-Za-z_][A-Za-z0-9_]*\s*=",
    // JavaScript and TypeScript
    r"^(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*[A-Za-z_$][A-Za-z0-9_$]*\s*(?:<[^>]*>)?\s*\(",
    r"^(?:export\s+)?(?:const|let|var)\s+(?:[A-Za-z_$][A-Za-z0-9_$]*|\{[^}]*\}|\[[^\]]*\])\s*(?::\s*[^=]+)?=[^=]",
    r#"^import\s+(?:type\s+)?[A-Za-z0-9_$*{},\s]+\s+from\s+['"][^'"]+['"];?$"#,
    r#"^import\s+['"][^'"]+['"];?$"#,
    r"^(?:export\s+)?(?:declare\s+)?(?:interface|type)\s+[A-Z][A-Za-z0-9_]*(?:<[^>]*>)?\s*(?:=|\{|extends\b)",
    r"^(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+[A-Z][A-Za-z0-9_]*(?:<[^>]*>)?(?:\s+(?:extends|implements)\s+[A-Za-z0-9_.<>, ]+)*\s*\{$",
    r"^module\.exports\s*=",
    r"^export\s+(?:default\b|\{)",
    // Go
    r"^func\s+(?:\([^)]*\)\s*)?[A-Za-z_][A-Za-z0-9_]*\s*(?:\[[^\]]*\])?\(",
    r"^package\s+[a-z][a-z0-9_]*$",
    r"^import\s*\($",
    r"^[A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*\s*:=\s*\S",
    r"^type\s+[A-Za-z_][A-Za-z0-9_]*\s+(?:struct|interface)\s*\{$",
    // C and C++
    r#"^#\s*include\s*[<"][^>"]+[>"]$"#,
    r"^#(?:define|ifndef|ifdef|endif|pragma|undef)\b",
    r"^(?:(?:static|extern|inline|const|unsigned|signed|virtual|constexpr|struct)\s+)*(?:void|int|char|float|double|long|short|bool|size_t|u?int(?:8|16|32|64)_t|auto|std::[A-Za-z0-9_:<>]+)\s*[*&]*\s*[A-Za-z_][A-Za-z0-9_:]*\s*\([^;]*\)\s*(?:const\s*)?\{?$",
    r"^(?:template\s*<|namespace\s+[A-Za-z_][A-Za-z0-9_]*\s*\{|using\s+namespace\s+[A-Za-z0-9_:]+;)",
    r"^(?:(?:static|const|unsigned|extern)\s+)*(?:int|char|float|double|long|bool|size_t|auto|unsigned|u?int(?:8|16|32|64)_t)\s+\**[A-Za-z_][A-Za-z0-9_]*(?:\[[A-Za-z0-9_]*\])?\s*(?:=.*)?;$",
    // Java
    r"^(?:public|private|protected)\s+.*(?:\)\s*(?:throws\s+[A-Za-z0-9_., ]+)?\{|;|\{)$",
    r"^package\s+[a-z][A-Za-z0-9_.]*;$",
    r"^import\s+(?:static\s+)?[a-z][A-Za-z0-9_.]*(?:\.\*)?;$",
    r"^@(?:Override|Test|Autowired|Deprecated|SuppressWarnings|Component|Service|Bean|GetMapping|PostMapping|RestController)\b",
    // Shell
    r"^#!\s*/\S+",
    r"^<\?php\b",
    r"^(?:then|fi|esac|;;)$",
    r"^(?:if|elif|while|until)\s+\[\[?\s.*\]\]?\s*;?\s*(?:then|do)?$",
    r"^for\s+[A-Za-z_][A-Za-z0-9_]*\s+in\s+.+;\s*do$",
    r"^(?:while|until)\s+.+;\s*do$",
    r"^case\s+.+\s+in$",
    r"^[a-z_][a-z0-9_]*\s*\(\)\s*\{$",
    r"^set\s+-[euxo]+(?:\s+pipefail)?$",
    // SQL
    r"^SELECT\s+(?:DISTINCT\s+)?(?:\*|[A-Za-z_][A-Za-z0-9_.]*|COUNT\()",
    r"^(?:INSERT\s+INTO|UPDATE\s+[A-Za-z_][A-Za-z0-9_.]*\s+SET|DELETE\s+FROM|CREATE\s+(?:OR\s+REPLACE\s+)?(?:TABLE|(?:UNIQUE\s+)?INDEX|VIEW|FUNCTION|EXTENSION|SCHEMA)|ALTER\s+TABLE|DROP\s+(?:TABLE|INDEX|VIEW)|WITH\s+[A-Za-z_][A-Za-z0-9_]*\s+AS\s*\()\b",
];

const MEDIUM: &[&str] = &[
    // a call as a statement: `foo(bar);`, `self.x.push(1)`, `println!("{x}")`
    r"^(?:await\s+|return\s+|yield\s+)?[A-Za-z_$][A-Za-z0-9_$]*(?:(?:\.|::|->)[A-Za-z_$][A-Za-z0-9_$]*)*!?\(.*\)\s*[;,]?$",
    r"^\.[A-Za-z_][A-Za-z0-9_]*\(",
    r#"^[A-Za-z_][A-Za-z0-9_.\[\]"']*\s*[-+*/%|&^]?=\s*[^=\s].*(?:\)|;)$"#,
    r"^return\b.*;$",
    r"^(?:if|elif|while|for|with|except)\b[^.!?]*:$",
    r"^(?:FROM|WHERE|JOIN|LEFT\s+JOIN|INNER\s+JOIN|GROUP\s+BY|ORDER\s+BY|HAVING|LIMIT|VALUES|SET|RETURNING|ON\s+CONFLICT|UNION)\b",
    r"(?i)^select\s+[A-Za-z0-9_.*, ()]+\s+from\s+[A-Za-z0-9_.]+",
    r"(?i)^(?:where|and|or|join|group\s+by|order\s+by)\s+[A-Za-z0-9_.]+\s*(?:=|<|>|!=|in\s*\(|like\b|is\b|,|desc\b|asc\b|;|$)",
    r"(?i)^select\s+(?:distinct\s+)?(?:\*|[a-z_][a-z0-9_.]*(?:\([^)]*\))?\s*,)",
    r"(?i)^from\s+[a-z_][a-z0-9_.]*(?:\s+(?:as\s+)?[a-z_][a-z0-9_]*)?\s*;?$",
    r"(?i)^(?:(?:left|right|inner|outer|cross)\s+)?join\s+[a-z_][a-z0-9_.]*(?:\s+[a-z_][a-z0-9_]*)?\s+on\s+[a-z_][a-z0-9_.]*\s*=",
    r#"^(?:echo|printf)\s+["'$]"#,
    r"^import\s+[A-Za-z_][A-Za-z0-9_.]*(?:\s+as\s+[A-Za-z_][A-Za-z0-9_]*)?(?:\s*,\s*[A-Za-z_][A-Za-z0-9_.]*)*$",
    r"^@[A-Za-z_][A-Za-z0-9_.]*(?:\(.*\))?$",
    r"=>\s*\{$",
    r"^\}\s*(?:catch|finally)\b.*\{$",
    r"^(?:defer|go)\s+[A-Za-z_][A-Za-z0-9_.]*\(",
    r"^(?:raise|throw)\s+(?:new\s+)?[A-Z][A-Za-z0-9_]*\(",
    r#"^(?:export\s+)?[A-Z_][A-Z0-9_]*=(?:"[^"]*"|'[^']*'|\$\(.+\)|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?\S*)$"#,
    r"^(?:local|readonly|declare)\s+[A-Za-z_][A-Za-z0-9_]*=",
    // a command that expands a variable or a substitution: `cd "$(dirname "$0")"`
    r#"^[a-z][A-Za-z0-9_.-]*\s.*(?:\$\(|\$\{[A-Za-z_]|"\$[A-Za-z_0-9@])"#,
    r"^(?:std::)?cout\s*<<",
    // a C-family control header whose body is on the next line
    r"^(?:for|while|if|switch)\s*\(.*[;=<>!].*\)$",
    // PHP
    r"^\$[A-Za-z_][A-Za-z0-9_]*\s*(?:\[[^\]]*\])?\s*[-+.*/]?=\s*.+;$",
];

const WEAK: &[&str] = &[
    r";$",
    r"\{$",
    r"^[\]\)\}]+[;,)]*$",
    r"^[A-Za-z_][A-Za-z0-9_.]*\s*[-+*/]?=\s*\S",
    r"^return\b",
    r"^(?:sudo\s+)?[a-z][A-Za-z0-9_.-]*(?:\s+\S+)*\s+(?:-{1,2}[A-Za-z][A-Za-z0-9_-]*|\|\s*[a-z]|&&|2?>{1,2}\s*\S)",
    r"^(?:else|try|finally|do|done|break|continue|pass)\s*:?;?$",
    r"\)\s*->\s*\S",
];

static LINE_RULES: LazyLock<LineRules> = LazyLock::new(|| {
    let all = RegexSet::new(STRONG.iter().chain(MEDIUM).chain(WEAK).chain(ONE_LINE))
        .expect("the guard's code patterns compile");
    LineRules {
        strong: RegexSet::new(STRONG).expect("the guard's code patterns compile"),
        all_match_empty: all.is_match(""),
        all,
    }
});

/// List items and quotes are prose even when they name code.
fn bullet(line: &str) -> bool {
    line.starts_with("- ")
        || line.starts_with("+ ")
        || line.starts_with("> ")
        || line.starts_with("• ")
        || line.split_once(['.', ')']).is_some_and(|(n, rest)| {
            !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && rest.starts_with(' ')
        })
}

/// Whether the line's first word (its letters, in any case) is one that a line pattern
/// opens with and that needs no byte of [`CODE`] after it: `class Foo:`, `from x import
/// y`, `SELECT a FROM b`, `done`, `or x is null`.
///
/// A letter outside ASCII in the word may fold to one of these without regard to case (`ſ`
/// to `s`): such a word may be one.
fn opens_with_keyword(line: &[u8]) -> bool {
    let word = line.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    if line.get(word).is_some_and(|&b| b >= 0x80) {
        return true;
    }
    let mut lower = [0u8; 10];
    let Some(slot) = lower.get_mut(..word) else {
        return false;
    };
    slot.copy_from_slice(&line[..word]);
    slot.make_ascii_lowercase();
    matches!(
        &*slot,
        // Rust, TypeScript, Go, Python, Java declarations
        b"pub" | b"struct" | b"enum" | b"trait" | b"union" | b"class" | b"from" | b"import"
            | b"self" | b"export" | b"declare" | b"interface" | b"type" | b"package"
            // shell
            | b"then" | b"fi" | b"esac" | b"case" | b"set" | b"echo" | b"printf"
            // SQL
            | b"select" | b"insert" | b"update" | b"delete" | b"create" | b"alter" | b"drop"
            | b"with" | b"where" | b"join" | b"left" | b"right" | b"inner" | b"outer"
            | b"cross" | b"group" | b"order" | b"having" | b"limit" | b"values" | b"returning"
            | b"on" | b"and" | b"or"
            // blocks and statements
            | b"if" | b"elif" | b"while" | b"until" | b"for" | b"except" | b"return" | b"else"
            | b"try" | b"finally" | b"do" | b"done" | b"break" | b"continue" | b"pass"
    )
}

fn judge(rules: &LineRules, line: &str) -> Judged {
    // Most lines of prose match nothing, and a yes or no is cheaper than which.
    if (line.is_empty() && !rules.all_match_empty) || !rules.all.is_match(line) {
        return Judged {
            weight: 0,
            one_line: false,
        };
    }
    let matched = rules.all.matches(line);
    let (medium, weak, idioms) = (
        STRONG.len(),
        STRONG.len() + MEDIUM.len(),
        STRONG.len() + MEDIUM.len() + WEAK.len(),
    );
    let weight = match matched.iter().next() {
        _ if bullet(line) => 0,
        Some(i) if i < medium => 3,
        Some(i) if i < weak => 2,
        Some(i) if i < idioms => 1,
        _ => 0,
    };
    Judged {
        weight,
        one_line: matched.iter().any(|i| i >= idioms),
    }
}

fn weight(rules: &LineRules, line: &str) -> u32 {
    judge(rules, line).weight
}

/// Source code: a run of consecutive code-like lines (blank lines, comments and indented
/// continuations neither count nor break it) that weighs 4 or more, over at least two
/// lines, one of them more than a bare brace. `trimmed` holds each line trimmed.
fn source(lines: &[&str], trimmed: &[&str], weight_of: impl Fn(usize) -> u32) -> bool {
    let (mut score, mut counted, mut heaviest) = (0, 0, 0);
    for (i, (raw, line)) in lines.iter().zip(trimmed).enumerate() {
        let w = weight_of(i);
        if w > 0 {
            score += w;
            counted += 1;
            heaviest = heaviest.max(w);
            if score >= 4 && counted >= 2 && heaviest >= 2 {
                return true;
            }
            continue;
        }
        let neutral = line.is_empty()
            || line.starts_with("//")
            || line.starts_with('#')
            || line.starts_with("/*")
            || line.starts_with('*')
            || line.starts_with("--")
            || line.starts_with("<!--")
            || (counted > 0 && raw.starts_with([' ', '\t']));
        if !neutral {
            (score, counted, heaviest) = (0, 0, 0);
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_odd_lines_are_judged_without_a_panic() {
        for text in [
            "",
            "+",
            "-",
            "+é",
            "- ",
            "\n+\n-\n",
            "[",
            "{",
            "+ é\n- ü",
            "{\"a\":",
        ] {
            let _ = detect(text);
        }
    }

    #[test]
    fn a_line_is_trimmed_as_str_trim_trims_it() {
        for line in [
            "",
            "x",
            " ",
            "é",
            "x y",
            " x",
            "x ",
            "\u{a0}x",
            "x\u{3000}",
            "\tx\r",
            "-",
            "--x",
        ] {
            assert_eq!(trim(line), line.trim(), "{line:?}");
        }
    }

    #[test]
    fn every_line_pattern_compiles() {
        let rules = &*LINE_RULES;
        assert_eq!(rules.strong.len(), STRONG.len());
        assert_eq!(
            rules.all.len(),
            STRONG.len() + MEDIUM.len() + WEAK.len() + ONE_LINE.len()
        );
    }

    #[test]
    fn no_line_a_pattern_matches_is_ruled_out_by_the_byte_check() {
        // Every line of the corpus, each statement of it and each changed line of a diff, as
        // `judge` is given them, and the lines that match only by a word they open with.
        let mut lines: Vec<String> = vec![
            "class Foo:".into(),
            "from here on".into(),
            "from os import path".into(),
            "SELECT name FROM users".into(),
            "\u{17f}elect name from users".into(),
            "done".into(),
            "then".into(),
            "pass".into(),
            "or maybe, later".into(),
            "and then".into(),
            "return the key".into(),
            "case $x in".into(),
            "set -euo pipefail".into(),
            "package main".into(),
            "export default".into(),
            "for the record: print(x)".into(),
            "echo \"$HOME\"".into(),
            "git log --oneline".into(),
            "ls\u{a0}-la".into(),
            "pub struct Foo where T: Clone".into(),
            "if x: return y".into(),
            "with open(f) as g:".into(),
        ];
        for text in crate::guard::secrets::tests::corpus() {
            for line in super::lines(&text).0 {
                let line = line.trim();
                lines.push(line.to_owned());
                lines.extend(statements(line).into_iter().map(str::to_owned));
                if let Some(rest) = line.strip_prefix(['+', '-']) {
                    lines.push(rest.trim().to_owned());
                }
            }
        }
        let rules = &*LINE_RULES;
        let mut matched = 0;
        for line in lines.iter().filter(|l| !l.is_empty()) {
            // As `detect` reads it: a line of a text, blanks around it.
            for text in [
                line.clone(),
                format!("  {line}\r\nnext"),
                format!("x\n\t{line}"),
            ] {
                let (split, held) = super::lines(&text);
                let at = split.iter().position(|l| l.trim() == line).unwrap();
                if rules.all.is_match(line) {
                    matched += 1;
                    assert!(
                        may_be_code(line, held[at]),
                        "{line:?} matches a line pattern"
                    );
                }
            }
        }
        assert!(matched > 1000, "{matched} lines matched");
    }

    #[test]
    fn a_definition_weighs_more_than_a_statement_and_a_statement_more_than_a_brace() {
        let rules = &*LINE_RULES;
        assert_eq!(
            weight(rules, "fn parse(text: &str) -> Result<(), Error> {"),
            3
        );
        assert_eq!(weight(rules, "items.push(item);"), 2);
        assert_eq!(weight(rules, "}"), 1);
        assert_eq!(weight(rules, "renamed fn foo to bar"), 0);
        assert_eq!(weight(rules, "- fn foo() is gone"), 0);
    }
}
