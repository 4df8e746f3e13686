//! Every route, through the gate as the page's visitor: what each view shows, and what each
//! change writes (read back through the agents' own operations).

use ferry_mcp_core::channel::fold::levels::Level;
use ferry_mcp_core::channel::fold::state::asks::AskState;
use ferry_mcp_core::channel::fold::state::orders::OrderState;
use ferry_mcp_core::channel::machine::home::KeyHolder;
use ferry_mcp_core::channel::ops::orders::{self, IssueRequest, SubmitRequest};
use ferry_mcp_core::channel::ops::talk::{self, PostRequest, ReadRequest};
use ferry_mcp_core::channel::ops::{access_show, asks, fleet};
use ferry_mcp_dashboard::AiApp;
use ferry_mcp_testkit::plant;
use ferry_mcp_testkit::temp_channel::TEST_SEAL_COST;

use crate::fixture::{Page, channel};

fn issue_as_master(page: &Page, title: &str, to: Option<&str>) -> String {
    let mut session = page.channel.master_session();
    let request = IssueRequest {
        title: title.into(),
        to: to.map(ferry_mcp_testkit::temp_channel::TempChannel::agent),
        review: true,
        ..IssueRequest::default()
    };
    orders::issue(&mut session, &request, page.channel.now()).unwrap()
}

#[test]
fn the_root_leads_to_the_only_project_and_the_assets_are_served_from_the_binary() {
    let page = Page::new();
    let root = page.get("/");
    assert_eq!(root.status, 303);
    assert_eq!(root.header("Location"), Some("/p/demo/"));
    let css = page.get("/assets/style.css");
    assert_eq!(css.header("Content-Type"), Some("text/css; charset=utf-8"));
    assert!(css.text().contains("max-width: 40rem"));
    let js = page.get("/assets/live.js");
    assert!(js.text().contains("EventSource"));
}

#[test]
fn the_overview_shows_agents_the_primary_open_orders_and_what_waits() {
    let page = Page::new();
    issue_as_master(&page, "Write the lexer", None);
    page.ask("Merge the lexer?");
    let html = page.get("/p/demo/").text();
    for seen in [
        "<th scope=\"row\">lead</th>",
        "orchestrator",
        "1 open",
        "Merge the lexer?",
        "No problem found.",
    ] {
        assert!(html.contains(seen), "{seen} in {html}");
    }
}

#[test]
fn the_overview_shows_a_newer_release_the_master_approved_for_this_platform_and_nothing_before() {
    use ferry_mcp_core::channel::ops::releases::{
        self, ApproveRequest, ArtifactInput, THIS_PLATFORM,
    };
    let page = Page::new();
    assert!(!page.get("/p/demo/").text().contains("ferry update apply"));
    let request = ApproveRequest {
        version: "99.0.0".to_owned(),
        artifacts: vec![(
            THIS_PLATFORM.to_owned(),
            ArtifactInput::Url("http://127.0.0.1:9/ferry".to_owned()),
        )],
        sha256: vec![(
            THIS_PLATFORM.to_owned(),
            ferry_mcp_core::channel::fold::state::releases::Sha256::from_hex(&"ab".repeat(32))
                .unwrap(),
        )],
        ..ApproveRequest::default()
    };
    let mut master = page.channel.master_session();
    releases::approve(&mut master, &request, page.channel.now()).unwrap();
    drop(master);
    let html = page.get("/p/demo/").text();
    assert!(
        html.contains("ferry 99.0.0 is approved for this machine (running "),
        "{html}"
    );
    assert!(html.contains("<code>ferry update apply</code>"), "{html}");
}

#[test]
fn every_view_answers_and_labels_its_fields() {
    let page = Page::new();
    let id = issue_as_master(&page, "Write the lexer", None);
    for view in [
        "/p/demo/",
        "/p/demo/agents",
        "/p/demo/orders",
        &format!("/p/demo/orders/{id}"),
        "/p/demo/asks",
        "/p/demo/talk",
        "/p/demo/connect",
    ] {
        let response = page.get(view);
        assert_eq!(response.status, 200, "{view}");
        let html = response.text();
        assert!(
            html.starts_with("<!DOCTYPE html><html lang=\"en\">"),
            "{view}"
        );
        // Every input, select and textarea but the hidden ones has a label naming its id.
        for part in html
            .split("<input")
            .skip(1)
            .chain(html.split("<select").skip(1))
            .chain(html.split("<textarea").skip(1))
        {
            let tag = &part[..part.find('>').unwrap()];
            if tag.contains("type=\"hidden\"")
                || tag.contains("type=\"checkbox\"")
                || tag.contains("type=\"radio\"")
            {
                continue;
            }
            let id = tag
                .split("id=\"")
                .nth(1)
                .map(|rest| &rest[..rest.find('"').unwrap()]);
            let id = id.unwrap_or_else(|| panic!("{view}: a field without an id: {tag}"));
            assert!(
                html.contains(&format!("<label for=\"{id}\"")),
                "{view}: no label for {id}"
            );
        }
    }
    assert_eq!(
        page.get("/p/demo/orders/m999").status,
        200,
        "an unknown order is said in the page"
    );
    assert!(
        page.get("/p/demo/orders/m999")
            .text()
            .contains("unknown order m999")
    );
}

#[test]
fn markup_and_terminal_escapes_from_the_channel_render_as_text_and_secrets_are_masked() {
    let page = Page::new();
    const TOKEN: &str = "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";
    // Planted as a seated agent signing whatever it likes: never shown to the guard.
    let mut lead = page.channel.agent_session("lead");
    let now = page.channel.now();
    let title = "<script>alert(1)</script> \u{1b}[2J";
    let body = format!("deploy with {TOKEN} now");
    let id = plant::order(&mut lead, title, Some(&body), false, now);
    plant::post(&mut lead, "all", &format!("<b>bold</b> {TOKEN}"), now);
    let board = page.get("/p/demo/orders").text();
    assert!(
        board.contains("&lt;script&gt;alert(1)&lt;/script&gt; \\u{1b}[2J"),
        "{board}"
    );
    assert!(!board.contains("<script>alert") && !board.contains('\u{1b}'));
    let one = page.get(&format!("/p/demo/orders/{id}")).text();
    assert!(one.contains("deploy with [redacted: "), "{one}");
    assert!(!one.contains(TOKEN), "{one}");
    let talk = page.get("/p/demo/talk").text();
    assert!(
        talk.contains("&lt;b&gt;bold&lt;/b&gt; [redacted: "),
        "{talk}"
    );
    assert!(!talk.contains(TOKEN));
}

#[test]
fn pausing_and_resuming_the_machine_is_said_and_kept() {
    let page = Page::new();
    let (_, html) = page.post("/p/demo/pause", "reason=lunch");
    assert!(html.contains("This machine is paused: lunch"), "{html}");
    assert!(page.channel.home().pause_state().unwrap().is_some());
    let (_, html) = page.post("/p/demo/resume", "");
    assert!(html.contains("This machine resumed."), "{html}");
    assert!(page.channel.home().pause_state().unwrap().is_none());
}

#[test]
fn seating_a_name_and_setting_its_level_with_an_expiry_reach_the_roster() {
    let page = Page::new();
    let (_, html) = page.post("/p/demo/agents/seat", "name=helper");
    assert!(html.contains("Seated helper on this machine"), "{html}");
    let (_, html) = page.post("/p/demo/agents/level", "name=helper&level=member&hours=2");
    assert!(
        html.contains("helper is a member for the hours given."),
        "{html}"
    );
    let rows = access_show(
        page.channel.home(),
        page.channel.project(),
        None,
        page.channel.now(),
    )
    .unwrap();
    let helper = rows
        .iter()
        .find(|row| row.name.as_str() == "helper")
        .unwrap();
    assert_eq!(helper.level.as_str(), "member");
    let (_, html) = page.post("/p/demo/agents/level", "name=dev&level=worker");
    assert!(html.contains("dev is a worker."), "{html}");
    let (_, html) = page.post("/p/demo/agents/level", "name=ghost&level=member");
    assert!(html.contains("Not done:"), "{html}");
}

#[test]
fn an_order_issued_in_the_page_is_in_the_agents_catchup() {
    let page = Page::new();
    let (response, html) = page.post(
        "/p/demo/orders",
        "title=Write+the+parser&body=All+of+it&to=dev&review=on&cores=4",
    );
    let to = response.header("Location").unwrap();
    assert!(to.starts_with("/p/demo/orders/"), "{to}");
    assert!(html.contains("Issued "), "{html}");
    assert!(html.contains("All of it"));
    let mut session = page.channel.agent_session("dev");
    let digest = fleet::catchup(
        &mut session,
        None,
        fleet::DigestLimits::DEFAULT,
        page.channel.now(),
    )
    .unwrap();
    let mine: Vec<&str> = digest
        .mine
        .iter()
        .map(|order| order.title.as_str())
        .collect();
    assert_eq!(mine, ["Write the parser"]);
}

#[test]
fn the_board_filters_by_state_and_holder() {
    let page = Page::new();
    issue_as_master(&page, "First", None);
    let id = issue_as_master(&page, "Second", None);
    let mut session = page.channel.agent_session("dev");
    orders::claim(&mut session, &id, page.channel.now()).unwrap();
    let open = page.get("/p/demo/orders?state=open").text();
    assert!(open.contains("First") && !open.contains("Second"), "{open}");
    let held = page.get("/p/demo/orders?holder=dev").text();
    assert!(held.contains("Second") && !held.contains("First"), "{held}");
}

#[test]
fn review_cancel_and_hand_back_change_the_order() {
    let page = Page::new();
    let id = issue_as_master(&page, "Review me", None);
    let now = page.channel.now();
    let mut dev = page.channel.agent_session("dev");
    orders::claim(&mut dev, &id, now).unwrap();
    let submit = SubmitRequest {
        handin: None,
        git_ref: Some("abc123".into()),
        summary: "done".into(),
    };
    orders::submit(&mut dev, &id, &submit, now).unwrap();
    let (_, html) = page.post(
        &format!("/p/demo/orders/{id}/review"),
        "verdict=changes&notes=more+tests",
    );
    assert!(
        html.contains(&format!("{id} is changes requested.")),
        "{html}"
    );
    let (_, html) = page.post(&format!("/p/demo/orders/{id}/release"), "note=someone+else");
    assert!(
        html.contains(&format!("{id} is back on the board")),
        "{html}"
    );
    let (_, html) = page.post(&format!("/p/demo/orders/{id}/cancel"), "");
    assert!(html.contains(&format!("{id} is cancelled.")), "{html}");
    let mut view = page.channel.view();
    let detail = orders::show(&mut view, &id, None, page.channel.now()).unwrap();
    assert_eq!(detail.row.state, OrderState::Cancelled);
}

#[test]
fn an_ask_answered_in_the_page_is_what_the_agent_reads() {
    let page = Page::new();
    let first = page.ask("Merge the lexer?");
    let second = page.ask("Drop the old parser?");
    let third = page.ask("Rename the crate?");
    let html = page.get("/p/demo/asks").text();
    assert!(html.find("Rename the crate?").unwrap() < html.find("Merge the lexer?").unwrap());
    page.post(&format!("/p/demo/asks/{first}/answer"), "verdict=approve");
    page.post(&format!("/p/demo/asks/{second}/answer"), "verdict=reject");
    let (_, html) = page.post(
        &format!("/p/demo/asks/{third}/answer"),
        "verdict=send_back&note=why",
    );
    // Pending first: none is pending now; the answered ones stay, with their state.
    assert!(
        html.contains("send back") || html.contains("sent back"),
        "{html}"
    );
    let mut session = page.channel.agent_session("dev");
    let now = page.channel.now();
    assert_eq!(
        asks::show(&mut session, &first, now).unwrap().state,
        AskState::Approved
    );
    assert_eq!(
        asks::show(&mut session, &second, now).unwrap().state,
        AskState::Rejected
    );
    let sent_back = asks::show(&mut session, &third, now).unwrap();
    assert_eq!(sent_back.note.as_deref(), Some("why"));
}

#[test]
fn a_post_as_the_human_reaches_the_agent_and_the_talk_view_shows_who_read_it() {
    let page = Page::new();
    let (_, html) = page.post("/p/demo/talk", "to=dev&text=Hello+dev");
    assert!(html.contains("Posted "), "{html}");
    let mut session = page.channel.agent_session("dev");
    let read = talk::read(
        &mut session,
        &ReadRequest {
            limit: 10,
            ..ReadRequest::default()
        },
        &mut |_| true,
        page.channel.now(),
    )
    .unwrap();
    assert_eq!(read.messages.len(), 1);
    assert_eq!(read.messages[0].text, "Hello dev");
    let mut lead = page.channel.agent_session("lead");
    let post = PostRequest {
        to: "all".into(),
        text: "Morning all".into(),
        reply_to: None,
    };
    talk::post(&mut lead, &post, page.channel.now()).unwrap();
    let html = page.get("/p/demo/talk").text();
    assert!(html.contains("Morning all"), "{html}");
    // The human's own message shows with its receipt.
    let receipt = format!("{} to dev: read by dev", read.messages[0].id);
    assert!(html.contains(&receipt), "{receipt} in {html}");
}

#[test]
fn connecting_an_app_calls_the_connector_and_makes_a_member_unless_work_only() {
    let page = Page::new();
    let (_, html) = page.post("/p/demo/connect", "app=codex&name=&level=member&do=write");
    assert!(html.contains("wrote the config of codex-laptop"), "{html}");
    let (_, html) = page.post(
        "/p/demo/connect",
        "app=claude-code&name=cc&level=worker&do=show",
    );
    assert!(html.contains("wrote the config of cc"), "{html}");
    let asked = page.connector.0.lock().unwrap().clone();
    assert_eq!(asked.len(), 2);
    assert_eq!(
        (
            asked[0].app,
            asked[0].name.as_str(),
            asked[0].write,
            asked[0].level
        ),
        (AiApp::Codex, "codex-laptop", true, Level::Member)
    );
    assert_eq!(
        (
            asked[1].app,
            asked[1].name.as_str(),
            asked[1].write,
            asked[1].level
        ),
        (AiApp::ClaudeCode, "cc", false, Level::Worker)
    );
}

#[test]
fn a_sealed_master_key_not_opened_at_start_signs_only_with_the_passphrase_typed_for_the_action() {
    let channel = channel();
    channel
        .home()
        .seal_key(
            channel.project(),
            &KeyHolder::Master,
            b"correct horse",
            TEST_SEAL_COST,
        )
        .unwrap();
    let page = Page::on(channel, false);
    let html = page.get("/p/demo/talk").text();
    assert!(
        html.contains("type=\"password\""),
        "the form asks for the passphrase"
    );
    let (_, html) = page.post("/p/demo/talk", "to=all&text=no+key");
    assert!(html.contains("Not done:"), "{html}");
    let (_, html) = page.post("/p/demo/talk", "to=all&text=wrong+key&passphrase=battery");
    assert!(html.contains("Not done:"), "{html}");
    let (_, html) = page.post(
        "/p/demo/talk",
        "to=all&text=with+the+key&passphrase=correct+horse",
    );
    assert!(html.contains("Posted "), "{html}");
    // The key opened for that action is not kept: the next change needs it again.
    let (_, html) = page.post("/p/demo/talk", "to=all&text=again");
    assert!(html.contains("Not done:"), "{html}");
    let mut session = page.channel.agent_session("dev");
    let read = talk::read(
        &mut session,
        &ReadRequest {
            limit: 10,
            ..ReadRequest::default()
        },
        &mut |_| true,
        page.channel.now(),
    )
    .unwrap();
    let texts: Vec<&str> = read
        .messages
        .iter()
        .map(|message| message.text.as_str())
        .collect();
    assert_eq!(texts, ["with the key"]);
}

#[test]
fn a_live_refetch_leaves_the_line_of_the_last_change_for_the_page_the_browser_loads() {
    let page = Page::new();
    let body = format!("csrf={}&reason=lunch", page.csrf());
    let post = ferry_mcp_dashboard::Request::post("/p/demo/pause", crate::fixture::PORT, &body)
        .with_cookie(&page.cookie);
    assert_eq!(page.send(post).status, 303);
    // The page's script refetches on the change the POST made, before the redirect loads.
    let live = page.get("/p/demo/?live=1").text();
    assert!(
        !live.contains("This machine is paused: its agents stop writing"),
        "{live}"
    );
    let loaded = page.get("/p/demo/").text();
    assert!(
        loaded.contains("This machine is paused: its agents stop writing"),
        "{loaded}"
    );
}
