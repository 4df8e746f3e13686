//! Code and diff shapes, for posts and summaries.
//!
//! Judged by structure, never by a word: a diff has its headers and hunks, a code block its
//! fences, and source code is several consecutive lines that each look like code (a
//! definition, a statement, a brace). One line is always a mention, not a paste: "renamed
//! fn foo to bar" passes, and so does a single command or call.

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
    /// Several lines of source code in any of the common languages.
    SourceCode,
}

impl CodeKind {
    /// Every kind.
    pub const ALL: [CodeKind; 3] = [Self::Diff, Self::FencedCode, Self::SourceCode];

    /// The stable snake_case name, for reports.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Diff => "diff",
            Self::FencedCode => "fenced_code",
            Self::SourceCode => "source_code",
        }
    }

    /// The kind in words with its article, as the refusal says it ("a diff").
    pub const fn described(self) -> &'static str {
        match self {
            Self::Diff => "a diff",
            Self::FencedCode => "a code block",
            Self::SourceCode => "source code",
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
    if !text.contains('\n') {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    if diff(&lines) {
        Some(CodeKind::Diff)
    } else if fenced(&lines) {
        Some(CodeKind::FencedCode)
    } else if source(&lines) {
        Some(CodeKind::SourceCode)
    } else {
        None
    }
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
fn fenced(lines: &[&str]) -> bool {
    let fence = |l: &str| {
        let l = l.trim_end();
        let body = l.trim_start_matches(' ');
        l.len() - body.len() <= 3 && (body.starts_with("```") || body.starts_with("~~~"))
    };
    lines.iter().enumerate().any(|(i, &line)| {
        fence(line)
            && lines[i + 1..]
                .iter()
                .any(|&l| !l.trim().is_empty() && !fence(l))
    })
}

/// How much one trimmed line looks like code: definitions and headers weigh 3, statements
/// 2, and a bare brace, semicolon or flag 1.
struct LineRules {
    strong: RegexSet,
    medium: RegexSet,
    weak: RegexSet,
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

static LINE_RULES: LazyLock<LineRules> = LazyLock::new(|| LineRules {
    strong: RegexSet::new(STRONG).expect("the guard's code patterns compile"),
    medium: RegexSet::new(MEDIUM).expect("the guard's code patterns compile"),
    weak: RegexSet::new(WEAK).expect("the guard's code patterns compile"),
});

fn weight(rules: &LineRules, line: &str) -> u32 {
    // List items and quotes are prose even when they name code.
    let bullet = line.starts_with("- ")
        || line.starts_with("+ ")
        || line.starts_with("> ")
        || line.starts_with("• ")
        || line.split_once(['.', ')']).is_some_and(|(n, rest)| {
            !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && rest.starts_with(' ')
        });
    if bullet {
        0
    } else if rules.strong.is_match(line) {
        3
    } else if rules.medium.is_match(line) {
        2
    } else if rules.weak.is_match(line) {
        1
    } else {
        0
    }
}

/// Source code: a run of consecutive code-like lines (blank lines, comments and indented
/// continuations neither count nor break it) that weighs 4 or more, over at least two
/// lines, one of them more than a bare brace.
fn source(lines: &[&str]) -> bool {
    let rules = &*LINE_RULES;
    let (mut score, mut counted, mut heaviest) = (0, 0, 0);
    for raw in lines {
        let line = raw.trim();
        let w = weight(rules, line);
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
    fn every_line_pattern_compiles() {
        let rules = &*LINE_RULES;
        assert_eq!(rules.strong.len(), STRONG.len());
        assert_eq!(rules.medium.len(), MEDIUM.len());
        assert_eq!(rules.weak.len(), WEAK.len());
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
