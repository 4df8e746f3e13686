//! A loopback HTTPS server for tests of what is fetched over `https://` (release artifacts,
//! ADR 0020): `openssl s_server` on `127.0.0.1` and an ephemeral port, with a self-signed
//! certificate for `127.0.0.1` made when the server starts. A client trusts it only when it is
//! handed [`Served::roots`], the certificate's file; nothing leaves the machine.
//!
//! Why `openssl` and not a TLS crate: the product fetches `https://` with the system's `curl`
//! and carries no TLS crate, and a TLS crate built only for the tests would cost every clean
//! build its C and assembly (ring); the `openssl` command is on every machine that has `curl`
//! built on OpenSSL. Each path answers with a file holding a whole HTTP response (`s_server
//! -HTTP`), so a test can serve a body or a redirect.

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// What one path answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `200` with these bytes.
    Body(Vec<u8>),
    /// `302` to this URL.
    Redirect(String),
}

/// A running server; stopped when dropped.
#[derive(Debug)]
pub struct Served {
    /// `https://127.0.0.1:PORT/`, to which the caller adds a path.
    pub base: String,
    /// The PEM file of the server's certificate: the one root a client must trust for it.
    pub roots: PathBuf,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Served {
    /// The URL of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path.trim_start_matches('/'))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Serves each `(path, reply)` (a path is one plain file name) until dropped.
///
/// Panics (failing the test, never skipping it) when the `openssl` command is missing.
pub fn serve(replies: &[(&str, Reply)]) -> Served {
    let dir = tempfile::tempdir().expect("a folder for the server");
    let key = dir.path().join("key.pem");
    let roots = dir.path().join("cert.pem");
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:P-256", "-nodes", "-days", "1"])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&roots)
        .stdin(Stdio::null())
        .output()
        .expect("the https tests need the `openssl` command");
    assert!(
        made.status.success(),
        "openssl req: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    let site = dir.path().join("site");
    std::fs::create_dir(&site).expect("the site folder");
    for (path, reply) in replies {
        assert!(
            !path.is_empty() && !path.contains('/') && !path.starts_with('.'),
            "{path:?} is not a plain file name"
        );
        let response = match reply {
            Reply::Body(body) => {
                let mut response = format!(
                    "HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                )
                .into_bytes();
                response.extend_from_slice(body);
                response
            }
            Reply::Redirect(to) => {
                format!("HTTP/1.0 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\n\r\n")
                    .into_bytes()
            }
        };
        std::fs::write(site.join(path), response).expect("a reply's file");
    }
    let mut child = Command::new("openssl")
        .args(["s_server", "-accept", "127.0.0.1:0", "-HTTP"])
        .arg("-cert")
        .arg(&roots)
        .arg("-key")
        .arg(&key)
        .current_dir(&site)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the https tests need the `openssl` command");
    let mut stdout = BufReader::new(child.stdout.take().expect("its stdout"));
    let mut line = String::new();
    let port = loop {
        line.clear();
        let read = stdout
            .read_line(&mut line)
            .expect("openssl s_server's output");
        assert!(read > 0, "openssl s_server ended before it listened");
        if let Some(port) = line
            .trim_end()
            .strip_prefix("ACCEPT 127.0.0.1:")
            .and_then(|port| port.parse::<u16>().ok())
        {
            break port;
        }
    };
    // What it says of each request is read and dropped, so it never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    Served {
        base: format!("https://127.0.0.1:{port}/"),
        roots,
        child,
        _dir: dir,
    }
}
