//! A page on a temporary channel: `lead` (orchestrator), `dev` (member), `newbie` (worker),
//! the master key here, and a logged-in visitor.

use std::sync::{Arc, Mutex};

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::machine::home::Home;
use ferry_mcp_core::channel::ops::asks::{self, RaiseRequest};
use ferry_mcp_core::time::Timestamp;
use ferry_mcp_dashboard::http::Method;
use ferry_mcp_dashboard::{App, Config, ConnectRequest, Connector, Outcome, Request, Response};
use ferry_mcp_testkit::temp_channel::TempChannel;

pub const PORT: u16 = 4765;

/// A connector that records what it was asked and says so.
#[derive(Debug, Default)]
pub struct Recorder(pub Mutex<Vec<ConnectRequest>>);

impl Connector for Recorder {
    fn connect(
        &self,
        _: &Home,
        _: &Home,
        request: &ConnectRequest,
        _: Timestamp,
    ) -> Result<String, String> {
        self.0.lock().unwrap().push(request.clone());
        Ok(format!("wrote the config of {}\n", request.name))
    }
}

pub struct Page {
    pub channel: TempChannel,
    pub app: App,
    pub cookie: String,
    pub connector: Arc<Recorder>,
}

pub fn channel() -> TempChannel {
    TempChannel::builder()
        .agent("lead", Level::Orchestrator)
        .agent("dev", Level::Member)
        .agent("newbie", Level::Worker)
        .build()
        .expect("a channel")
}

pub fn config(
    channel: &TempChannel,
    home: Home,
    unlocked: bool,
    connector: Arc<Recorder>,
) -> Config {
    let clock = channel.clock().clone();
    Config {
        home,
        projects: vec![channel.project().clone()],
        unlocked: if unlocked {
            vec![channel.project().clone()]
        } else {
            Vec::new()
        },
        machine: "laptop".into(),
        clock: Arc::new(move || clock.now()),
        connector: Some(connector),
        poll_ms: 50,
    }
}

impl Page {
    pub fn new() -> Self {
        Self::on(channel(), true)
    }

    /// A page on `channel`; `unlocked`: the master key counts as opened at start.
    pub fn on(channel: TempChannel, unlocked: bool) -> Self {
        let connector = Arc::new(Recorder::default());
        let app = App::new(
            config(
                &channel,
                channel.home().clone(),
                unlocked,
                connector.clone(),
            ),
            PORT,
        );
        let cookie = login(&app);
        Self {
            channel,
            app,
            cookie,
            connector,
        }
    }

    pub fn send(&self, request: Request) -> Response {
        match self.app.handle(&request) {
            Outcome::Page(response) => response,
            Outcome::Events(_) => panic!("an event stream where a page was expected"),
        }
    }

    pub fn get(&self, target: &str) -> Response {
        self.send(Request::get(target, PORT).with_cookie(&self.cookie))
    }

    /// The CSRF token the page's forms carry.
    pub fn csrf(&self) -> String {
        let page = self.get("/p/demo/").text();
        let at = page
            .find("name=\"csrf\" value=\"")
            .expect("a form with a csrf field")
            + 19;
        page[at..at + 64].to_owned()
    }

    /// Posts a form (with the visitor's CSRF token) and follows the redirect: the status of
    /// the POST, and the page it led to.
    pub fn post(&self, path: &str, body: &str) -> (Response, String) {
        let body = format!("csrf={}&{body}", self.csrf());
        let response = self.send(Request::post(path, PORT, &body).with_cookie(&self.cookie));
        assert_eq!(response.status, 303, "{path}: {}", response.text());
        let to = response.header("Location").expect("a redirect").to_owned();
        let page = self.get(&to);
        assert_eq!(page.status, 200, "{to}");
        (response, page.text())
    }

    /// Raises an ask as `dev`; its id.
    pub fn ask(&self, title: &str) -> String {
        let mut session = self.channel.agent_session("dev");
        let request = RaiseRequest {
            title: title.into(),
            recommendation: "merge it".into(),
            reasoning: "the tests pass".into(),
        };
        asks::raise(&mut session, &request, self.channel.now()).expect("an ask")
    }
}

/// Exchanges the app's one-time token for the cookie (`name=value`).
pub fn login(app: &App) -> String {
    let url = app.login_url();
    let target = url
        .split_once(&format!(":{PORT}"))
        .expect("the port in the URL")
        .1;
    let response = match app.handle(&Request::get(target, PORT)) {
        Outcome::Page(response) => response,
        Outcome::Events(_) => panic!("login gave events"),
    };
    assert_eq!(response.status, 303);
    let cookie = response.header("Set-Cookie").expect("a cookie");
    cookie.split(';').next().unwrap().to_owned()
}

/// A request of any method with this page's Host and Origin.
pub fn request(method: Method, target: &str, body: &str) -> Request {
    let mut request = Request::post(target, PORT, body);
    request.method = method;
    request
}
