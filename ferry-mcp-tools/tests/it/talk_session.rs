//! Two agents talking over JSON-RPC, each through its own server (as two `ferry mcp serve`
//! processes on one machine would): A posts to B, B reads it, B replies, A reads the reply and
//! sees that B has read its message. The answers are snapshotted, ids and cursors redacted.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::support::{agent, fleet, talk};

/// Ids and cursors replaced by stable names in order of appearance (`[msg 1]`, `[cursor 1]`),
/// so the snapshot shows which answer names which message without depending on log positions
/// or the machine's random cursor tag.
#[derive(Default)]
struct Redactor {
    ids: BTreeMap<String, String>,
    cursors: BTreeMap<String, String>,
}

impl Redactor {
    fn name(table: &mut BTreeMap<String, String>, what: &str, raw: &str) -> String {
        let next = table.len() + 1;
        table
            .entry(raw.to_owned())
            .or_insert_with(|| format!("[{what} {next}]"))
            .clone()
    }

    fn redact(&mut self, value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, value)| {
                        let redacted = match (key.as_str(), value) {
                            ("id" | "reply_to", Value::String(raw)) => {
                                Value::String(Self::name(&mut self.ids, "msg", raw))
                            }
                            ("next", Value::String(raw)) => {
                                Value::String(Self::name(&mut self.cursors, "cursor", raw))
                            }
                            ("text", Value::String(raw)) => Value::String(self.redact_text(raw)),
                            _ => self.redact(value),
                        };
                        (key.clone(), redacted)
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.redact(v)).collect()),
            other => other.clone(),
        }
    }

    /// A summary line names an id (`posted alice-2`): replace the ids already seen.
    fn redact_text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (raw, name) in &self.ids {
            out = out.replace(raw.as_str(), name);
        }
        out
    }
}

#[test]
fn two_agents_post_read_and_reply_over_json_rpc_and_the_sender_sees_its_message_read() {
    let temp = fleet();
    let mut alice = agent(&temp, "alice");
    let mut bob = agent(&temp, "bob");
    let mut redactor = Redactor::default();
    let mut script = Vec::new();
    let mut step = |who: &str, arguments: Value, result: Value, redactor: &mut Redactor| {
        let structured = redactor.redact(&result["structuredContent"]);
        let summary = redactor.redact_text(result["content"][0]["text"].as_str().unwrap());
        let call = redactor.redact(&arguments);
        script.push(json!({
            "agent": who,
            "call": call,
            "summary": summary,
            "structuredContent": structured,
        }));
        result
    };

    let args =
        json!({ "action": "post", "to": "bob", "text": "can you review order m2 after lunch?" });
    let posted = talk(&mut alice, args.clone());
    let posted = step("alice", args, posted, &mut redactor);
    let question = posted["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let args = json!({ "action": "read" });
    let got = talk(&mut bob, args.clone());
    let got = step("bob", args, got, &mut redactor);
    assert_eq!(got["structuredContent"]["messages"][0]["id"], question);

    let args = json!({ "action": "read" });
    let again = talk(&mut bob, args.clone());
    step("bob", args, again, &mut redactor);

    let args =
        json!({ "action": "post", "to": "alice", "text": "yes, at two", "reply_to": question });
    let replied = talk(&mut bob, args.clone());
    let replied = step("bob", args, replied, &mut redactor);
    let answer = replied["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let args = json!({ "action": "read" });
    let read = talk(&mut alice, args.clone());
    let read = step("alice", args, read, &mut redactor);
    let got = &read["structuredContent"];
    assert_eq!(got["messages"][0]["id"], answer);
    assert_eq!(got["messages"][0]["reply_to"], question);
    assert_eq!(
        got["sent"],
        json!([{ "id": question, "read": ["bob"], "unread": [] }])
    );

    insta::assert_json_snapshot!(script);
}
