//! Cost of the guard per KB of text an agent sends: ordinary notes (the common case, which
//! must stay cheap), the same notes with one token in the middle, and source code.
//!
//! Each input is about 4 KB built from the test corpus. After the criterion runs, the cost
//! per KB of `check` (as a post) and of `redact` is printed to stderr, for the cases a filter
//! names (`check_post_ordinary`) or all of them. Under `cargo test --benches` (no `--bench`
//! flag) criterion runs each once and the printed figures are from a few rounds only.
//!
//! Instructions, for a figure the machine's load does not move: the rounds of one case run
//! inside `per_kb`, so callgrind can count only them (`--toggle-collect='guard::per_kb*'`,
//! then divide by the 501 rounds):
//!
//! ```text
//! valgrind --tool=callgrind --toggle-collect='guard::per_kb*' \
//!     target/release/deps/guard-<hash> --bench check_post_ordinary --profile-time 1
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use ferry_mcp_core::guard::{self, GuardRefusal, TextUse};

const ORDINARY: &str = include_str!("../tests/guard_corpus/ordinary.txt");
const CODE: &str = include_str!("../tests/guard_corpus/code.txt");

/// A published GitHub token test vector (its checksum is valid).
const TOKEN: &str = "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";

const SIZE: usize = 4096;

/// The corpus texts of the given kinds, unescaped and joined by blank lines, up to `SIZE`.
fn build(corpus: &str, kinds: &[&str]) -> String {
    let mut out = String::new();
    for line in corpus.lines().cycle() {
        let (kind, text) = line.split_once('\t').expect("kind<TAB>text");
        if !kinds.contains(&kind) {
            continue;
        }
        let text = text
            .replace("\\\\", "\u{0}")
            .replace("\\n", "\n")
            .replace("\\t", "\t")
            .replace('\u{0}', "\\");
        if out.len() + text.len() + 2 > SIZE {
            break;
        }
        out.push_str(&text);
        out.push_str("\n\n");
    }
    out
}

struct Input {
    name: &'static str,
    text: String,
}

fn inputs() -> [Input; 3] {
    let ordinary = build(
        ORDINARY,
        &["prose", "multiline", "mention", "commit", "url"],
    );
    assert_eq!(guard::check(&ordinary, TextUse::Post), Ok(()));
    let middle = ordinary[..ordinary.len() / 2]
        .rfind('\n')
        .expect("several lines");
    let with_secret = format!(
        "{}the token is {TOKEN}\n{}",
        &ordinary[..=middle],
        &ordinary[middle + 1..]
    );
    assert!(matches!(
        guard::check(&with_secret, TextUse::Post),
        Err(GuardRefusal::Secret { .. })
    ));
    let code = build(CODE, &["rust", "python", "go", "javascript"]);
    assert!(matches!(
        guard::check(&code, TextUse::Post),
        Err(GuardRefusal::Code { .. })
    ));
    [
        Input {
            name: "ordinary",
            text: ordinary,
        },
        Input {
            name: "secret",
            text: with_secret,
        },
        Input {
            name: "code",
            text: code,
        },
    ]
}

/// Median time of `rounds` calls of `f`, per KB of `text`. Never inlined: callgrind counts
/// the instructions inside it alone.
#[inline(never)]
fn per_kb(text: &str, rounds: usize, f: impl Fn(&str)) -> Duration {
    let mut times: Vec<Duration> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            f(black_box(text));
            start.elapsed()
        })
        .collect();
    times.sort();
    times[rounds / 2].mul_f64(1024.0 / text.len() as f64)
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let inputs = inputs();
    // Compiles the patterns outside every measurement.
    let _ = guard::check("warm up", TextUse::Post);

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("guard");
    for input in &inputs {
        group.throughput(Throughput::Bytes(input.text.len() as u64));
        group.bench_function(format!("check_post_{}", input.name), |b| {
            b.iter(|| guard::check(black_box(&input.text), TextUse::Post))
        });
        group.bench_function(format!("redact_{}", input.name), |b| {
            b.iter(|| guard::redact(black_box(&input.text)).redacted)
        });
    }
    group.finish();
    criterion.final_summary();

    let rounds = if bench_mode { ROUNDS } else { 3 };
    let filters = filters();
    let named = |id: &str| filters.is_empty() || filters.iter().any(|f| id.contains(f.as_str()));
    for input in &inputs {
        if named(&format!("check_post_{}", input.name)) {
            let check = per_kb(&input.text, rounds, |t| {
                let _ = black_box(guard::check(t, TextUse::Post));
            });
            eprintln!(
                "guard on {} ({} bytes): check as a post {check:?} per KB",
                input.name,
                input.text.len(),
            );
        }
        if named(&format!("redact_{}", input.name)) {
            let redact = per_kb(&input.text, rounds, |t| {
                black_box(guard::redact(t).redacted);
            });
            eprintln!(
                "guard on {} ({} bytes): redact {redact:?} per KB",
                input.name,
                input.text.len(),
            );
        }
    }
}

/// Rounds of each case after the criterion runs, under `--bench`.
const ROUNDS: usize = 501;

/// Criterion's options that take a value (`--measurement-time 3`).
const VALUED: &[&str] = &[
    "-b",
    "-c",
    "-s",
    "--baseline",
    "--baseline-lenient",
    "--color",
    "--confidence-level",
    "--format",
    "--load-baseline",
    "--logfile",
    "--measurement-time",
    "--noise-threshold",
    "--nresamples",
    "--output-format",
    "--plotting-backend",
    "--profile-time",
    "--sample-size",
    "--save-baseline",
    "--significance-level",
    "--warm-up-time",
];

/// The filters criterion was given: the arguments that are neither an option nor its value.
fn filters() -> Vec<String> {
    let mut out = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if VALUED.contains(&arg.as_str()) {
            args.next();
        } else if !arg.starts_with('-') {
            out.push(arg);
        }
    }
    out
}
