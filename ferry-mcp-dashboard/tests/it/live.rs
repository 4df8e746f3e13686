//! The served page: the fixed headers on a real socket, a foreign Host refused there, and a
//! change in the channel reaching an open event stream.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use ferry_mcp_core::channel::ops::talk::{self, PostRequest};

use crate::fixture::{Recorder, channel, config};

fn raw(port: u16, request: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn the_served_page_sends_the_strict_headers_refuses_a_foreign_host_and_streams_a_change() {
    let channel = channel();
    let (app, running) = ferry_mcp_dashboard::start(
        config(
            &channel,
            channel.home().clone(),
            true,
            std::sync::Arc::new(Recorder::default()),
        ),
        0,
    )
    .unwrap();
    let port = running.addr.port();
    assert!(running.addr.ip().is_loopback());
    let login = app.login_url();
    let target = login.split_once(&format!(":{port}")).unwrap().1;
    let answer = raw(
        port,
        &format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"),
    );
    assert!(answer.starts_with("HTTP/1.1 303"), "{answer}");
    for header in [
        "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        "X-Frame-Options: DENY",
        "Referrer-Policy: same-origin",
        "X-Content-Type-Options: nosniff",
    ] {
        assert!(answer.contains(header), "{header} in {answer}");
    }
    let cookie = answer
        .lines()
        .find_map(|line| line.strip_prefix("Set-Cookie: "))
        .unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();

    let foreign = raw(
        port,
        &format!(
            "GET / HTTP/1.1\r\nHost: rebound.example:{port}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert!(foreign.starts_with("HTTP/1.1 421"), "{foreign}");
    assert!(
        foreign.ends_with(
            "refused: the Host header is not this machine's loopback address and port\n"
        )
    );

    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(
        stream,
        "GET /p/demo/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\n\r\n"
    )
    .unwrap();
    let mut lines = BufReader::new(stream);
    let mut line = String::new();
    let mut head = String::new();
    while !line.starts_with("event: hello") {
        line.clear();
        lines.read_line(&mut line).unwrap();
        head.push_str(&line);
    }
    assert!(head.contains("Content-Type: text/event-stream"), "{head}");
    assert!(
        head.contains("Content-Security-Policy: default-src 'none'"),
        "{head}"
    );
    let mut lead = channel.agent_session("lead");
    let post = PostRequest {
        to: "all".into(),
        text: "news".into(),
        reply_to: None,
    };
    let posted = Instant::now();
    talk::post(&mut lead, &post, channel.now()).unwrap();
    loop {
        line.clear();
        lines.read_line(&mut line).unwrap();
        if line.starts_with("event: change") {
            break;
        }
    }
    // How soon is printed, not asserted: speed is measured by hand or in benches.
    eprintln!(
        "live: the stream said `change` {:?} after the write",
        posted.elapsed()
    );
    running.stop();
}
