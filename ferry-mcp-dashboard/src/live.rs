//! Live pages: a change counter fed by the channel's watch, and the event streams that carry it.
//!
//! Why its own module: a page must show a change within a second without reloading. One
//! watcher thread per project holds a watched session (inotify through the reader's watch,
//! and a look everywhere at least once a minute) and refreshes it every
//! [`Hub::poll_ms`] milliseconds; what it folds bumps the counter, and every open page's
//! stream (a thread each: a local page has few) sends one `change` event, on which the page's
//! script fetches itself again. The page's own changes bump it too, so other tabs follow.

use std::collections::HashSet;
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use ferry_mcp_core::channel::log::names::ProjectId;
use ferry_mcp_core::channel::machine::home::Home;
use ferry_mcp_core::channel::session::{Actor, Session};
use ferry_mcp_core::time::Timestamp;

use crate::app::Clock;

/// A comment line is sent on a quiet stream this often, so a dead peer is noticed.
const KEEPALIVE: Duration = Duration::from_secs(15);

#[derive(Debug, Default)]
struct Shared {
    counter: u64,
    watched: HashSet<ProjectId>,
    stopping: bool,
}

/// The change counter, the projects watched, and the switch that ends every thread.
#[derive(Debug)]
pub struct Hub {
    shared: Mutex<Shared>,
    changed: Condvar,
    poll_ms: u64,
}

impl Hub {
    pub fn new(poll_ms: u64) -> Self {
        Self {
            shared: Mutex::default(),
            changed: Condvar::new(),
            poll_ms,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Something changed: every stream sends an event.
    pub fn bump(&self) {
        self.lock().counter += 1;
        self.changed.notify_all();
    }

    pub fn counter(&self) -> u64 {
        self.lock().counter
    }

    /// Ends the watchers and the streams.
    pub fn stop(&self) {
        self.lock().stopping = true;
        self.changed.notify_all();
    }

    fn stopping(&self) -> bool {
        self.lock().stopping
    }

    /// Starts `project`'s watcher unless it runs already.
    pub fn watch(self: &Arc<Self>, home: &Home, project: &ProjectId, clock: &Clock) {
        if !self.lock().watched.insert(project.clone()) {
            return;
        }
        let (hub, home, project, clock) =
            (self.clone(), home.clone(), project.clone(), clock.clone());
        let spawned = std::thread::Builder::new()
            .name("dashboard-watch".into())
            .spawn(move || hub.run_watcher(&home, &project, &clock));
        if spawned.is_err() {
            self.lock().watched.clear();
        }
    }

    fn run_watcher(&self, home: &Home, project: &ProjectId, clock: &Clock) {
        let Ok(mut session) = Session::open(home, project, Actor::Observer, clock()) else {
            self.lock().watched.remove(project);
            return;
        };
        session.watch_channel();
        let mut paused = home.pause_state().ok().flatten().is_some();
        while !self.stopping() {
            std::thread::sleep(Duration::from_millis(self.poll_ms));
            let now: Timestamp = clock();
            let folded = session.refresh(now);
            let paused_now = home.pause_state().ok().flatten().is_some();
            if folded > 0 || paused_now != paused {
                paused = paused_now;
                self.bump();
            }
        }
    }

    /// Writes `head`, then one event per change until the peer goes or the hub stops, in a
    /// thread of its own.
    pub fn stream(self: &Arc<Self>, mut writer: Box<dyn Write + Send>, head: String) {
        let hub = self.clone();
        let _ = std::thread::Builder::new()
            .name("dashboard-events".into())
            .spawn(move || {
                let mut seen = hub.counter();
                let hello = format!("{head}retry: 1000\n\nevent: hello\ndata: {seen}\n\n");
                if writer
                    .write_all(hello.as_bytes())
                    .and_then(|()| writer.flush())
                    .is_err()
                {
                    return;
                }
                loop {
                    let line = {
                        let shared = hub.lock();
                        let (shared, _) = hub
                            .changed
                            .wait_timeout_while(shared, KEEPALIVE, |shared| {
                                shared.counter == seen && !shared.stopping
                            })
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        if shared.stopping {
                            return;
                        }
                        if shared.counter == seen {
                            ": still here\n\n".to_owned()
                        } else {
                            seen = shared.counter;
                            format!("event: change\ndata: {seen}\n\n")
                        }
                    };
                    if writer
                        .write_all(line.as_bytes())
                        .and_then(|()| writer.flush())
                        .is_err()
                    {
                        return;
                    }
                }
            });
    }
}
