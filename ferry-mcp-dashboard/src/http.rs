//! The page's HTTP: requests and answers as plain values, and the loop that serves them.
//!
//! Why its own module: the routes, views and the gate are functions of a [`Request`] value, so
//! tests drive every route without a socket; only this module touches `tiny_http`. Requests
//! are answered one at a time on the serving thread (a page for one human needs no more);
//! each live page's event stream gets a thread of its own (`live`).

use std::io::Read as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::app::{App, Outcome};
use crate::security::{HEADERS, Refusal};

/// The largest body read (a form); more is refused.
pub const MAX_BODY: usize = 256 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Other,
}

/// What a route needs of a request.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    /// The path, without the query.
    pub path: String,
    pub query: String,
    pub host: Option<String>,
    pub origin: Option<String>,
    pub cookie: Option<String>,
    pub body: Vec<u8>,
    /// The peer is this machine.
    pub loopback: bool,
}

impl Request {
    /// A GET of `target` (path and query) from this machine, with the Host of `port`.
    pub fn get(target: &str, port: u16) -> Self {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        Self {
            method: Method::Get,
            path: path.to_owned(),
            query: query.to_owned(),
            host: Some(format!("127.0.0.1:{port}")),
            origin: None,
            cookie: None,
            body: Vec::new(),
            loopback: true,
        }
    }

    /// A POST of a form to `path`, with this server's Origin and Host.
    pub fn post(path: &str, port: u16, body: &str) -> Self {
        Self {
            method: Method::Post,
            origin: Some(format!("http://127.0.0.1:{port}")),
            body: body.as_bytes().to_vec(),
            ..Self::get(path, port)
        }
    }

    pub fn with_cookie(mut self, cookie: &str) -> Self {
        self.cookie = Some(cookie.to_owned());
        self
    }
}

/// An answer: status, headers beyond [`HEADERS`], body.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn html(status: u16, body: String) -> Self {
        Self {
            status,
            headers: vec![("Content-Type", "text/html; charset=utf-8".to_owned())],
            body: body.into_bytes(),
        }
    }

    pub fn asset(content_type: &'static str, body: &'static [u8]) -> Self {
        Self {
            status: 200,
            headers: vec![("Content-Type", content_type.to_owned())],
            body: body.to_vec(),
        }
    }

    /// 303 See Other: after a change, the browser GETs `to` (POST, redirect, GET).
    pub fn redirect(to: &str) -> Self {
        Self {
            status: 303,
            headers: vec![("Location", to.to_owned())],
            body: Vec::new(),
        }
    }

    pub fn refused(refusal: Refusal) -> Self {
        Self {
            status: refusal.status(),
            headers: vec![("Content-Type", "text/plain; charset=utf-8".to_owned())],
            body: format!("{refusal}\n").into_bytes(),
        }
    }

    /// A header's value (tests).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A running page: its address and a switch that stops it.
pub struct Running {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    server: Arc<tiny_http::Server>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Running {
    /// Stops serving and waits for the serving thread.
    pub fn stop(mut self) {
        self.halt();
    }

    /// Serves until the process ends.
    pub fn wait(mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Binds 127.0.0.1:`port` (0: any free port) and nothing else.
pub fn bind(port: u16) -> std::io::Result<tiny_http::Server> {
    tiny_http::Server::http(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .map_err(std::io::Error::other)
}

/// The port a bound server listens on.
pub fn port_of(server: &tiny_http::Server) -> u16 {
    server.server_addr().to_ip().map_or(0, |addr| addr.port())
}

/// Serves `app` on `server` in a thread of its own.
pub fn serve(server: tiny_http::Server, app: Arc<App>) -> std::io::Result<Running> {
    let addr = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| std::io::Error::other("not an IP listener"))?;
    let server = Arc::new(server);
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let (server, stop) = (server.clone(), stop.clone());
        std::thread::Builder::new()
            .name("dashboard".into())
            .spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match server.recv() {
                        Ok(request) => answer(&app, request),
                        Err(_) => break,
                    }
                }
                app.shut_down();
            })?
    };
    Ok(Running {
        addr,
        stop,
        server,
        thread: Some(thread),
    })
}

fn header(request: &tiny_http::Request, name: &str) -> Option<String> {
    request
        .headers()
        .iter()
        .find(|header| header.field.as_str().as_str().eq_ignore_ascii_case(name))
        .map(|header| header.value.as_str().to_owned())
}

fn answer(app: &Arc<App>, mut request: tiny_http::Request) {
    let method = match request.method() {
        tiny_http::Method::Get => Method::Get,
        tiny_http::Method::Post => Method::Post,
        _ => Method::Other,
    };
    let (path, query) = {
        let url = request.url();
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        (path.to_owned(), query.to_owned())
    };
    let mut body = Vec::new();
    let too_large = request.body_length().is_some_and(|len| len > MAX_BODY)
        || request
            .as_reader()
            .take(MAX_BODY as u64 + 1)
            .read_to_end(&mut body)
            .is_err()
        || body.len() > MAX_BODY;
    let loopback = request
        .remote_addr()
        .is_some_and(|addr| addr.ip().is_loopback());
    let ours = Request {
        method,
        path,
        query,
        host: header(&request, "Host"),
        origin: header(&request, "Origin"),
        cookie: header(&request, "Cookie"),
        body,
        loopback,
    };
    let outcome = if too_large {
        Outcome::Page(Response::refused(Refusal::TooLarge))
    } else {
        app.handle(&ours)
    };
    match outcome {
        Outcome::Page(response) => {
            let _ = request.respond(to_tiny(response));
        }
        Outcome::Events(project) => {
            let writer = request.into_writer();
            app.stream_events(&project, writer);
        }
    }
}

fn to_tiny(response: Response) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let mut out = tiny_http::Response::from_data(response.body).with_status_code(response.status);
    let fixed = HEADERS
        .iter()
        .map(|(name, value)| (*name, (*value).to_owned()));
    for (name, value) in fixed.chain(response.headers) {
        if let Ok(header) = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
            out.add_header(header);
        }
    }
    out
}

/// The raw head of an event stream (written by hand: the stream has no length).
pub fn event_stream_head() -> String {
    let mut head =
        String::from("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n");
    for (name, value) in HEADERS {
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head
}
