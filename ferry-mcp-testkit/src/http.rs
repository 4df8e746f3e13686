//! A loopback HTTP server for tests of what is fetched (release artifacts, ADR 0020): it serves
//! fixed bytes for a fixed number of requests on `127.0.0.1` and an ephemeral port, then stops.
//! Nothing leaves the machine.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::thread::JoinHandle;

/// A server answering `requests` GETs with `200` and `body`, whatever the path.
#[derive(Debug)]
pub struct Served {
    /// `http://127.0.0.1:PORT/`, to which the caller adds a path.
    pub base: String,
    thread: Option<JoinHandle<usize>>,
}

impl Served {
    /// The URL of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path.trim_start_matches('/'))
    }

    /// Waits for the server to have answered all its requests; returns how many it answered.
    pub fn finish(mut self) -> usize {
        self.thread
            .take()
            .map_or(0, |thread| thread.join().expect("the loopback server ran"))
    }
}

/// Serves `body` to the next `requests` connections.
pub fn serve(body: Vec<u8>, requests: usize) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    let thread = std::thread::spawn(move || {
        let mut answered = 0;
        for stream in listener.incoming().take(requests) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("a stream clone"));
            let mut line = String::new();
            // The request's head, up to its blank line.
            while reader.read_line(&mut line).is_ok_and(|read| read > 0) {
                if line == "\r\n" || line == "\n" {
                    break;
                }
                line.clear();
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
            answered += 1;
        }
        answered
    });
    Served {
        base: format!("http://127.0.0.1:{port}/"),
        thread: Some(thread),
    }
}
