//! The gate: each refusal with its status and text, and nothing written when it refuses.

use ferry_mcp_core::channel::fold::state::asks::AskState;
use ferry_mcp_core::channel::ops::asks;
use ferry_mcp_dashboard::Request;
use ferry_mcp_dashboard::http::Method;

use crate::fixture::{PORT, Page, request};

fn pending(page: &Page, id: &str) -> bool {
    let mut session = page.channel.agent_session("dev");
    asks::show(&mut session, id, page.channel.now())
        .unwrap()
        .state
        == AskState::Pending
}

#[test]
fn a_foreign_host_is_refused_with_421_on_every_route_even_the_login() {
    let page = Page::new();
    for target in [
        "/login?token=x",
        "/",
        "/p/demo/",
        "/assets/style.css",
        "/p/demo/events",
    ] {
        let mut get = Request::get(target, PORT).with_cookie(&page.cookie);
        get.host = Some(format!("evil.example:{PORT}"));
        let response = page.send(get);
        assert_eq!(response.status, 421, "{target}");
        assert_eq!(
            response.text(),
            "refused: the Host header is not this machine's loopback address and port\n"
        );
    }
    let mut no_host = Request::get("/p/demo/", PORT).with_cookie(&page.cookie);
    no_host.host = None;
    assert_eq!(page.send(no_host).status, 421);
    let mut other_port = Request::get("/p/demo/", PORT).with_cookie(&page.cookie);
    other_port.host = Some("127.0.0.1:1".into());
    assert_eq!(page.send(other_port).status, 421);
}

#[test]
fn a_request_from_another_machine_is_refused_with_403() {
    let page = Page::new();
    let mut get = Request::get("/p/demo/", PORT).with_cookie(&page.cookie);
    get.loopback = false;
    let response = page.send(get);
    assert_eq!(response.status, 403);
    assert_eq!(response.text(), "refused: only this machine may connect\n");
}

#[test]
fn every_page_and_change_without_the_cookie_is_refused_with_401() {
    let page = Page::new();
    let id = page.ask("Merge?");
    let gets = [
        "/",
        "/p/demo/",
        "/p/demo/agents",
        "/p/demo/orders",
        "/p/demo/orders/m1",
        "/p/demo/asks",
        "/p/demo/talk",
        "/p/demo/connect",
        "/p/demo/events",
    ];
    for target in gets {
        let response = page.send(Request::get(target, PORT));
        assert_eq!(response.status, 401, "{target}");
        assert_eq!(
            response.text(),
            "refused: open the link `ferry dashboard` printed\n"
        );
        let forged = page.send(Request::get(target, PORT).with_cookie("ferry_dashboard=0000"));
        assert_eq!(forged.status, 401, "{target} with a made-up cookie");
    }
    let csrf = page.csrf();
    let post = Request::post(
        &format!("/p/demo/asks/{id}/answer"),
        PORT,
        &format!("csrf={csrf}&verdict=approve"),
    );
    let response = page.send(post);
    assert_eq!(response.status, 401);
    assert!(pending(&page, &id), "nothing was answered");
}

#[test]
fn the_login_token_works_once_and_a_wrong_one_never() {
    let page = Page::new();
    // The fixture used the token already.
    let again = page.send(Request::get("/login?token=anything", PORT));
    assert_eq!(again.status, 403);
    assert_eq!(
        again.text(),
        "refused: this link is not valid or was used already; start `ferry dashboard` again\n"
    );
    assert!(again.header("Set-Cookie").is_none());
    assert!(
        page.app.login_url().ends_with("token="),
        "the printed token is gone"
    );
}

#[test]
fn a_change_with_a_foreign_or_missing_origin_is_refused_with_403_and_writes_nothing() {
    let page = Page::new();
    let id = page.ask("Merge?");
    let body = format!("csrf={}&verdict=approve", page.csrf());
    for origin in [
        Some("http://evil.example"),
        Some("null"),
        Some(&format!("http://127.0.0.1:{}", PORT + 1) as &str),
        None,
    ] {
        let mut post = Request::post(&format!("/p/demo/asks/{id}/answer"), PORT, &body)
            .with_cookie(&page.cookie);
        post.origin = origin.map(str::to_owned);
        let response = page.send(post);
        assert_eq!(response.status, 403, "{origin:?}");
        assert_eq!(
            response.text(),
            "refused: a change must come from this page (its Origin)\n"
        );
    }
    assert!(pending(&page, &id), "nothing was answered");
}

#[test]
fn a_change_with_a_wrong_or_missing_csrf_token_is_refused_with_403_and_writes_nothing() {
    let page = Page::new();
    let id = page.ask("Merge?");
    let path = format!("/p/demo/asks/{id}/answer");
    let wrong = "0".repeat(64);
    for body in [
        format!("csrf={wrong}&verdict=approve"),
        "verdict=approve".to_owned(),
        "csrf=&verdict=approve".to_owned(),
    ] {
        let response = page.send(Request::post(&path, PORT, &body).with_cookie(&page.cookie));
        assert_eq!(response.status, 403, "{body}");
        assert_eq!(
            response.text(),
            "refused: the form's token does not match this page; reload it\n"
        );
    }
    assert!(pending(&page, &id), "nothing was answered");
}

#[test]
fn other_methods_unknown_paths_and_projects_are_refused() {
    let page = Page::new();
    let put = request(Method::Other, "/p/demo/", "").with_cookie(&page.cookie);
    assert_eq!(page.send(put).status, 405);
    assert_eq!(page.send(request(Method::Post, "/login", "")).status, 405);
    assert_eq!(page.get("/p/demo/nothing").status, 404);
    assert_eq!(page.get("/p/other/").status, 404);
    assert_eq!(page.get("/elsewhere").status, 404);
    let csrf = page.csrf();
    let post =
        Request::post("/p/demo/nothing", PORT, &format!("csrf={csrf}")).with_cookie(&page.cookie);
    assert_eq!(page.send(post).status, 404);
}

#[test]
fn the_cookie_is_httponly_samesite_strict_and_lasts_the_browser_session() {
    let channel = crate::fixture::channel();
    let app = ferry_mcp_dashboard::App::new(
        crate::fixture::config(&channel, channel.home().clone(), true, Default::default()),
        PORT,
    );
    let url = app.login_url();
    let target = url.split_once(&format!(":{PORT}")).unwrap().1;
    let ferry_mcp_dashboard::Outcome::Page(response) = app.handle(&Request::get(target, PORT))
    else {
        panic!("a page");
    };
    assert_eq!(response.header("Location"), Some("/"));
    let cookie = response.header("Set-Cookie").unwrap();
    assert!(cookie.starts_with("ferry_dashboard="), "{cookie}");
    assert!(
        cookie.ends_with("; HttpOnly; SameSite=Strict; Path=/"),
        "{cookie}"
    );
    assert!(
        !cookie.contains("Expires") && !cookie.contains("Max-Age"),
        "{cookie}"
    );
}
