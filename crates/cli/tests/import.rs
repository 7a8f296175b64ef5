//! `loadmark import` and `run --curl` (issue 41) with real inputs: HAR files recorded here by
//! Debian's Chromium (through Playwright's recorder) and by mitmproxy (a reverse proxy in
//! front of the built-in target) while the browser runs the login → list → open journey;
//! the imported plans pass `bench --check` and run with exact per-step counts and no wrong
//! token. A curl corpus: each command sent by real curl and by `loadmark run --curl` to a
//! capturing server on loopback, the two requests compared byte for byte.
//!
//! Tools (installed by .ci/run): curl, chromium, node, target/ci-node's playwright-core,
//! target/ci-mitm's mitmdump.

mod common;

use common::*;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A tool the tests need, or a panic saying how .ci/run installs it.
fn tool(path: PathBuf, how: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: {how} (.ci/run does)",
        path.display()
    );
    path
}

fn text(o: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Records the journey in Chromium against `base`, into `har`.
fn record_with_chromium(base: &str, har: &Path) {
    let node_modules = tool(
        workspace().join("target/ci-node/node_modules/playwright-core"),
        "npm install playwright-core in target/ci-node",
    );
    tool(
        PathBuf::from("/usr/bin/chromium"),
        "apt-get install chromium",
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import_support/record-har.js");
    let out = Command::new("node")
        .arg(script)
        .args([base, har.to_str().unwrap()])
        .env("NODE_PATH", node_modules.parent().unwrap())
        .output()
        .expect("node runs");
    assert!(out.status.success(), "recording failed: {}", text(&out));
}

/// mitmdump as a reverse proxy on loopback in front of `upstream`, dumping HAR on exit.
struct Mitm {
    child: Child,
    port: u16,
}

impl Mitm {
    fn start(upstream: &str, har: &Path, confdir: &Path) -> Mitm {
        let mitmdump = tool(
            workspace().join("target/ci-mitm/bin/mitmdump"),
            "pip install mitmproxy into target/ci-mitm",
        );
        let port = port();
        let child = Command::new(mitmdump)
            .args(["--mode", &format!("reverse:{upstream}")])
            .args(["--listen-host", "127.0.0.1", "-p", &port.to_string(), "-q"])
            .args(["--set", &format!("hardump={}", har.display())])
            .args(["--set", &format!("confdir={}", confdir.display())])
            .stdout(Stdio::null())
            .spawn()
            .expect("mitmdump starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "mitmdump did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Mitm { child, port }
    }

    /// Stops it (SIGINT: it writes the HAR as it exits) and waits.
    fn stop(mut self) {
        // SAFETY: kill(2) on the PID of a child this test started and has not reaped.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let status = self.child.wait().unwrap();
        assert!(
            status.success() || status.code().is_none(),
            "mitmdump: {status}"
        );
    }
}

/// Imports `har`, checks the plan, runs it, and asserts exact per-step counts.
fn import_and_run(dir: &Path, har: &str, iterations: u64, server: &loadmark_target::RunningServer) {
    let plan = format!("{har}.yaml");
    let out = loadmark()
        .current_dir(dir)
        .args(["import", "har", har, "-o", &plan, "--users", "4"])
        .args(["--iterations", &iterations.to_string(), "--think", "0.01"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let yaml = std::fs::read_to_string(dir.join(&plan)).unwrap();
    assert!(yaml.contains("token: json /token"), "{yaml}");
    assert!(yaml.contains("Bearer {{token}}"), "{yaml}");
    assert!(
        !yaml.contains("616c696365."),
        "the recorded token stays out:\n{yaml}"
    );
    let check = loadmark()
        .current_dir(dir)
        .args(["bench", &plan, "--check"])
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check));
    let (auth_before, logins_before) = (server.auth_failures(), server.logins());
    let run = loadmark()
        .current_dir(dir)
        .args(["bench", &plan, "-o", &format!("out-{har}"), "-q"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}\n{yaml}", text(&run));
    let bundle = std::fs::read_to_string(dir.join(format!("out-{har}/bundle.json"))).unwrap();
    let bundle = bundle_json(&bundle).unwrap();
    let report = &bundle.steps[0].report;
    let scenario = report
        .summary
        .scenario
        .as_ref()
        .expect("a scenario summary");
    let names: Vec<&str> = scenario.steps.iter().map(|s| s.name.as_str()).collect();
    for step in &scenario.steps {
        assert_eq!(
            step.requests, iterations,
            "{har}: step {} of {names:?}",
            step.name
        );
        assert_eq!(step.responses, iterations, "{har}: step {}", step.name);
        assert_eq!(step.checks_failed, 0, "{har}: step {}", step.name);
    }
    assert!(
        names.contains(&"POST /login") && names.contains(&"GET /items"),
        "{names:?}"
    );
    assert_eq!(
        server.auth_failures(),
        auth_before,
        "{har}: a request carried a wrong token"
    );
    assert_eq!(server.logins(), logins_before + iterations, "{har}");
}

#[test]
fn journeys_recorded_by_chromium_and_mitmproxy_run_with_exact_counts_and_no_wrong_token() {
    let dir = temp_dir("import", "har");
    let server = loadmark_target::start(loadmark_target::ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 2,
        ..Default::default()
    })
    .unwrap();
    let base = format!("http://{}", server.local_addr());
    record_with_chromium(&base, &dir.path().join("chromium.har"));
    let mitm = Mitm::start(
        &base,
        &dir.path().join("mitm.har"),
        &dir.path().join("mitm-conf"),
    );
    record_with_chromium(
        &format!("http://127.0.0.1:{}", mitm.port),
        &dir.path().join("via-mitm.har"),
    );
    mitm.stop();
    import_and_run(dir.path(), "chromium.har", 40, &server);
    import_and_run(dir.path(), "mitm.har", 40, &server);
}

/// One HTTP/1.1 request as it arrived.
#[derive(Debug, Clone, PartialEq)]
struct Captured {
    request_line: String,
    /// (lowercase name, value), sorted.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// A raw TCP server on loopback that records every request and answers 200, empty.
fn capture_server() -> (u16, Arc<Mutex<Vec<Captured>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let log = log.clone();
            std::thread::spawn(move || serve_captured(conn, &log));
        }
    });
    (port, seen)
}

fn serve_captured(conn: std::net::TcpStream, log: &Mutex<Vec<Captured>>) {
    let mut writer = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            let h = h.trim_end_matches(['\r', '\n']);
            if h.is_empty() {
                break;
            }
            let (n, v) = h.split_once(':').unwrap();
            headers.push((n.to_ascii_lowercase(), v.trim().to_string()));
        }
        let len = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .map_or(0, |(_, v)| v.parse().unwrap());
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        headers.sort();
        log.lock().unwrap().push(Captured {
            request_line: line.trim_end().to_string(),
            headers,
            body,
        });
        let _ = writer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    }
}

/// Waits for the `n`th captured request and takes the list.
fn take(seen: &Mutex<Vec<Captured>>) -> Captured {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(c) = seen.lock().unwrap().pop() {
            return c;
        }
        assert!(Instant::now() < deadline, "nothing captured");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The commands browsers' "Copy as cURL" and people write ({URL} is the capturing server).
const CORPUS: &[&str] = &[
    "curl '{URL}/plain?a=1&b=x%20y'",
    "curl -X POST {URL}/json -H 'Content-Type: application/json' --data-raw '{\"a\":1}'",
    "curl {URL}/form -d a=1 -d 'b=two words'",
    "curl {URL}/file --data-binary @body.txt",
    "curl {URL}/file -d @body.txt",
    "curl {URL}/enc --data-urlencode 'q=a b&c' --data-urlencode plain",
    "curl {URL}/j --json '{\"k\":[1,2]}'",
    "curl -u alice:s3cret {URL}/auth",
    "curl -b 'sid=1; theme=dark' {URL}/cookie",
    "curl -F name=value -F 'upload=@note.txt' {URL}/upload",
    "curl --compressed {URL}/z",
    "curl -G {URL}/search -d q=1 -d r=2",
    "curl -I {URL}/head",
    "curl -X PUT {URL}/put -H 'X-Trace: abc' -H 'Accept: text/plain' -d x",
    "curl -A 'agent/1.0' -e http://ref.test/ {URL}/ua",
    "curl -sSkL {URL}/flags",
    "curl -X DELETE {URL}/items/7",
    "curl '{URL}/api' -H 'accept: application/json' -H 'content-type: application/json' --data-raw $'{\"msg\":\"it\\'s\\nfine\"}' --compressed",
    "curl {URL}/h -H 'X-Empty;' -H 'X-A: 1' -H 'X-A: 2'",
    // Literal `{{`: no plan can hold it (`import curl` refuses it), `run --curl` sends it.
    "curl {URL}/tpl -H 'X-Tpl: {{x}}' --data-raw '{\"text\":\"Hi {{name}}\"}'",
];

/// Headers curl adds on its own that `--curl` leaves to loadmark (its own User-Agent).
fn without_defaults(c: &Captured, agent: &str) -> Captured {
    let mut c = c.clone();
    let default = |n: &str, v: &str| {
        (n == "user-agent" && v.starts_with(agent)) || (n == "accept" && v == "*/*")
    };
    c.headers.retain(|(n, v)| !default(n, v));
    c
}

#[test]
fn a_curl_corpus_sends_byte_for_byte_what_curl_sends() {
    let dir = temp_dir("import", "curl");
    std::fs::write(dir.path().join("body.txt"), "line one\r\nline two\n").unwrap();
    std::fs::write(dir.path().join("note.txt"), "a note\n").unwrap();
    let (port, seen) = capture_server();
    let url = format!("http://127.0.0.1:{port}");
    for template in CORPUS {
        let cmd = template.replace("{URL}", &url);
        let out = Command::new("bash")
            .current_dir(dir.path())
            .args(["-c", &format!("{cmd} -s -o /dev/null")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd}: {}", text(&out));
        let mut by_curl = take(&seen);
        let out = loadmark()
            .current_dir(dir.path())
            .args(["run", "--curl", &cmd, "-n", "1", "-c", "1", "-q"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd}: {}", text(&out));
        let by_loadmark = take(&seen);
        // curl draws a multipart boundary per run; loadmark's is fixed.
        if let Some((_, ct)) = by_curl.headers.iter().find(|(n, _)| n == "content-type") {
            if let Some(b) = ct.strip_prefix("multipart/form-data; boundary=") {
                let b = b.to_string();
                let body = String::from_utf8(by_curl.body.clone()).unwrap();
                by_curl.body = body
                    .replace(&b, loadmark_import::curl::BOUNDARY)
                    .into_bytes();
                for (_, v) in by_curl.headers.iter_mut() {
                    *v = v.replace(&b, loadmark_import::curl::BOUNDARY);
                }
            }
        }
        assert_eq!(
            without_defaults(&by_loadmark, "loadmark/"),
            without_defaults(&by_curl, "curl/"),
            "{cmd}"
        );
    }
    // The plan `import curl` writes sends the same request again.
    let cmd = CORPUS[1].replace("{URL}", &url);
    let out = loadmark()
        .current_dir(dir.path())
        .args(["import", "curl", "-o", "p.yaml", "--", &cmd])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let run = loadmark()
        .current_dir(dir.path())
        .args(["bench", "p.yaml", "-o", "out", "-q"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run));
    let sent = take(&seen);
    assert_eq!(sent.request_line, "POST /json HTTP/1.1");
    assert_eq!(sent.body, b"{\"a\":1}");
}

#[test]
fn bad_input_is_refused_with_its_location_or_its_name() {
    let dir = temp_dir("import", "errors");
    std::fs::write(
        dir.path().join("bad.har"),
        "{\"log\": {\n  \"entries\": [,]}}",
    )
    .unwrap();
    let out = loadmark()
        .current_dir(dir.path())
        .args(["import", "har", "bad.har"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("bad.har:2:"), "{}", text(&out));
    let out = loadmark()
        .args([
            "run",
            "--curl",
            "curl --proxy http://p:1 http://127.0.0.1:1/",
            "-n",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("unknown option --proxy"),
        "{}",
        text(&out)
    );
    // A literal `{{` has no escape in a plan: `import curl` refuses it by field, and writes
    // nothing.
    let out = loadmark()
        .current_dir(dir.path())
        .args(["import", "curl", "-o", "tpl.yaml", "--"])
        .args(["curl", "http://127.0.0.1:1/t", "--data-raw", "Hi {{name}}"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("the request's body holds a literal `{{`")
            && text(&out).contains("`loadmark run --curl` sends it as it is"),
        "{}",
        text(&out)
    );
    assert!(!dir.path().join("tpl.yaml").exists());
}

/// A recording whose request body holds `{{` (a template sent as text): that request is
/// left out, said by name; the plan written loads, passes `bench --check` and runs.
#[test]
fn a_har_request_with_a_literal_double_brace_is_left_out_and_the_plan_runs() {
    let dir = temp_dir("import", "har-braces");
    let server = target();
    let base = format!("http://{}", server.local_addr());
    let entry = |t: &str, method: &str, path: &str, body: &str| {
        let body = serde_json::json!(body);
        format!(
            r#"{{"startedDateTime":"2024-01-01T00:00:0{t}.000Z","time":5,"request":{{"method":"{method}","url":"{base}{path}","headers":[],"postData":{{"mimeType":"text/plain","text":{body}}}}},"response":{{"status":200,"headers":[],"content":{{"text":""}}}}}}"#
        )
    };
    let har = format!(
        r#"{{"log":{{"version":"1.2","entries":[{},{},{}]}}}}"#,
        entry("0", "POST", "/echo", "a=1"),
        entry("1", "POST", "/echo", "Hi {{name}}"),
        entry("2", "GET", "/status", ""),
    );
    std::fs::write(dir.path().join("t.har"), har).unwrap();
    let out = loadmark()
        .current_dir(dir.path())
        .args(["import", "har", "t.har", "-o", "t.yaml", "--think", "none"])
        .args(["--iterations", "10"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("\"POST /echo\": left out: its body holds a literal `{{`"),
        "{}",
        text(&out)
    );
    let steps = check_and_run(dir.path(), "t.yaml");
    let counts: Vec<_> = steps
        .iter()
        .map(|s| (s.0.as_str(), s.1, s.2, s.3))
        .collect();
    assert_eq!(
        counts,
        [("POST /echo", 10, 10, 0), ("GET /status", 10, 10, 0)]
    );
}

/// The built-in target, for the OpenAPI and Postman journeys.
fn target() -> loadmark_target::RunningServer {
    loadmark_target::start(loadmark_target::ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 2,
        ..Default::default()
    })
    .unwrap()
}

/// Checks `plan` with `bench --check`, runs it, and returns each step's (name, requests,
/// responses, failed checks).
fn check_and_run(dir: &Path, plan: &str) -> Vec<(String, u64, u64, u64)> {
    let check = loadmark()
        .current_dir(dir)
        .args(["bench", plan, "--check"])
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check));
    let out = format!("out-{plan}");
    let run = loadmark()
        .current_dir(dir)
        .args(["bench", plan, "-o", &out, "-q"])
        .output()
        .unwrap();
    let yaml = std::fs::read_to_string(dir.join(plan)).unwrap();
    assert!(run.status.success(), "{}\n{yaml}", text(&run));
    let bundle = std::fs::read_to_string(dir.join(format!("{out}/bundle.json"))).unwrap();
    let bundle = bundle_json(&bundle).unwrap();
    let scenario = bundle.steps[0].report.summary.scenario.clone().unwrap();
    scenario
        .steps
        .iter()
        .map(|s| (s.name.clone(), s.requests, s.responses, s.checks_failed))
        .collect()
}

/// Each scenario's steps as (name, requests, responses, failed checks).
type ScenarioCounts = Vec<(String, Vec<(String, u64, u64, u64)>)>;

/// Checks a plan with `scenarios:` (`bench --check`), runs it, and returns each scenario's
/// steps' counts (the report's `summary.scenarios[i].scenario.steps[j]`).
fn check_and_run_scenarios(dir: &Path, plan: &str) -> ScenarioCounts {
    let check = loadmark()
        .current_dir(dir)
        .args(["bench", plan, "--check"])
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check));
    let out = format!("out-{plan}");
    let run = loadmark()
        .current_dir(dir)
        .args(["bench", plan, "-o", &out, "-q"])
        .output()
        .unwrap();
    let yaml = std::fs::read_to_string(dir.join(plan)).unwrap();
    assert!(run.status.success(), "{}\n{yaml}", text(&run));
    let bundle = std::fs::read_to_string(dir.join(format!("{out}/bundle.json"))).unwrap();
    let bundle = bundle_json(&bundle).unwrap();
    let summary = &bundle.steps[0].report.summary;
    assert!(summary.scenario.is_none(), "several scenarios, not one");
    summary
        .scenarios
        .iter()
        .map(|sc| {
            let steps = sc
                .scenario
                .steps
                .iter()
                .map(|s| (s.name.clone(), s.requests, s.responses, s.checks_failed))
                .collect();
            (sc.name.clone(), steps)
        })
        .collect()
}

/// Asserts every step of every scenario ran exactly `n` times, all answered, no check failed.
fn assert_exact(scenarios: &ScenarioCounts, n: u64) {
    for (scenario, steps) in scenarios {
        assert!(!steps.is_empty(), "{scenario}");
        for (step, requests, responses, failed) in steps {
            assert_eq!(
                (*requests, *responses, *failed),
                (n, n, 0),
                "{scenario}: {step}"
            );
        }
    }
}

fn scenario_names(scenarios: &ScenarioCounts) -> Vec<(&str, Vec<&str>)> {
    scenarios
        .iter()
        .map(|(n, steps)| (n.as_str(), steps.iter().map(|s| s.0.as_str()).collect()))
        .collect()
}

#[test]
fn an_openapi_document_of_the_target_runs_with_exact_counts_and_no_wrong_token() {
    let dir = temp_dir("import", "openapi");
    let server = target();
    let base = format!("http://{}", server.local_addr());
    let doc = workspace().join("examples/import/target.openapi.yaml");
    let out = loadmark()
        .current_dir(dir.path())
        .args(["import", "openapi", doc.to_str().unwrap(), "-o", "api.yaml"])
        .args(["--base-url", &base, "--check-schema", "--users", "3"])
        .args(["--iterations", "30"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // The data file holds the credentials the document's security schemes ask for.
    let token = loadmark_target::token_for("alice");
    let csv = std::fs::read_to_string(dir.path().join("api.secrets.csv")).unwrap();
    assert_eq!(csv, "bearer,session\nREPLACE-ME,REPLACE-ME\n");
    std::fs::write(
        dir.path().join("api.secrets.csv"),
        format!("bearer,session\n{token},{token}\n"),
    )
    .unwrap();
    let (auth, cookie) = (server.auth_failures(), server.cookie_failures());
    let steps = check_and_run(dir.path(), "api.yaml");
    let names: Vec<&str> = steps.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "status",
            "json",
            "statusCode",
            "bytes",
            "echo",
            "login",
            "listItems",
            "getItem",
            "me"
        ]
    );
    for (name, requests, responses, failed) in &steps {
        assert_eq!((*requests, *responses, *failed), (30, 30, 0), "{name}");
    }
    assert_eq!(
        server.auth_failures(),
        auth,
        "a request carried a wrong token"
    );
    assert_eq!(server.cookie_failures(), cookie);
    // Read-only: the writes are left out, and said.
    let out = loadmark()
        .current_dir(dir.path())
        .args(["import", "openapi", doc.to_str().unwrap(), "--read-only"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("method: POST"), "{}", text(&out));
    assert!(
        text(&out).contains("left out 2 operation(s) by --tag/--methods: POST /echo, POST /login")
    );
    // --per-tag: a scenario per tag in one plan, each with the load asked for.
    let out = loadmark()
        .current_dir(dir.path())
        .args([
            "import",
            "openapi",
            doc.to_str().unwrap(),
            "-o",
            "tags.yaml",
        ])
        .args(["--base-url", &base, "--per-tag", "--users", "2"])
        .args(["--iterations", "20"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("GET /me (session, items: under session)"),
        "{}",
        text(&out)
    );
    std::fs::write(
        dir.path().join("tags.secrets.csv"),
        format!("bearer,session\n{token},{token}\n"),
    )
    .unwrap();
    let (auth, cookie) = (server.auth_failures(), server.cookie_failures());
    let scenarios = check_and_run_scenarios(dir.path(), "tags.yaml");
    assert_eq!(
        scenario_names(&scenarios),
        [
            ("probes", vec!["status", "json", "statusCode", "bytes"]),
            ("untagged", vec!["echo"]),
            ("session", vec!["login", "me"]),
            ("items", vec!["listItems", "getItem"]),
        ]
    );
    assert_exact(&scenarios, 20);
    assert_eq!(server.auth_failures(), auth, "a wrong token");
    assert_eq!(server.cookie_failures(), cookie);
}

#[test]
fn swaggers_petstore_imports_a_step_per_operation_and_passes_check() {
    let dir = temp_dir("import", "petstore");
    let doc = workspace().join("crates/import/testdata/petstore3.openapi.yaml");
    let out = loadmark()
        .current_dir(dir.path())
        .args([
            "import",
            "openapi",
            doc.to_str().unwrap(),
            "-o",
            "pets.yaml",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let yaml = std::fs::read_to_string(dir.path().join("pets.yaml")).unwrap();
    assert_eq!(yaml.matches("  - name: ").count(), 19, "{yaml}");
    assert!(yaml.contains("Bearer {{csv petstore_auth}}"), "{yaml}");
    let check = loadmark()
        .current_dir(dir.path())
        .args(["bench", "pets.yaml", "--check"])
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check));
    // A scenario per tag: pet, store, user.
    let out = loadmark()
        .current_dir(dir.path())
        .args(["import", "openapi", doc.to_str().unwrap(), "--per-tag"])
        .args(["-o", "tags.yaml", "--duration", "5s"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let check = loadmark()
        .current_dir(dir.path())
        .args(["bench", "tags.yaml", "--check"])
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check));
    assert!(
        text(&check).contains("scenarios pet, store, user"),
        "{}",
        text(&check)
    );
}

#[test]
fn a_postman_collection_of_the_journey_runs_with_exact_counts_and_no_wrong_token() {
    let dir = temp_dir("import", "postman");
    let server = target();
    let examples = workspace().join("examples/import");
    std::fs::write(
        dir.path().join("env.json"),
        format!(
            r#"{{"name": "test", "values": [{{"key": "baseUrl", "value": "http://{}", "enabled": true}}]}}"#,
            server.local_addr()
        ),
    )
    .unwrap();
    let collection = examples.join("journey.postman_collection.json");
    let out = loadmark()
        .current_dir(dir.path())
        .args(["import", "postman", collection.to_str().unwrap()])
        .args([
            "--environment",
            "env.json",
            "--folder",
            "Journey",
            "-o",
            "journey.yaml",
        ])
        .args(["--users", "4", "--iterations", "40"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("test script line not translated: pm.expect(pm.response.json().items.length).to.be.above(0);"),
        "{}",
        text(&out)
    );
    let (auth, logins) = (server.auth_failures(), server.logins());
    let steps = check_and_run(dir.path(), "journey.yaml");
    let names: Vec<&str> = steps.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(names, ["Log in", "List items", "Open item"]);
    for (name, requests, responses, failed) in &steps {
        assert_eq!((*requests, *responses, *failed), (40, 40, 0), "{name}");
    }
    assert_eq!(
        server.auth_failures(),
        auth,
        "a request carried a wrong token"
    );
    assert_eq!(server.logins(), logins + 40);
    assert_eq!(server.login_users().get("alice"), Some(&40));
    // Without --folder: a scenario per folder in one plan, each with 4 users and 40
    // iterations, each with its own token.
    let out = loadmark()
        .current_dir(dir.path())
        .args(["import", "postman", collection.to_str().unwrap()])
        .args(["--environment", "env.json", "-o", "all.yaml"])
        .args(["--users", "4", "--iterations", "40"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let (auth, logins) = (server.auth_failures(), server.logins());
    let scenarios = check_and_run_scenarios(dir.path(), "all.yaml");
    assert_eq!(
        scenario_names(&scenarios),
        [
            ("Journey", vec!["Log in", "List items", "Open item"]),
            ("Health", vec!["Status", "Echo form"]),
        ]
    );
    assert_exact(&scenarios, 40);
    assert_eq!(server.auth_failures(), auth, "a wrong token");
    assert_eq!(server.logins(), logins + 40);
}

#[test]
fn bad_openapi_and_postman_documents_are_refused_with_location_or_versions() {
    let dir = temp_dir("import", "bad-docs");
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write("bad.yaml", "openapi: 3.0.0\npaths:\n  /a: [\n");
    write("swagger.json", r#"{"swagger": "2.0", "paths": {}}"#);
    write(
        "v1.json",
        r#"{"id": "x", "name": "old", "order": [], "requests": []}"#,
    );
    let cases = [
        (["openapi", "bad.yaml"], "bad.yaml:4:"),
        (
            ["openapi", "swagger.json"],
            "Swagger 2.0 is not supported (supported: OpenAPI 3.0.x, 3.1.x",
        ),
        (
            ["postman", "v1.json"],
            "v1 is not supported (supported: v2.0, v2.1",
        ),
    ];
    for (args, expected) in cases {
        let out = loadmark()
            .current_dir(dir.path())
            .arg("import")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(expected), "{args:?}: {}", text(&out));
    }
}
