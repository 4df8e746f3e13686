//! Property tests: no input, however broken, stops the server, goes unanswered when it must be
//! answered, or makes the server write anything but one JSON-RPC message per line.
//!
//! `proptest` shrinks a failure to a minimal input; the case count stays small so the suite is
//! fast (raise it with `PROPTEST_CASES` for a longer run).

use ferry_mcp_testkit::session::{Session, check_wire_line, stateless_meta};
use proptest::prelude::*;
use serde_json::{Value, json};

const METHODS: &[&str] = &[
    "initialize",
    "notifications/initialized",
    "notifications/cancelled",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
    "no/such/method",
    "",
];

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
        prop::sample::select(METHODS).prop_map(|m| json!(m)),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(
                    &[
                        "name",
                        "arguments",
                        "cursor",
                        "uri",
                        "protocolVersion",
                        "_meta",
                        "id",
                        "body",
                        "n",
                        "requestId",
                    ][..]
                )
                .prop_map(str::to_owned),
                inner,
                0..4
            )
            .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// A request-shaped object with arbitrary method, id and params.
fn request_like() -> impl Strategy<Value = (Value, Value)> {
    (
        prop_oneof![
            any::<u32>().prop_map(|n| json!(n)),
            "[a-z0-9-]{1,8}".prop_map(|s| json!(s))
        ],
        prop::sample::select(METHODS),
        prop_oneof![
            Just(None),
            any_json().prop_map(Some),
            Just(Some(stateless_meta_params()))
        ],
    )
        .prop_map(|(id, method, params)| {
            let mut request = json!({"jsonrpc": "2.0", "id": id, "method": method});
            if let Some(params) = params {
                request["params"] = params;
            }
            (id, request)
        })
}

fn stateless_meta_params() -> Value {
    json!({ "_meta": stateless_meta() })
}

/// 256 cases by default; `PROPTEST_CASES` sets another count for a longer run.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(256)
}

/// A fixture session, fresh or after `initialize` 2025-11-25.
fn fixture_session(initialized: bool) -> Session {
    if initialized {
        Session::fixture_initialized("demo", "2025-11-25")
    } else {
        Session::fixture("demo")
    }
}

fn ping_is_answered(session: &mut Session) {
    let answers = session.send_raw(br#"{"jsonrpc":"2.0","id":"still-alive","method":"ping"}"#);
    assert_eq!(answers.len(), 1, "{answers:?}");
    let answer: Value = serde_json::from_str(&answers[0]).unwrap();
    assert_eq!(answer["id"], "still-alive", "{answer}");
    assert!(answer.get("result").is_some(), "{answer}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn arbitrary_bytes_are_answered_with_well_formed_lines_and_serving_goes_on(
        lines in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 1..8),
        initialized in any::<bool>(),
    ) {
        let mut session = fixture_session(initialized);
        for line in &lines {
            for out in session.send_raw(line) {
                check_wire_line(&out);
            }
        }
        ping_is_answered(&mut session);
    }

    #[test]
    fn every_request_gets_exactly_one_answer_carrying_its_id(
        (id, request) in request_like(),
        initialized in any::<bool>(),
    ) {
        let mut session = fixture_session(initialized);
        let line = serde_json::to_string(&request).unwrap();
        let out = session.send_raw(line.as_bytes());
        let answers: Vec<Value> = out
            .iter()
            .inspect(|line| check_wire_line(line))
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|message| message.get("method").is_none())
            .collect();
        prop_assert_eq!(answers.len(), 1, "{} -> {:?}", line, out);
        prop_assert_eq!(&answers[0]["id"], &id, "{} -> {:?}", line, out);
        prop_assert!(
            answers[0].get("result").is_some() != answers[0].get("error").is_some(),
            "{} -> {:?}", line, out
        );
        ping_is_answered(&mut session);
    }

    #[test]
    fn arbitrary_json_is_never_fatal(values in prop::collection::vec(any_json(), 1..6)) {
        let mut session = Session::fixture_initialized("demo", "2025-03-26");
        for value in &values {
            let line = serde_json::to_string(value).unwrap();
            for out in session.send_raw(line.as_bytes()) {
                check_wire_line(&out);
            }
        }
        ping_is_answered(&mut session);
    }

    #[test]
    fn any_number_or_string_id_comes_back_byte_for_byte(
        id in prop_oneof![
            "-?(0|[1-9][0-9]{0,40})(\\.[0-9]{1,20})?([eE][+-]?[0-9]{1,2})?",
            r#""([a-z\u{e9}\u{1F600} ]|\\["\\/bfnrt]|\\u00[0-7][0-9a-f]){0,8}""#,
        ],
        initialized in any::<bool>(),
    ) {
        let mut session = fixture_session(initialized);
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        let out = session.send_raw(line.as_bytes());
        prop_assert_eq!(out.len(), 1);
        prop_assert_eq!(&out[0], &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#));
    }
}
