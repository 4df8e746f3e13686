//! The stdio loop: the only IO and the only clock read of `ferry mcp serve`.
//!
//! A reader thread splits stdin into capped lines and sends them over a bounded channel, so
//! a client that writes faster than we answer is held back instead of filling memory. The
//! main loop takes everything already read as one batch (so a `notifications/cancelled`
//! can drop a request queued beside it), reads the wall clock once, hands the batch to the
//! core and writes each answer as one line, flushing after every batch. At end of input it
//! answers what it has read and returns.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread;

use anyhow::Context as _;
use ferry_mcp_core::protocol::{MAX_LINE_BYTES, Server};
use ferry_mcp_core::time::Timestamp;

use super::gateway_cancel::Cancels;
use super::lines::{CappedLines, Line};

/// Lines read ahead of the core at most; with the line cap this bounds memory to ~16 MiB.
const READ_AHEAD_LINES: usize = 16;
/// Lines handed to the core at once at most, so one answer flush never waits on a flood.
const MAX_BATCH_LINES: usize = 256;
/// A batch stops growing once it holds this many bytes, so it adds at most ~2 MiB to memory.
const MAX_BATCH_BYTES: usize = MAX_LINE_BYTES;

/// Serves stdin to stdout until end of input. A closed stdout (the client went away) ends
/// serving quietly: nobody is left to answer. `cancels` learns of each
/// `notifications/cancelled` as soon as it is read, for a gateway call still waiting.
pub fn serve_stdio(server: &mut Server, cancels: Arc<Cancels>) -> anyhow::Result<()> {
    let (sender, receiver) = mpsc::sync_channel(READ_AHEAD_LINES);
    let reader = thread::Builder::new()
        .name("stdin".into())
        .spawn(move || read_lines_noting(io::stdin().lock(), sender, &cancels))
        .context("cannot start the stdin reader")?;
    let stdout = io::stdout();
    match answer_batches(server, &receiver, &mut stdout.lock(), wall_clock) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => {
            eprintln!("ferry mcp serve: stdout closed, stopping");
            return Ok(());
        }
        Err(err) => return Err(err).context("writing stdout failed"),
    }
    // The sender is gone, so the reader has returned; a panic there is a bug worth surfacing.
    match reader.join() {
        Ok(result) => result.context("reading stdin failed"),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Reads lines until end of input or until the receiving side is gone.
#[cfg(test)]
pub fn read_lines(input: impl io::BufRead, sender: SyncSender<Line>) -> io::Result<()> {
    read_lines_noting(input, sender, &Cancels::default())
}

/// [`read_lines`], telling `cancels` of each cancellation it reads.
fn read_lines_noting(
    input: impl io::BufRead,
    sender: SyncSender<Line>,
    cancels: &Cancels,
) -> io::Result<()> {
    let mut lines = CappedLines::new(input, MAX_LINE_BYTES);
    while let Some(line) = lines.next_line()? {
        if let Line::Complete(bytes) = &line {
            cancels.note(bytes);
        }
        if sender.send(line).is_err() {
            break;
        }
    }
    Ok(())
}

/// Answers batches of lines from `receiver` until it is closed and empty.
pub fn answer_batches(
    server: &mut Server,
    receiver: &Receiver<Line>,
    output: &mut impl Write,
    mut clock: impl FnMut() -> Timestamp,
) -> io::Result<()> {
    while let Ok(first) = receiver.recv() {
        let mut bytes = first.len();
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH_LINES && bytes < MAX_BATCH_BYTES {
            match receiver.try_recv() {
                Ok(line) => {
                    bytes += line.len();
                    batch.push(line);
                }
                Err(_) => break,
            }
        }
        let now = clock();
        for answer in answer_batch(server, &batch, now) {
            output.write_all(answer.as_bytes())?;
            output.write_all(b"\n")?;
        }
        output.flush()?;
        // Once the answers are out: keep what the calls verified.
        server.channel_mut().flush(now);
    }
    Ok(())
}

/// The answers to one batch, in input order. Runs of complete lines go to the core
/// together; an oversized line is answered on its own where it stood.
fn answer_batch(server: &mut Server, batch: &[Line], now: Timestamp) -> Vec<String> {
    let mut answers = Vec::new();
    let mut run: Vec<&[u8]> = Vec::new();
    for line in batch {
        match line {
            Line::Complete(bytes) => run.push(bytes),
            Line::Oversized(prefix) => {
                answers.extend(handle_run(server, &run, now));
                run.clear();
                answers.extend(server.handle_oversized_line(prefix, now));
            }
        }
    }
    answers.extend(handle_run(server, &run, now));
    answers
}

fn handle_run(server: &mut Server, run: &[&[u8]], now: Timestamp) -> Vec<String> {
    if run.is_empty() {
        return Vec::new();
    }
    server.handle_lines(run, now)
}

/// Milliseconds since the Unix epoch; a clock set before 1970 reads as the epoch.
fn wall_clock() -> Timestamp {
    crate::clock::now()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

    fn line(text: &str) -> Line {
        Line::Complete(text.as_bytes().to_vec())
    }

    fn ping(id: u64) -> Line {
        line(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#))
    }

    /// Answers `lines` as the loop does when they were all read before it woke up, and
    /// returns the ids of the answers and how often the clock was read.
    fn answer_all(lines: Vec<Line>) -> (Vec<Value>, usize) {
        let (sender, receiver) = mpsc::sync_channel(lines.len());
        for line in lines {
            sender.send(line).unwrap();
        }
        drop(sender);
        let mut server = ferry_mcp_tools::fixture::server("demo");
        let mut output = Vec::new();
        let mut clock_reads = 0;
        answer_batches(&mut server, &receiver, &mut output, || {
            clock_reads += 1;
            Timestamp::from_millis(1_000)
        })
        .unwrap();
        let text = String::from_utf8(output).unwrap();
        let ids = text
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap()["id"].clone())
            .collect();
        (ids, clock_reads)
    }

    #[test]
    fn lines_read_together_are_one_batch_and_the_clock_is_read_once() {
        let (ids, clock_reads) =
            answer_all(vec![line(INITIALIZE), line(INITIALIZED), ping(2), ping(3)]);
        assert_eq!(ids, [1, 2, 3]);
        assert_eq!(clock_reads, 1);
    }

    #[test]
    fn a_batch_stops_growing_at_its_byte_cap() {
        let big = || Line::Complete(vec![b'x'; MAX_BATCH_BYTES * 2 / 3]);
        let (ids, clock_reads) = answer_all(vec![big(), big(), ping(2)]);
        assert_eq!(ids.len(), 3, "each line is answered: {ids:?}");
        assert_eq!(clock_reads, 2, "the third line waits for a second batch");
    }

    #[test]
    fn a_request_cancelled_in_the_same_batch_gets_no_answer() {
        let call = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fixture_status","arguments":{}}}"#;
        let cancel =
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}"#;
        let (ids, _) = answer_all(vec![
            line(INITIALIZE),
            line(INITIALIZED),
            line(call),
            line(cancel),
            ping(6),
        ]);
        assert_eq!(ids, [1, 6]);
    }

    #[test]
    fn an_oversized_line_is_answered_where_it_stood_in_the_batch() {
        let prefix = br#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"pad":"xxxx"#.to_vec();
        let (ids, _) = answer_all(vec![
            line(INITIALIZE),
            ping(2),
            Line::Oversized(prefix),
            ping(4),
        ]);
        assert_eq!(ids, [1, 2, 3, 4]);
    }

    #[test]
    fn every_answer_is_one_line_ending_in_a_newline() {
        let (sender, receiver) = mpsc::sync_channel(4);
        for line in [line(INITIALIZE), line("not json"), ping(2)] {
            sender.send(line).unwrap();
        }
        drop(sender);
        let mut output = Vec::new();
        answer_batches(
            &mut ferry_mcp_tools::fixture::server("demo"),
            &receiver,
            &mut output,
            || Timestamp::from_millis(0),
        )
        .unwrap();
        assert!(output.ends_with(b"\n"));
        assert_eq!(output.iter().filter(|&&byte| byte == b'\n').count(), 3);
    }

    #[test]
    fn the_reader_stops_when_the_loop_is_gone() {
        let (sender, receiver) = mpsc::sync_channel(1);
        drop(receiver);
        let mut input = &b"a\nb\nc\n"[..];
        read_lines(&mut input, sender).unwrap();
        // The first line could not be handed on: nothing after it was read.
        assert_eq!(input, b"b\nc\n");
    }
}
