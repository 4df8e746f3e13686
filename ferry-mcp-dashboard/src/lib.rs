//! `ferry dashboard`: the human's page for a fleet, served on this machine's loopback only.
//!
//! Why a crate of its own: the page is a second front door to the channel, beside the
//! commands, and it must hold the same rules: every view and change calls `channel::ops`, the
//! gate (`security`) stands before all of it, and the web stack (ADR 0022: `tiny_http` and
//! `maud`) stays out of the core and the tools. The binary gives it the state folder (with
//! the master key opened from the passphrase typed at start), the clock, and `ferry mcp
//! connect`'s functions (`connect::Connector`).
//!
//! - `http`: requests and answers as values, and the serving loop;
//! - `security`: the gate (loopback Host, one-time token, cookie, Origin, CSRF, headers);
//! - `app`: the routes; `views`: the pages; `actions`: the changes; `live`: the event streams;
//! - `form`: urlencoded fields; `connect`: the seam to `ferry mcp connect`.

mod actions;
pub mod app;
pub mod connect;
pub mod form;
pub mod http;
mod live;
pub mod security;
mod views;

pub use app::{App, Clock, Config, Outcome};
pub use connect::{AiApp, ConnectRequest, Connector};
pub use http::{Request, Response, Running};

use std::sync::Arc;

/// Binds 127.0.0.1:`port` (0: a free one), builds the page for `config` and serves it in a
/// thread. The URL to open is [`App::login_url`] of the returned app.
pub fn start(config: Config, port: u16) -> std::io::Result<(Arc<App>, Running)> {
    let server = http::bind(port)?;
    let app = Arc::new(App::new(config, http::port_of(&server)));
    let running = http::serve(server, app.clone())?;
    Ok((app, running))
}
