//! A secret's value never reaches a model through the tools: no tool of the core group takes
//! or gives one, and an agent that was sent a secret finds no trace of it in what it reads.

use std::fs;
use std::path::Path;

use ferry_mcp_core::channel::ops::secrets;
use ferry_mcp_core::channel::ops::talk::{self as talk_ops, PostRequest};
use ferry_mcp_testkit::temp_channel::TempChannel;
use serde_json::{Value, json};

use crate::support::{agent, fleet, github_token, talk};

/// Every property name and enum value of a JSON schema, at any depth.
fn schema_words(schema: &Value, into: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                if key == "properties"
                    && let Value::Object(properties) = value
                {
                    into.extend(properties.keys().cloned());
                }
                if key == "enum"
                    && let Value::Array(values) = value
                {
                    into.extend(values.iter().filter_map(Value::as_str).map(str::to_owned));
                }
                schema_words(value, into);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| schema_words(item, into)),
        _ => {}
    }
}

#[test]
fn no_tool_or_resource_of_the_core_group_takes_or_gives_a_secret_value() {
    let core = &ferry_mcp_tools::CORE;
    assert!(!core.tools.is_empty());
    for tool in core.tools {
        let definition = tool.definition();
        let mut words = Vec::new();
        for schema in [Some(definition.input_schema), definition.output_schema]
            .into_iter()
            .flatten()
        {
            schema_words(&serde_json::from_str(schema).unwrap(), &mut words);
        }
        assert!(
            !words.is_empty(),
            "{}: the schemas name nothing",
            definition.name
        );
        for word in &words {
            assert!(
                !word.contains("secret") && word != "value",
                "{} has an action or field {word:?}",
                definition.name
            );
        }
        // A tool may tell agents that secrets are refused; it never offers one.
        let description = definition.description.to_lowercase();
        for offer in ["secret get", "get secret", "secret value", "open secret"] {
            assert!(
                !description.contains(offer),
                "{}: {}",
                definition.name,
                definition.description
            );
        }
    }
    for resource in core.resources {
        let template = resource.template();
        assert!(
            !template.kind.contains("secret") && !template.description.contains("secret"),
            "resource {}",
            template.kind
        );
    }
}

#[test]
fn the_tool_crate_never_calls_the_secret_operations() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    for entry in fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "rs") {
            let text = fs::read_to_string(&path).unwrap();
            assert!(
                !text.contains("ops::secrets") && !text.contains("channel::log::secret"),
                "{} reaches the secret flow",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 3, "only {checked} source files");
}

#[test]
fn the_talk_answers_of_an_agent_that_was_sent_a_secret_hold_no_trace_of_it() {
    let temp = fleet();
    let value = github_token();
    let bob = TempChannel::agent("bob");
    let mut master = temp.master_session();
    let share = secrets::send(
        &mut master,
        "deploy-token",
        &bob,
        value.as_bytes(),
        temp.now(),
    )
    .unwrap();
    let request = PostRequest {
        to: "bob".into(),
        text: format!("I sent you deploy-token ({share}): open it with ferry channel secret get"),
        reply_to: None,
    };
    talk_ops::post(&mut master, &request, temp.now()).unwrap();
    // The secret does open for bob, outside the tools.
    let opened = secrets::get(&mut temp.agent_session("bob"), "deploy-token", temp.now()).unwrap();
    assert_eq!(opened.value, value.as_bytes());

    let mut session = agent(&temp, "bob");
    let mut answers = vec![
        talk(&mut session, json!({ "action": "read", "peek": true })),
        talk(&mut session, json!({ "action": "read" })),
        talk(&mut session, json!({ "action": "read" })),
        session.call("ferry_orders", json!({ "action": "list" })),
        session.result("tools/list", json!({})),
    ];
    let first = &answers[1]["structuredContent"]["messages"][0];
    assert!(
        first["text"].as_str().unwrap().contains("deploy-token"),
        "{first}"
    );
    let since = answers[0]["structuredContent"]["next"].as_str().unwrap();
    let since = json!({ "action": "read", "since": since });
    answers.push(talk(&mut session, since));
    let uri = format!("ferry://demo/msg/{share}");
    answers.push(session.request("resources/read", json!({ "uri": uri })));
    for answer in &answers {
        let text = answer.to_string();
        assert!(!text.contains(&value), "the secret is in {text}");
        assert!(
            !text.contains(&value[4..]),
            "part of the secret is in {text}"
        );
    }
}

#[test]
fn the_catch_up_tells_an_agent_a_secret_waits_by_name_and_sender_never_by_value() {
    let temp = fleet();
    let value = github_token();
    let bob = TempChannel::agent("bob");
    secrets::send(
        &mut temp.master_session(),
        "deploy-token",
        &bob,
        value.as_bytes(),
        temp.now(),
    )
    .unwrap();
    let mut server = agent(&temp, "bob");
    let digest = server.call("ferry_catchup", json!({}));
    let text = digest.to_string();
    assert!(!text.contains(&value), "{text}");
    let waiting: Vec<&str> = digest["structuredContent"]["waiting_on_you"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        waiting.contains(
            &"secret deploy-token from master: open it with ferry channel secret get deploy-token"
        ),
        "{waiting:?}"
    );
    // Another agent is told nothing of it.
    let carol = agent(&temp, "carol").call("ferry_catchup", json!({}));
    assert!(!carol.to_string().contains("deploy-token"), "{carol}");
}
