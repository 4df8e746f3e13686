//! `ferry dashboard` in a real browser: Debian's chromium driven through chromedriver
//! (WebDriver, a few JSON calls over a plain TCP stream), on the demo project, with the agents
//! as real `ferry mcp serve` processes. Runs when `chromedriver` is on PATH; skipped with a
//! reason otherwise, except under `CI=true`, where a missing browser fails
//! (`.ci/install-browser` installs it). With `FERRY_SCREENSHOTS=1` it saves a screenshot of
//! each view into `docs/screenshots/`.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const FERRY: &str = env!("CARGO_BIN_EXE_ferry");

/// The longest the test waits for a page to show something (a loaded CI machine is slow).
const WAIT: Duration = Duration::from_secs(20);

/// Kills a child process when the test ends, however it ends.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|path| path.is_file())
    })
}

/// One HTTP/1.1 exchange over a fresh connection: the status and the body.
fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(name, _)| *name == "Host") {
        request.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    // Read the head, then the body by its length (chromedriver may keep the connection).
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status = status_line[9..12].parse().unwrap();
    let (mut length, mut chunked) = (None, false);
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("content-length:") {
            length = value.trim().parse::<usize>().ok();
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).unwrap();
            let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if size == 0 {
                break;
            }
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).unwrap();
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = length {
        body.resize(length, 0);
        reader.read_exact(&mut body).unwrap();
    } else {
        reader.read_to_end(&mut body).unwrap();
    }
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// A WebDriver session: the few commands the test needs.
struct Browser {
    port: u16,
    session: String,
}

impl Browser {
    fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let body = if method == "GET" {
            String::new()
        } else {
            body.to_string()
        };
        let (status, text) = http(
            self.port,
            method,
            &path,
            &[("Content-Type", "application/json")],
            &body,
        );
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        assert_eq!(status, 200, "{method} {path}: {text}");
        value["value"].clone()
    }

    fn go(&self, url: &str) {
        self.call("POST", "/url", json!({ "url": url }));
    }

    fn find(&self, css: &str) -> String {
        let found = self.call(
            "POST",
            "/element",
            json!({ "using": "css selector", "value": css }),
        );
        found
            .as_object()
            .and_then(|found| found.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {css}"))
            .to_owned()
    }

    fn click(&self, css: &str) {
        let element = self.find(css);
        self.call("POST", &format!("/element/{element}/click"), json!({}));
    }

    fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css);
        self.call(
            "POST",
            &format!("/element/{element}/value"),
            json!({ "text": text }),
        );
    }

    fn source(&self) -> String {
        self.call("GET", "/source", Value::Null)
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Waits up to `within` for the page to hold `text`; how long it took.
    fn wait_for(&self, text: &str, within: Duration) -> Duration {
        let start = Instant::now();
        loop {
            if self.source().contains(text) {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < within,
                "{text:?} not on the page within {within:?}:\n{}",
                self.source()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn cookie(&self) -> String {
        let cookies = self.call("GET", "/cookie", Value::Null);
        let cookie = cookies
            .as_array()
            .and_then(|cookies| {
                cookies
                    .iter()
                    .find(|cookie| cookie["name"] == "ferry_dashboard")
            })
            .expect("the dashboard's cookie");
        assert_eq!(cookie["httpOnly"], true);
        assert_eq!(cookie["sameSite"], "Strict");
        format!("ferry_dashboard={}", cookie["value"].as_str().unwrap())
    }

    fn width(&self, width: u32, height: u32) {
        self.call(
            "POST",
            "/window/rect",
            json!({ "width": width, "height": height }),
        );
    }

    /// Saves a screenshot into `docs/screenshots/<name>.png` when `FERRY_SCREENSHOTS=1`.
    fn screenshot(&self, name: &str) {
        if std::env::var("FERRY_SCREENSHOTS").as_deref() != Ok("1") {
            return;
        }
        let png = self.call("GET", "/screenshot", Value::Null);
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("{name}.png")),
            base64(png.as_str().unwrap()),
        )
        .unwrap();
    }

    fn close(&self) {
        let _ = http(
            self.port,
            "DELETE",
            &format!("/session/{}", self.session),
            &[],
            "",
        );
    }
}

fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let digits: Vec<u8> = text
        .bytes()
        .filter(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/')
        .map(value)
        .collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (at, d)| n | u32::from(*d) << (18 - 6 * at));
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

/// An agent: `ferry mcp serve` over pipes, asked one tool call at a time.
struct Agent {
    _child: Reaped,
    stdin: ChildStdin,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
    next: u64,
}

impl Agent {
    fn start(env: &[(&str, &Path)], name: &str) -> Self {
        let mut command = Command::new(FERRY);
        command.args(["mcp", "serve", "--as", name, "--project", "demo"]);
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut agent = Self {
            _child: Reaped(child),
            stdin,
            lines,
            next: 1,
        };
        agent.request("initialize", json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "browser-test", "version": "1" } }));
        writeln!(
            agent.stdin,
            "{}",
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })
        )
        .unwrap();
        agent
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        writeln!(
            self.stdin,
            "{}",
            json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
        )
        .unwrap();
        loop {
            let line = self.lines.next().expect("an answer").unwrap();
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message["result"].clone();
            }
        }
    }

    fn tool(&mut self, name: &str, arguments: Value) -> Value {
        let result = self.request(
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        );
        assert_ne!(result["isError"], true, "{name}: {result}");
        result["structuredContent"].clone()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn the_human_approves_an_ask_issues_an_order_and_connects_an_app_in_a_real_browser() {
    let Some(driver) = on_path("chromedriver") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "chromedriver is not on PATH under CI=true: run .ci/install-browser"
        );
        eprintln!(
            "skipped: chromedriver is not on PATH (run .ci/install-browser to install chromium and chromium-driver)"
        );
        return;
    };
    let temp = tempfile::tempdir().unwrap();
    let user_home = temp.path().join("user");
    let ferry_home = temp.path().join("ferry");
    std::fs::create_dir_all(&user_home).unwrap();
    let env: [(&str, &Path); 2] = [("HOME", &user_home), ("FERRY_HOME", &ferry_home)];

    // The dashboard, as the human starts it; its stdin stays open (Enter would stop it).
    let mut command = Command::new(FERRY);
    command
        .args(["dashboard", "--demo"])
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEX_HOME")
        .env_remove("CLAUDE_CONFIG_DIR");
    for (key, value) in env {
        command.env(key, value);
    }
    let mut dashboard = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(dashboard.stdout.take().unwrap());
    let _keep_stdin = dashboard.stdin.take();
    let _dashboard = Reaped(dashboard);
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("ferry dashboard: open ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    let port: u16 = url["http://127.0.0.1:".len()..]
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();

    let driver_port = free_port();
    let driver = Reaped(
        Command::new(driver)
            .arg(format!("--port={driver_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", driver_port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "chromedriver did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let chrome_profile = temp.path().join("chrome");
    let capabilities = json!({ "capabilities": { "alwaysMatch": { "goog:chromeOptions": {
        "binary": on_path("chromium").map(|path| path.display().to_string()).unwrap_or_default(),
        "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000", format!("--user-data-dir={}", chrome_profile.display())]
    } } } });
    let (status, text) = http(
        driver_port,
        "POST",
        "/session",
        &[("Content-Type", "application/json")],
        &capabilities.to_string(),
    );
    assert_eq!(status, 200, "{text}");
    let session: Value = serde_json::from_str(&text).unwrap();
    let browser = Browser {
        port: driver_port,
        session: session["value"]["sessionId"].as_str().unwrap().to_owned(),
    };
    let base = format!("http://127.0.0.1:{port}");

    // The printed link logs in once; the overview shows the demo fleet.
    browser.go(&url);
    browser.wait_for("lead</strong> is primary", WAIT);
    browser.screenshot("overview");
    let cookie = browser.cookie();

    // Approve the demo's ask; the agent that raised it reads `approved`.
    browser.go(&format!("{base}/p/demo/asks"));
    // On a busy machine the page may still be loading when the navigation returns: wait for
    // the ask (and show the page if it never comes).
    browser.wait_for("id=\"ask-", WAIT);
    browser.screenshot("asks");
    let source = browser.source();
    let ask = source
        .split("id=\"ask-")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("an ask")
        .to_owned();
    browser.click(&format!("#ask-{ask} button[value=\"approve\"]"));
    browser.wait_for(&format!("{ask} is approved."), WAIT);
    let mut builder = Agent::start(&env, "builder");
    let status = builder.tool("ferry_ask_human", json!({ "action": "status", "id": ask }));
    assert!(status.to_string().contains("\"approved\""), "{status}");

    // Issue an order offered to demo-agent; it is in that agent's catch-up.
    browser.go(&format!("{base}/p/demo/orders"));
    browser.screenshot("orders");
    browser.type_into("#o-title", "Write the browser test");
    browser.type_into("#o-to", "demo-agent");
    browser.type_into("#o-scope", "web");
    browser.click("#issue button[type=\"submit\"]");
    browser.wait_for("Issued ", WAIT);
    browser.screenshot("order");
    let mut agent = Agent::start(&env, "demo-agent");
    let digest = agent.tool("ferry_catchup", json!({}));
    assert!(
        digest.to_string().contains("Write the browser test"),
        "{digest}"
    );

    // A change in the channel shows on an open page within a second, without a reload.
    browser.go(&format!("{base}/p/demo/talk"));
    browser.wait_for("Post as the human", WAIT);
    std::thread::sleep(Duration::from_millis(300)); // the page's event stream is open
    builder.tool(
        "ferry_talk",
        json!({ "action": "post", "to": "all", "text": "live from builder" }),
    );
    // Without a reload: the page's script swapped its live part. How fast is printed, not
    // asserted (speed is measured by hand or in benches, never in a timed test).
    let took = browser.wait_for("live from builder", WAIT);
    eprintln!("dashboard: the open page showed the agent's post {took:?} after it was written");
    browser.screenshot("talk");

    browser.go(&format!("{base}/p/demo/agents"));
    browser.screenshot("agents");

    // Connect Codex as `codex-test`: its config file is written in the (temporary) HOME.
    browser.go(&format!("{base}/p/demo/connect"));
    browser.screenshot("connect");
    browser.click("input[value=\"codex\"]");
    browser.type_into("#c-name", "codex-test");
    browser.click("button[value=\"write\"]");
    // Member, the level picked by default, granted with the key the page opened at start.
    browser.wait_for(
        "seated codex-test in demo on this machine: it is a member",
        WAIT,
    );
    let config =
        std::fs::read_to_string(user_home.join(".codex/config.toml")).expect("the config written");
    assert!(config.contains("\"--as\", \"codex-test\""), "{config}");
    assert!(
        !config.contains(&cookie[16..]) && !config.contains("token"),
        "no secret in the file"
    );

    browser.width(390, 900);
    browser.go(&format!("{base}/p/demo/"));
    browser.screenshot("overview-phone");

    // The refusals, on the real server, with the browser's own cookie.
    let csrf = source.split("name=\"csrf\" value=\"").nth(1).unwrap()[..64].to_owned();
    let origin = base.as_str();
    let form = format!("csrf={csrf}&to=all&text=forged");
    let (status, body) = http(
        port,
        "GET",
        "/p/demo/",
        &[
            ("Host", &format!("evil.example:{port}")),
            ("Cookie", &cookie),
        ],
        "",
    );
    assert_eq!(
        (status, body.as_str()),
        (
            421,
            "refused: the Host header is not this machine's loopback address and port\n"
        )
    );
    let (status, body) = http(port, "GET", "/p/demo/", &[], "");
    assert_eq!(
        (status, body.as_str()),
        (401, "refused: open the link `ferry dashboard` printed\n")
    );
    let (status, body) = http(
        port,
        "POST",
        "/p/demo/talk",
        &[
            ("Cookie", &cookie),
            ("Origin", "http://evil.example"),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &form,
    );
    assert_eq!(
        (status, body.as_str()),
        (
            403,
            "refused: a change must come from this page (its Origin)\n"
        )
    );
    let wrong = format!("csrf={}&to=all&text=forged", "0".repeat(64));
    let (status, body) = http(
        port,
        "POST",
        "/p/demo/talk",
        &[
            ("Cookie", &cookie),
            ("Origin", origin),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &wrong,
    );
    assert_eq!(
        (status, body.as_str()),
        (
            403,
            "refused: the form's token does not match this page; reload it\n"
        )
    );
    let (status, body) = http(
        port,
        "GET",
        &url["http://127.0.0.1:".len() + port.to_string().len()..],
        &[],
        "",
    );
    assert_eq!(
        (status, body.as_str()),
        (
            403,
            "refused: this link is not valid or was used already; start `ferry dashboard` again\n"
        )
    );
    let read = agent.tool("ferry_talk", json!({ "action": "read" }));
    assert!(!read.to_string().contains("forged"), "{read}");

    browser.close();
    drop(driver);
}
