//! The page's routes: the gate first, then a view (GET) or an action (POST, then a redirect).
//!
//! Why its own module: this is the one place that decides which request reaches what. Every
//! request passes the gate (`security`) in the same order: a peer of this machine, a loopback
//! Host, then the visitor's cookie, and for a change its Origin and CSRF token. Views and
//! actions come after, and call only `channel::ops`.

use std::sync::Arc;

use ferry_mcp_core::channel::log::names::ProjectId;
use ferry_mcp_core::channel::machine::home::{Home, Unsealer};
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_core::time::Timestamp;
use zeroize::Zeroizing;

use crate::actions;
use crate::connect::Connector;
use crate::form::Fields;
use crate::http::{Method, Request, Response, event_stream_head};
use crate::live::Hub;
use crate::security::{Gate, Refusal};
use crate::views::{self, Assets};

/// The wall clock, as the binary reads it (the library never does).
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// What the page serves, and with what.
pub struct Config {
    /// The state folder; its unsealer holds the master keys opened at start (the passphrase
    /// the human typed in the terminal), and asks for no other.
    pub home: Home,
    /// The projects of the picker; the first is shown at `/`.
    pub projects: Vec<ProjectId>,
    /// Projects whose master key is open in memory (no passphrase needed in the page).
    pub unlocked: Vec<ProjectId>,
    /// This machine's name: the default agent name is `<app>-<machine>`.
    pub machine: String,
    pub clock: Clock,
    /// `ferry mcp connect`'s functions; without them the Connect view only explains.
    pub connector: Option<Arc<dyn Connector>>,
    /// How often the live watcher refreshes (ms).
    pub poll_ms: u64,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("projects", &self.projects)
            .field("unlocked", &self.unlocked)
            .field("machine", &self.machine)
            .finish_non_exhaustive()
    }
}

/// What a route gives: a page, or an event stream for the server to hand to a thread.
#[derive(Debug)]
pub enum Outcome {
    Page(Response),
    Events(ProjectId),
}

/// The page's state: its configuration, its gate and its live hub.
#[derive(Debug)]
pub struct App {
    pub(crate) config: Config,
    gate: Gate,
    hub: Arc<Hub>,
}

/// The visitor's request in a project: what views and actions need.
#[derive(Debug)]
pub(crate) struct Visit<'a> {
    pub app: &'a App,
    pub project: &'a ProjectId,
    pub csrf: Zeroizing<String>,
    pub flash: Option<String>,
    pub now: Timestamp,
}

impl Visit<'_> {
    /// A session for reading: the human's when the master key is here, else an observer's.
    pub fn read_session(&self) -> Result<Session, String> {
        let home = &self.app.config.home;
        Session::open(home, self.project, Actor::Master, self.now)
            .or_else(|_| Session::open(home, self.project, Actor::Observer, self.now))
            .map_err(|err| err.to_string())
    }

    /// Whether a change signed as the human needs the passphrase typed in the page.
    pub fn needs_passphrase(&self) -> bool {
        !self.app.config.unlocked.contains(self.project)
    }
}

impl App {
    /// The page for `config`, served on `port`.
    pub fn new(config: Config, port: u16) -> Self {
        let hub = Arc::new(Hub::new(config.poll_ms.max(50)));
        Self {
            config,
            gate: Gate::new(port),
            hub,
        }
    }

    /// The URL to print, with the one-time token.
    pub fn login_url(&self) -> String {
        self.gate.login_url()
    }

    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    pub(crate) fn now(&self) -> Timestamp {
        (self.config.clock)()
    }

    /// Ends the watchers and the event streams.
    pub fn shut_down(&self) {
        self.hub.stop();
    }

    /// Hands an event stream to a thread of its own (and starts the project's watcher).
    pub fn stream_events(&self, project: &ProjectId, writer: Box<dyn std::io::Write + Send>) {
        self.hub
            .watch(&self.config.home, project, &self.config.clock);
        self.hub.stream(writer, event_stream_head());
    }

    /// Answers one request.
    pub fn handle(&self, request: &Request) -> Outcome {
        match self.route(request) {
            Ok(outcome) => outcome,
            Err(refusal) => Outcome::Page(Response::refused(refusal)),
        }
    }

    fn route(&self, request: &Request) -> Result<Outcome, Refusal> {
        if !request.loopback {
            return Err(Refusal::NotLoopback);
        }
        self.gate.check_host(request.host.as_deref())?;
        let page = |response| Ok(Outcome::Page(response));
        match (request.method, request.path.as_str()) {
            (Method::Get, "/assets/style.css") => {
                return page(Response::asset("text/css; charset=utf-8", Assets::STYLE));
            }
            (Method::Get, "/assets/live.js") => {
                return page(Response::asset(
                    "text/javascript; charset=utf-8",
                    Assets::SCRIPT,
                ));
            }
            (Method::Get, "/login") => {
                let fields = Fields::parse(&request.query);
                let cookie = self.gate.exchange(fields.get("token").unwrap_or(""))?;
                let mut response = Response::redirect("/");
                response
                    .headers
                    .push(("Set-Cookie", Gate::set_cookie(&cookie)));
                return page(response);
            }
            (_, "/login") => return Err(Refusal::Method),
            _ => {}
        }
        let cookie = request.cookie.as_deref();
        let csrf = self.gate.visitor_csrf(cookie)?;
        let fields = match request.method {
            Method::Get => Fields::parse(&request.query),
            Method::Post => {
                self.gate.check_origin(request.origin.as_deref())?;
                let fields = Fields::parse(&String::from_utf8_lossy(&request.body));
                self.gate.check_csrf(cookie, fields.get("csrf"))?;
                fields
            }
            Method::Other => return Err(Refusal::Method),
        };
        let path = request.path.as_str();
        if path == "/" {
            return match self.config.projects.as_slice() {
                [only] => page(Response::redirect(&format!("/p/{only}/"))),
                _ => page(Response::html(200, views::picker(self))),
            };
        }
        let rest = path.strip_prefix("/p/").ok_or(Refusal::NotFound)?;
        let (id, rest) = rest.split_once('/').unwrap_or((rest, ""));
        let project = self
            .config
            .projects
            .iter()
            .find(|project| project.as_str() == id)
            .ok_or(Refusal::NotFound)?;
        let visit = Visit {
            app: self,
            project,
            // The page's script refetches with `live=1`: that look is not the visitor's,
            // and must not take the line left for the page the browser is about to load.
            flash: if request.method == Method::Get && rest != "events" && !fields.checked("live") {
                self.gate.take_flash(cookie)
            } else {
                None
            },
            csrf,
            now: self.now(),
        };
        let parts: Vec<&str> = rest.split('/').filter(|part| !part.is_empty()).collect();
        match request.method {
            Method::Get => {
                if parts.as_slice() == ["events"] {
                    return Ok(Outcome::Events(project.clone()));
                }
                let html = views::view(&visit, &parts, &fields).ok_or(Refusal::NotFound)?;
                page(Response::html(200, html))
            }
            Method::Post => {
                let (back, line) =
                    actions::act(&visit, &parts, &fields).ok_or(Refusal::NotFound)?;
                self.gate.set_flash(cookie, line);
                self.hub.bump();
                page(Response::redirect(&back))
            }
            Method::Other => Err(Refusal::Method),
        }
    }

    /// The state folder to sign as the human with: the one whose unsealer holds the key opened
    /// at start, or, when the form carries a passphrase, a copy that opens it with that
    /// passphrase for this one action (the key is dropped, and wiped, with the copy).
    pub(crate) fn master_home(&self, fields: &Fields) -> Home {
        match fields.get("passphrase").filter(|typed| !typed.is_empty()) {
            Some(typed) => {
                let typed = Zeroizing::new(typed.as_bytes().to_vec());
                self.config
                    .home
                    .clone()
                    .unsealing_with(Unsealer::new(move |_| Ok(typed.clone())))
            }
            None => self.config.home.clone(),
        }
    }
}
