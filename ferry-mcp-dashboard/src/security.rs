//! Who may use the page: the gate every request passes before any view or action runs.
//!
//! Why its own module: the page signs as the human, and every agent on this machine runs as the
//! same OS user and can reach loopback. So the page trusts nothing a process can forge:
//! - the Host must be a loopback name with this port (a DNS-rebinding page gets nothing);
//! - the one-time token of the printed URL is exchanged, once, for an HttpOnly,
//!   SameSite=Strict cookie that no script and no other site can read or send;
//! - every change (POST) carries the visitor's CSRF token and an Origin of this server.
//!
//! Refusals are typed, each with its status and a short text, and say nothing of the tokens.

use std::sync::Mutex;

use zeroize::Zeroizing;

/// The cookie that carries a visitor's session.
pub const COOKIE: &str = "ferry_dashboard";

/// Why a request was refused. One variant per cause; [`Refusal::status`] is its HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("refused: the Host header is not this machine's loopback address and port")]
    ForeignHost,
    #[error("refused: a change must come from this page (its Origin)")]
    ForeignOrigin,
    #[error("refused: open the link `ferry dashboard` printed")]
    NoSession,
    #[error("refused: the form's token does not match this page; reload it")]
    BadCsrf,
    #[error("refused: this link is not valid or was used already; start `ferry dashboard` again")]
    BadToken,
    #[error("refused: only this machine may connect")]
    NotLoopback,
    #[error("refused: the request is too large")]
    TooLarge,
    #[error("not found")]
    NotFound,
    #[error("refused: this address takes no such method")]
    Method,
}

impl Refusal {
    pub const fn status(self) -> u16 {
        match self {
            Self::ForeignHost => 421,
            Self::NoSession => 401,
            Self::ForeignOrigin | Self::BadCsrf | Self::BadToken | Self::NotLoopback => 403,
            Self::TooLarge => 413,
            Self::NotFound => 404,
            Self::Method => 405,
        }
    }
}

/// A visitor that exchanged the token: its cookie and its CSRF token, and the one line to show
/// after its last change (POST, redirect, GET).
#[derive(Debug)]
struct Visitor {
    cookie: Zeroizing<String>,
    csrf: Zeroizing<String>,
    flash: Option<String>,
}

/// The gate: the port it serves on, the one-time token (gone once used) and the visitors.
#[derive(Debug)]
pub struct Gate {
    port: u16,
    login: Mutex<Option<Zeroizing<String>>>,
    visitors: Mutex<Vec<Visitor>>,
}

/// 32 random bytes, hex: a token nobody can guess.
pub fn random_token() -> Zeroizing<String> {
    let mut bytes = Zeroizing::new([0u8; 32]);
    // Without randomness no token could be trusted: nothing is served.
    getrandom::fill(bytes.as_mut_slice()).expect("the system's random source");
    let mut out = Zeroizing::new(String::with_capacity(64));
    for byte in bytes.iter() {
        out.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(byte & 15)]));
    }
    out
}

/// Equal bytes, compared in a time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Gate {
    /// A gate for a server on `port`, with a fresh one-time token.
    pub fn new(port: u16) -> Self {
        Self {
            port,
            login: Mutex::new(Some(random_token())),
            visitors: Mutex::new(Vec::new()),
        }
    }

    pub const fn port(&self) -> u16 {
        self.port
    }

    /// The URL to print: this server with the one-time token (empty once it was used).
    pub fn login_url(&self) -> String {
        let login = self
            .login
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let token = login.as_ref().map_or("", |token| token.as_str());
        format!("http://127.0.0.1:{}/login?token={token}", self.port)
    }

    /// The origins this server's pages have.
    fn origins(&self) -> [String; 3] {
        let port = self.port;
        [
            format!("http://127.0.0.1:{port}"),
            format!("http://localhost:{port}"),
            format!("http://[::1]:{port}"),
        ]
    }

    /// The Host must name this machine's loopback with this port: a page of another site whose
    /// name was re-pointed at 127.0.0.1 (DNS rebinding) sends its own name.
    pub fn check_host(&self, host: Option<&str>) -> Result<(), Refusal> {
        let Some(host) = host else {
            return Err(Refusal::ForeignHost);
        };
        let host = host.trim().to_ascii_lowercase();
        let ok = self
            .origins()
            .iter()
            .any(|origin| origin.strip_prefix("http://") == Some(host.as_str()));
        if ok {
            Ok(())
        } else {
            Err(Refusal::ForeignHost)
        }
    }

    /// A change must say it comes from one of this server's pages. A browser always sends
    /// Origin with a form's POST; a request without one is not the page's.
    pub fn check_origin(&self, origin: Option<&str>) -> Result<(), Refusal> {
        let Some(origin) = origin else {
            return Err(Refusal::ForeignOrigin);
        };
        let origin = origin.trim().to_ascii_lowercase();
        if self.origins().contains(&origin) {
            Ok(())
        } else {
            Err(Refusal::ForeignOrigin)
        }
    }

    /// Exchanges the one-time token for a new visitor's cookie value. The token works once.
    pub fn exchange(&self, token: &str) -> Result<Zeroizing<String>, Refusal> {
        let mut login = self
            .login
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let valid = login
            .as_ref()
            .is_some_and(|expected| same(expected.as_bytes(), token.as_bytes()));
        if !valid {
            return Err(Refusal::BadToken);
        }
        *login = None;
        let cookie = random_token();
        self.visitors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(Visitor {
                cookie: cookie.clone(),
                csrf: random_token(),
                flash: None,
            });
        Ok(cookie)
    }

    /// The `Set-Cookie` value for a visitor's cookie: no script reads it, no other site sends
    /// it, and it lasts as long as the browser session.
    pub fn set_cookie(cookie: &str) -> String {
        format!("{COOKIE}={cookie}; HttpOnly; SameSite=Strict; Path=/")
    }

    /// The visitor's index from a `Cookie` header, or [`Refusal::NoSession`].
    fn find(&self, visitors: &[Visitor], header: Option<&str>) -> Result<usize, Refusal> {
        let header = header.ok_or(Refusal::NoSession)?;
        for pair in header.split(';') {
            let Some((name, value)) = pair.trim().split_once('=') else {
                continue;
            };
            if name != COOKIE {
                continue;
            }
            if let Some(at) = visitors
                .iter()
                .position(|visitor| same(visitor.cookie.as_bytes(), value.as_bytes()))
            {
                return Ok(at);
            }
        }
        Err(Refusal::NoSession)
    }

    /// The CSRF token of the visitor whose cookie `header` carries.
    pub fn visitor_csrf(&self, header: Option<&str>) -> Result<Zeroizing<String>, Refusal> {
        let visitors = self
            .visitors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let at = self.find(&visitors, header)?;
        Ok(visitors[at].csrf.clone())
    }

    /// Checks a change's CSRF token against the visitor's.
    pub fn check_csrf(&self, header: Option<&str>, given: Option<&str>) -> Result<(), Refusal> {
        let expected = self.visitor_csrf(header)?;
        match given {
            Some(given) if same(expected.as_bytes(), given.as_bytes()) => Ok(()),
            _ => Err(Refusal::BadCsrf),
        }
    }

    /// Keeps one line to show the visitor on its next page.
    pub fn set_flash(&self, header: Option<&str>, line: String) {
        let mut visitors = self
            .visitors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Ok(at) = self.find(&visitors, header) {
            visitors[at].flash = Some(line);
        }
    }

    /// The line kept for the visitor, once.
    pub fn take_flash(&self, header: Option<&str>) -> Option<String> {
        let mut visitors = self
            .visitors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let at = self.find(&visitors, header).ok()?;
        visitors[at].flash.take()
    }
}

/// The headers every answer carries: nothing loads from outside, nothing frames the page,
/// no referrer leaves it, nothing is cached. The referrer policy is `same-origin`, not
/// `no-referrer`: under the latter a browser sends `Origin: null` with a form's POST, and the
/// Origin check would refuse the page's own forms (the browser test found it).
pub const HEADERS: [(&str, &str); 8] = [
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
         connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),
    ("Cache-Control", "no-store"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
    (
        "Permissions-Policy",
        "camera=(), microphone=(), geolocation=()",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_used_once() {
        let gate = Gate::new(8000);
        let url = gate.login_url();
        let token = url.split("token=").nth(1).unwrap().to_owned();
        assert!(gate.exchange(&token).is_ok());
        assert_eq!(gate.exchange(&token), Err(Refusal::BadToken));
        assert!(gate.login_url().ends_with("token="));
    }

    #[test]
    fn hosts_other_than_loopback_with_the_port_are_refused() {
        let gate = Gate::new(8000);
        for host in [
            "127.0.0.1:8000",
            "localhost:8000",
            "[::1]:8000",
            "LOCALHOST:8000",
        ] {
            assert_eq!(gate.check_host(Some(host)), Ok(()), "{host}");
        }
        for host in [
            "evil.example:8000",
            "127.0.0.1",
            "127.0.0.1:8001",
            "localhost",
            "",
        ] {
            assert_eq!(
                gate.check_host(Some(host)),
                Err(Refusal::ForeignHost),
                "{host}"
            );
        }
        assert_eq!(gate.check_host(None), Err(Refusal::ForeignHost));
    }
}
