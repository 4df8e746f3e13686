//! Where the master key's passphrase comes from: the terminal, or a pipe the caller names.
//!
//! Why its own module: this is the line between the human and the agents. Agents run as the
//! same OS user as the human and can run `ferry` from a shell tool, read every file the human
//! can and see the environment they were started with. So the passphrase is never taken from
//! an argument (process lists, shell history), an environment variable or a file: it is asked
//! on `/dev/tty`, with echo off, or read from a pipe or socket given explicitly with
//! `--passphrase-fd N` (for scripts and tests; a regular file is refused). ADR 0017 says why
//! the pipe is allowed while a terminal exists too.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::FileTypeExt as _;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ferry_mcp_core::channel::machine::home::Unsealer;
use zeroize::Zeroizing;

/// The longest passphrase read.
const MAX_LEN: usize = 1024;

/// An unsealer that asks for a project's master key passphrase when a command first needs the
/// key: from the pipe `fd` when given, else on the terminal.
pub fn unsealer(fd: Option<i32>) -> Unsealer {
    Unsealer::new(move |project| {
        read(
            fd,
            &format!(
                "ferry: passphrase of the master key of {project} (this command signs as the human): "
            ),
        )
    })
}

/// An unsealer for a process that lives on (`ferry dashboard`): it asks for the passphrase
/// (from the pipe `fd`, else the terminal) only while `asking` holds, that is while the
/// process starts; later the key it opened then is the only one it has, and a page that wants
/// another carries its own passphrase for one action.
pub fn unsealer_at_start(fd: Option<i32>, asking: Arc<AtomicBool>) -> Unsealer {
    Unsealer::new(move |project| {
        if !asking.load(Ordering::SeqCst) {
            return Err(
                "the master key was not opened when the dashboard started: type its passphrase in the page".into(),
            );
        }
        read(
            fd,
            &format!(
                "ferry: passphrase of the master key of {project} (the page signs as the human; press Enter alone to type it in the page instead): "
            ),
        )
    })
}

/// A passphrase for sealing a new master key: typed twice on the terminal (they must match),
/// or read once from the pipe `fd`.
pub fn new_passphrase(fd: Option<i32>, what: &str) -> anyhow::Result<Zeroizing<Vec<u8>>> {
    let first =
        read(fd, &format!("ferry: a passphrase to seal {what}: ")).map_err(anyhow::Error::msg)?;
    if fd.is_none() {
        let again = read(None, "ferry: the same passphrase again: ").map_err(anyhow::Error::msg)?;
        if *again != *first {
            anyhow::bail!("the two passphrases differ: nothing was sealed");
        }
    }
    Ok(first)
}

/// One passphrase line: from the pipe `fd`, else typed on the terminal after `prompt`.
fn read(fd: Option<i32>, prompt: &str) -> Result<Zeroizing<Vec<u8>>, String> {
    let line = match fd {
        Some(fd) => read_line(&mut from_pipe(fd)?)?,
        None => from_terminal(prompt)?,
    };
    if line.is_empty() {
        return Err("an empty passphrase".into());
    }
    Ok(line)
}

fn from_pipe(fd: i32) -> Result<File, String> {
    let path = format!("/dev/fd/{fd}");
    let kind = std::fs::metadata(&path)
        .map_err(|err| format!("--passphrase-fd {fd}: {err}"))?
        .file_type();
    if !(kind.is_fifo() || kind.is_socket()) {
        return Err(format!(
            "--passphrase-fd {fd} is not a pipe: a passphrase is never read from a file"
        ));
    }
    File::open(&path).map_err(|err| format!("--passphrase-fd {fd}: {err}"))
}

fn from_terminal(prompt: &str) -> Result<Zeroizing<Vec<u8>>, String> {
    let mut tty = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .map_err(|_| {
            "no terminal to ask for the master key's passphrase: run this in a terminal, or give the passphrase through a pipe with --passphrase-fd N".to_owned()
        })?;
    tty.write_all(prompt.as_bytes())
        .map_err(|err| format!("writing to the terminal: {err}"))?;
    let control = tty
        .try_clone()
        .map_err(|err| format!("the terminal: {err}"))?;
    let echo = |setting: &str| {
        let input = control.try_clone().map(Stdio::from);
        input.and_then(|input| {
            Command::new("stty")
                .arg(setting)
                .stdin(input)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
        })
    };
    // Without stty the passphrase would show as it is typed: refuse rather than echo it.
    match echo("-echo") {
        Ok(status) if status.success() => {}
        _ => return Err("cannot turn the terminal's echo off (stty): nothing was read".into()),
    }
    let line = read_line(&mut tty);
    let _ = echo("echo");
    let _ = tty.write_all(b"\n");
    line
}

/// Reads up to a line ending, a byte at a time (nothing after the line is consumed).
fn read_line(from: &mut File) -> Result<Zeroizing<Vec<u8>>, String> {
    let mut line = Zeroizing::new(Vec::new());
    let mut byte = [0u8; 1];
    loop {
        match from.read(&mut byte) {
            Ok(0) => break,
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) if line.len() >= MAX_LEN => return Err("the passphrase is too long".into()),
            Ok(_) => line.push(byte[0]),
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(format!("reading the passphrase: {err}")),
        }
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(line)
}
