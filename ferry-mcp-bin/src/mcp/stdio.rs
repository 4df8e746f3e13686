//! The stdio loop: the only IO and the only clock read of `ferry mcp serve`.
//!
//! Everything the loop acts on arrives in one inbox, in the order it happened: the lines a
//! reader thread splits stdin into (capped), the answers of calls that answer later (a
//! gateway's, run on threads of their own: ADR 0027), and the end of input. The main loop
//! takes everything already there as one batch (so a `notifications/cancelled` can drop a
//! request queued beside it), reads the wall clock once, hands the lines to the core, gives it
//! the later answers, and writes each answer as one line, flushing after every batch: it is
//! the one writer of stdout, so lines never interleave. The reader may run ahead of the loop by
//! [`READ_AHEAD_LINES`] lines only, so a client that writes faster than we answer is held back
//! instead of filling memory; answers are never held back (a call's thread never waits on the
//! loop). At end of input it answers what it has read, waits for the calls still running to
//! answer (each within its own timeout), and returns.

use std::io::{self, Write};
use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;

use anyhow::Context as _;
use ferry_mcp_core::protocol::{MAX_LINE_BYTES, Server};
use ferry_mcp_core::shape::ToolOutcome;
use ferry_mcp_core::time::Timestamp;
use ferry_mcp_core::tool::Ticket;

use super::lines::{CappedLines, Line};

/// Lines read ahead of the core at most; with the line cap this bounds memory to ~16 MiB.
const READ_AHEAD_LINES: usize = 16;
/// Lines handed to the core at once at most, so one answer flush never waits on a flood.
const MAX_BATCH_LINES: usize = 256;
/// A batch stops growing once it holds this many bytes, so it adds at most ~2 MiB to memory.
const MAX_BATCH_BYTES: usize = MAX_LINE_BYTES;

/// What the loop acts on, in the order it happened.
#[derive(Debug)]
pub enum Input {
    /// A line of stdin.
    Line(Line),
    /// The answer of a call that answered later.
    Answered(Ticket, ToolOutcome),
    /// Stdin ended (or could not be read).
    End(io::Result<()>),
}

/// Where a call that answers later sends its answer (cloned into each such tool).
#[derive(Debug, Clone)]
pub struct Answers(Sender<Input>);

impl Answers {
    /// Hands the answer of the call `ticket` to the loop (the core writes it, or the array of
    /// the batch it completes). Never blocks: a call's thread must never wait on the loop.
    pub fn give(&self, ticket: Ticket, outcome: ToolOutcome) {
        // The loop is gone only when serving ended: nobody is left to answer.
        let _ = self.0.send(Input::Answered(ticket, outcome));
    }
}

/// The loop's inbox, and the handle calls answer through.
#[derive(Debug)]
pub struct Inbox {
    sender: Sender<Input>,
    receiver: Receiver<Input>,
}

/// A new inbox and its [`Answers`].
pub fn inbox() -> (Answers, Inbox) {
    let (sender, receiver) = mpsc::channel();
    (Answers(sender.clone()), Inbox { sender, receiver })
}

/// How many lines the reader has handed on that the loop has not taken yet: the reader waits
/// while [`READ_AHEAD_LINES`] are.
#[derive(Debug, Default)]
struct ReadAhead {
    lines: Mutex<usize>,
    taken: Condvar,
}

impl ReadAhead {
    fn reserve(&self) {
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        while *lines >= READ_AHEAD_LINES {
            lines = self
                .taken
                .wait(lines)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *lines += 1;
    }

    fn release(&self) {
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        *lines = lines.saturating_sub(1);
        self.taken.notify_one();
    }
}

/// Serves stdin to stdout until end of input and the last call's answer. A closed stdout (the
/// client went away) ends serving quietly: nobody is left to answer.
pub fn serve_stdio(server: &mut Server, inbox: Inbox) -> anyhow::Result<()> {
    let read_ahead = Arc::new(ReadAhead::default());
    let sender = inbox.sender.clone();
    let reading = Arc::clone(&read_ahead);
    thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            let read = std::panic::catch_unwind(AssertUnwindSafe(|| {
                read_lines(io::stdin().lock(), &sender, &reading);
            }));
            // The loop waits for the end of input: a reader that died must still say so.
            if read.is_err() {
                let _ = sender.send(Input::End(Err(io::Error::other("the stdin reader failed"))));
            }
        })
        .context("cannot start the stdin reader")?;
    let stdout = io::stdout();
    match answer_inputs(
        server,
        &inbox.receiver,
        &read_ahead,
        &mut stdout.lock(),
        wall_clock,
    ) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(err)) => Err(err).context("reading stdin failed"),
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => {
            eprintln!("ferry mcp serve: stdout closed, stopping");
            Ok(())
        }
        Err(err) => Err(err).context("writing stdout failed"),
    }
}

/// Reads lines into the inbox until end of input (then [`Input::End`]) or until the loop is
/// gone.
fn read_lines(input: impl io::BufRead, sender: &Sender<Input>, read_ahead: &ReadAhead) {
    let mut lines = CappedLines::new(input, MAX_LINE_BYTES);
    let end = loop {
        match lines.next_line() {
            Ok(Some(line)) => {
                read_ahead.reserve();
                if sender.send(Input::Line(line)).is_err() {
                    return;
                }
            }
            Ok(None) => break Ok(()),
            Err(err) => break Err(err),
        }
    };
    let _ = sender.send(Input::End(end));
}

/// Answers what arrives in the inbox until stdin ended and no call is left to answer. The
/// outer error is writing's, the inner one reading's.
fn answer_inputs(
    server: &mut Server,
    receiver: &Receiver<Input>,
    read_ahead: &ReadAhead,
    output: &mut impl Write,
    mut clock: impl FnMut() -> Timestamp,
) -> io::Result<io::Result<()>> {
    let mut ended = None;
    while ended.is_none() || server.pending_calls() > 0 {
        // The inbox's own sender lives as long as the loop: this waits, never fails.
        let Ok(first) = receiver.recv() else {
            break;
        };
        let mut batch = vec![first];
        let mut lines = 0;
        let mut bytes = 0;
        loop {
            if let Some(Input::Line(line)) = batch.last() {
                read_ahead.release();
                lines += 1;
                bytes += line.len();
            }
            if lines >= MAX_BATCH_LINES || bytes >= MAX_BATCH_BYTES {
                break;
            }
            match receiver.try_recv() {
                Ok(input) => batch.push(input),
                Err(_) => break,
            }
        }
        let now = clock();
        let mut run = Vec::new();
        let mut answers = Vec::new();
        for input in batch {
            match input {
                Input::Line(line) => run.push(line),
                Input::Answered(ticket, outcome) => {
                    answers.extend(answer_batch(server, &std::mem::take(&mut run), now));
                    answers.extend(server.complete(ticket, &outcome));
                }
                Input::End(result) => ended = Some(result),
            }
        }
        answers.extend(answer_batch(server, &run, now));
        for answer in answers {
            output.write_all(answer.as_bytes())?;
            output.write_all(b"\n")?;
        }
        output.flush()?;
        // Once the answers are out: keep what the calls verified.
        server.channel_mut().flush(now);
    }
    Ok(ended.unwrap_or(Ok(())))
}

/// The answers to one batch of lines, in input order. Runs of complete lines go to the core
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
        let (_, inbox) = inbox();
        for line in lines {
            inbox.sender.send(Input::Line(line)).unwrap();
        }
        inbox.sender.send(Input::End(Ok(()))).unwrap();
        let mut server = ferry_mcp_tools::fixture::server("demo");
        let mut output = Vec::new();
        let mut clock_reads = 0;
        answer_inputs(
            &mut server,
            &inbox.receiver,
            &ReadAhead::default(),
            &mut output,
            || {
                clock_reads += 1;
                Timestamp::from_millis(1_000)
            },
        )
        .unwrap()
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
        let (_, inbox) = inbox();
        for line in [line(INITIALIZE), line("not json"), ping(2)] {
            inbox.sender.send(Input::Line(line)).unwrap();
        }
        inbox.sender.send(Input::End(Ok(()))).unwrap();
        let mut output = Vec::new();
        answer_inputs(
            &mut ferry_mcp_tools::fixture::server("demo"),
            &inbox.receiver,
            &ReadAhead::default(),
            &mut output,
            || Timestamp::from_millis(0),
        )
        .unwrap()
        .unwrap();
        assert!(output.ends_with(b"\n"));
        assert_eq!(output.iter().filter(|&&byte| byte == b'\n').count(), 3);
    }

    #[test]
    fn the_reader_stops_when_the_loop_is_gone() {
        let (sender, receiver) = mpsc::channel();
        drop(receiver);
        let mut input = &b"a\nb\nc\n"[..];
        read_lines(&mut input, &sender, &ReadAhead::default());
        // The first line could not be handed on: nothing after it was read.
        assert_eq!(input, b"b\nc\n");
    }
}
