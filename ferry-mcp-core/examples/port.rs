//! An embedder serving ferry's core tools over a channel of its own, through the port.
//!
//! The protocol, the registry and the core tools reach the channel only through
//! `ferry_mcp_core::port`: here a board of two orders and a list of messages held in memory
//! stands in for the signed channel folder. It serves what it holds (the board, claims, talk) and
//! leaves the rest to the port's defaults, which answer `unsupported`.
//!
//! Run: `cargo run -p ferry-mcp-core --example port`

#![allow(clippy::print_stdout, reason = "an example shows its output")]

use ferry_mcp_core::channel::fold::levels::Operation;
use ferry_mcp_core::channel::fold::state::orders::OrderState;
use ferry_mcp_core::channel::fold::state::since::Since;
use ferry_mcp_core::channel::log::names::AgentName;
use ferry_mcp_core::channel::ops::OpsError;
use ferry_mcp_core::channel::ops::orders::{
    ClaimOutcome, ListRequest, ListedOrder, OrderList, OrderRow, OrdersError,
};
use ferry_mcp_core::channel::ops::talk::{
    MessageView, PostRequest, ReadRequest, ReadResult, TalkError,
};
use ferry_mcp_core::port::{
    Asks, Channel, ChannelAccess, Fleet, Orders, Primary, Seat, Talk, Unavailable, Updates,
};
use ferry_mcp_core::protocol::{Server, ServerConfig};
use ferry_mcp_core::registry::{Registry, Selection};
use ferry_mcp_core::time::Timestamp;
use serde_json::Value;

/// What the embedder keeps: its own board and talk, in memory.
#[derive(Debug)]
struct InMemory {
    me: AgentName,
    orders: Vec<OrderRow>,
    messages: Vec<MessageView>,
    /// How many messages `me` has read.
    read: usize,
}

impl Seat for InMemory {
    fn me(&self) -> Option<AgentName> {
        Some(self.me.clone())
    }
    fn machine(&self) -> String {
        "in-memory".to_owned()
    }
    fn authorize(&self, _operation: Operation, _now: Timestamp) -> Result<(), OpsError> {
        Ok(())
    }
    fn refresh(&mut self, _now: Timestamp) -> u64 {
        0
    }
    fn note_alive(&mut self, _now: Timestamp) {}
}

impl Orders for InMemory {
    fn list_orders(
        &mut self,
        request: &ListRequest,
        _now: Timestamp,
    ) -> Result<OrderList, OrdersError> {
        let rows: Vec<ListedOrder> = (1..)
            .zip(&self.orders)
            .map(|(changed, row)| ListedOrder {
                changed,
                row: row.clone(),
            })
            .take(request.limit)
            .collect();
        let more = rows.len() < self.orders.len();
        Ok(OrderList::new(rows, more))
    }

    fn claim(&mut self, id: &str, _now: Timestamp) -> Result<ClaimOutcome, OrdersError> {
        let Some(row) = self.orders.iter_mut().find(|row| row.id == id) else {
            return Err(OrdersError::UnknownOrder(id.to_owned()));
        };
        if let Some(holder) = &row.holder {
            return Ok(ClaimOutcome::LostRace {
                id: id.to_owned(),
                holder: holder.clone(),
            });
        }
        row.holder = Some(self.me.clone());
        row.state = OrderState::Claimed;
        Ok(ClaimOutcome::Claimed {
            id: id.to_owned(),
            state: row.state,
        })
    }
}

impl Talk for InMemory {
    fn post(&mut self, request: &PostRequest, now: Timestamp) -> Result<String, TalkError> {
        let id = format!("{}-{}", self.me, self.messages.len() + 1);
        self.messages.push(MessageView {
            id: id.clone(),
            from: self.me.clone(),
            to: request.to.clone(),
            text: request.text.clone(),
            long: false,
            reply_to: request.reply_to.clone(),
            time: now,
            void: None,
        });
        Ok(id)
    }

    fn read(
        &mut self,
        request: &ReadRequest,
        fits: &mut dyn FnMut(&MessageView) -> bool,
        _now: Timestamp,
    ) -> Result<ReadResult, TalkError> {
        let mut messages = Vec::new();
        for message in self.messages.iter().skip(self.read).take(request.limit) {
            if message.from == self.me || !fits(message) {
                continue;
            }
            messages.push(message.clone());
        }
        if !request.peek {
            self.read = self.messages.len();
        }
        Ok(ReadResult {
            messages,
            more: false,
            marked: !request.peek,
            unmarked: request.peek.then_some("peek"),
            next: Since {
                generation: 0,
                counter: self.read as u64,
            },
            reset: false,
            sent: Vec::new(),
        })
    }
}

// What this channel does not hold: the port's defaults answer `unsupported`.
impl Primary for InMemory {}
impl Asks for InMemory {}
impl Fleet for InMemory {}
impl Updates for InMemory {}

/// The server reaches the channel through the port only.
struct Embedded(InMemory);

impl ChannelAccess for Embedded {
    fn channel(&mut self, _now: Timestamp) -> Result<&mut dyn Channel, Unavailable> {
        Ok(&mut self.0)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ada = AgentName::parse("ada")?;
    let bob = AgentName::parse("bob")?;
    let row = |id: &str, title: &str| OrderRow {
        id: id.to_owned(),
        title: title.to_owned(),
        state: OrderState::Open,
        holder: None,
        scope: None,
    };
    let channel = InMemory {
        me: ada,
        orders: vec![
            row("lead-1", "Fix the login page"),
            row("lead-2", "Write the changelog"),
        ],
        messages: vec![MessageView {
            id: "bob-1".to_owned(),
            from: bob,
            to: "all".to_owned(),
            text: "lead-1 needs the new session cookie".to_owned(),
            long: false,
            reply_to: None,
            time: Timestamp::from_millis(0),
            void: None,
        }],
        read: 0,
    };

    let registry = Registry::new(ferry_mcp_tools::GROUPS)?;
    let surface = registry.surface(&Selection {
        groups: &["core"],
        read_only: false,
    })?;
    let config = ServerConfig {
        name: "ferry-embedded",
        version: "0.1.0",
        instructions: surface.instructions().to_owned(),
        project: "demo".into(),
    };
    let mut server = Server::new(config, surface).with_channel(Box::new(Embedded(channel)));
    let now = Timestamp::from_millis(60_000);
    let call = |id: u32, tool: &str, arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
        )
    };
    // (request, whether the tool answers it with a result rather than a tool error)
    let lines = [
        (r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"0"}}}"#.to_owned(), true),
        (r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(), true),
        (call(2, "ferry_orders", r#"{"action":"list"}"#), true),
        (call(3, "ferry_orders", r#"{"action":"claim","id":"lead-1"}"#), true),
        (call(4, "ferry_talk", r#"{"action":"read"}"#), true),
        (call(5, "ferry_talk", r#"{"action":"post","to":"bob","text":"on it: lead-1 is mine"}"#), true),
        // Not held here: the port's default answers `unsupported`, as a tool error.
        (call(6, "ferry_catchup", "{}"), false),
    ];
    for (line, served) in lines {
        for answer in server.handle_line(line.as_bytes(), now) {
            println!("{answer}");
            // CI runs this example: an answer other than the one expected fails it.
            let message: Value = serde_json::from_str(&answer)?;
            let result = message.get("result").ok_or("a request was refused")?;
            let is_error = result["isError"] == true;
            if is_error == served {
                return Err(format!("unexpected answer: {answer}").into());
            }
            if !served && !answer.contains("unsupported") {
                return Err(format!("not the port's default: {answer}").into());
            }
        }
    }
    Ok(())
}
