//! wrk's Lua scripts under `loadmark run -s` (issue 18): the scripts in `tests/scripts/` were
//! written for these tests; what they send is checked on the built-in target's side (it
//! records every request carrying `X-Loadmark-Seq`, which the scripts set).

mod common;

use common::*;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Output;

fn script(name: &str) -> String {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "scripts", name]
        .iter()
        .collect();
    path.to_str().unwrap().to_string()
}

fn run(args: &[&str]) -> Output {
    // Every run here is bounded by -n or -d, and --timeout bounds each request.
    // Common flags go before the script's `--` arguments.
    loadmark()
        .args(&args[..1])
        .args(["-q", "--timeout", "10s"])
        .args(&args[1..])
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The report written with -o.
fn read_report(dir: &TempDir) -> (loadmark_report::Report, String) {
    let json = std::fs::read_to_string(dir.path().join("r.json")).unwrap();
    (report_json(&json).unwrap(), json)
}

fn header<'a>(tag: &'a loadmark_target::Tag, name: &str) -> Option<&'a str> {
    tag.headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn counter_script_paths_all_arrive_numbered_per_thread() {
    let server = target();
    server.record_tags();
    let dir = temp_dir("wrk-scripts", "counter");
    let url = format!("http://{}/", server.local_addr());
    let out_file = dir.path().join("r.json");
    let o = run(&[
        "run",
        &url,
        "-c",
        "4",
        "-t",
        "2",
        "-n",
        "400",
        "-s",
        &script("counter.lua"),
        "-o",
        out_file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let tags = server.tags();
    assert_eq!(tags.len(), 400, "{}", text(&o));
    // Per thread id: request numbers with no gap and no repeat, each at its own path.
    let mut by_thread: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for tag in &tags {
        let (id, n) = (tag.seq / 1_000_000, tag.seq % 1_000_000);
        assert_eq!(tag.path, format!("/bytes/{n}"));
        by_thread.entry(id).or_default().push(n);
    }
    assert_eq!(by_thread.keys().copied().collect::<Vec<_>>(), vec![1, 2]);
    for (id, ns) in &mut by_thread {
        ns.sort_unstable();
        // As in wrk, the first thread's first request() is called once before the load
        // to check the request, so that thread's numbers start at 2.
        let first = if *id == 1 { 2 } else { 1 };
        let expected: Vec<u64> = (first..first + ns.len() as u64).collect();
        assert_eq!(*ns, expected, "thread {id}");
    }
    let (report, _) = read_report(&dir);
    assert_eq!(report.totals.responses, 400);
    let named = report
        .plan
        .script
        .as_ref()
        .expect("the report names the script");
    assert!(named.path.ends_with("counter.lua"), "{named:?}");
}

#[test]
fn post_script_body_and_auth_arrive_and_the_secret_is_redacted() {
    let server = target();
    server.record_tags();
    let dir = temp_dir("wrk-scripts", "post");
    let url = format!("http://{}/", server.local_addr());
    let out_file = dir.path().join("r.json");
    let o = run(&[
        "run",
        &url,
        "-c",
        "2",
        "-t",
        "2",
        "-n",
        "200",
        "-s",
        &script("post.lua"),
        "-o",
        out_file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let tags = server.tags();
    assert_eq!(tags.len(), 200);
    for tag in &tags {
        assert_eq!((tag.method.as_str(), tag.path.as_str()), ("POST", "/echo"));
        assert_eq!(header(tag, "authorization"), Some("Bearer s3cret-token"));
        assert_eq!(header(tag, "content-length"), Some("18"));
        assert_eq!(
            header(tag, "content-type"),
            Some("application/x-www-form-urlencoded")
        );
    }
    // response() saw every echoed body equal to what was sent; done() added the two
    // threads' counts up through thread:get.
    assert!(stdout(&o).contains("echoed 200 of 200"), "{}", text(&o));
    let (report, json) = read_report(&dir);
    assert_eq!(report.plan.request.method, "POST");
    assert!(
        !json.contains("s3cret-token"),
        "the script's secret header is redacted"
    );
    assert!(report
        .plan
        .request
        .headers
        .iter()
        .any(|(n, _)| n == "Authorization"));
}

#[test]
fn pipelined_requests_are_each_a_response() {
    let server = target();
    server.record_tags();
    let dir = temp_dir("wrk-scripts", "pipeline");
    let url = format!("http://{}/", server.local_addr());
    let out_file = dir.path().join("r.json");
    // -n counts request() calls (writes); each carries three requests.
    let o = run(&[
        "run",
        &url,
        "-c",
        "2",
        "-t",
        "1",
        "-n",
        "100",
        "-s",
        &script("pipeline.lua"),
        "-o",
        out_file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let tags = server.tags();
    assert_eq!(tags.len(), 300);
    for i in 1..=3 {
        let path = format!("/bytes/{i}");
        assert_eq!(
            tags.iter().filter(|t| t.path == path).count(),
            100,
            "{path}"
        );
    }
    let (report, _) = read_report(&dir);
    assert_eq!(report.totals.responses, 300);
    assert_eq!(report.totals.status.get(200), 300);
}

#[test]
fn done_prints_what_wrk_would_from_loadmarks_totals() {
    let server = target();
    let dir = temp_dir("wrk-scripts", "done");
    let url = format!("http://{}/status", server.local_addr());
    let out_file = dir.path().join("r.json");
    let o = run(&[
        "run",
        &url,
        "-c",
        "2",
        "-t",
        "2",
        "-n",
        "300",
        "-s",
        &script("report.lua"),
        "-o",
        out_file.to_str().unwrap(),
        "--",
        "a",
        "b",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = stdout(&o);
    // init(args) in each thread's state: args[0] is the URL, then the arguments after --.
    let init = format!("init args {url} a b");
    assert_eq!(out.matches(&init).count(), 2, "{}", text(&o));
    let (report, _) = read_report(&dir);
    let field = |prefix: &str| -> Vec<f64> {
        let line = out
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} line in {out}"));
        line[prefix.len()..]
            .split_whitespace()
            .map(|w| w.parse().unwrap_or(f64::NAN))
            .collect()
    };
    let summary = field("done requests ");
    assert_eq!(summary[0], 300.0);
    assert_eq!(summary[4], report.totals.bytes_read as f64);
    assert_eq!(field("done errors "), vec![0.0; 5]);
    let latency = field("done latency ");
    let s = &report.summary.latency;
    assert_eq!(latency[0], s.min_us as f64);
    assert_eq!(latency[1], s.max_us as f64);
    let p50 = field("done p50 ")[0];
    let p99 = field("done p99 ")[0];
    assert!(
        latency[0] <= p50 && p50 <= p99 && p99 <= latency[1],
        "{out}"
    );
    let distinct = field("done distinct ");
    assert_eq!(
        distinct[2], 300.0,
        "latency(i) counts add up to the requests"
    );
    assert!(out.contains("done bit 00ff 2147483647"), "{out}");
    // The report names the script and its arguments.
    let named = report.plan.script.unwrap();
    assert_eq!(named.args, vec!["a", "b"]);
    assert!(out.contains("wrk script"), "{out}");
}

#[test]
fn delay_spaces_requests_and_thread_stop_ends_the_thread() {
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    let started = std::time::Instant::now();
    // -d 60s: only thread:stop() can end this run early.
    let o = run(&[
        "run",
        &url,
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "60s",
        "-s",
        &script("stop.lua"),
    ]);
    let took = started.elapsed();
    assert!(o.status.success(), "{}", text(&o));
    // Five responses stop the thread; the other connection may have one in flight then.
    let served = server.requests_served();
    assert!((5..=6).contains(&served), "{served} served\n{}", text(&o));
    // Each connection waits 20 ms before each request: at least 3 waits on one of them.
    assert!(took >= std::time::Duration::from_millis(60), "{took:?}");
    // Far below 60s however busy the machine: the stop ended it.
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
}

#[test]
fn broken_scripts_exit_2_before_the_load_naming_file_and_line() {
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    for (name, words) in [
        ("broken_syntax.lua", "broken_syntax.lua:3:".to_string()),
        ("broken_init.lua", "broken_init.lua:4:".to_string()),
        ("missing.lua", "missing.lua: No such file".to_string()),
    ] {
        let o = run(&["run", &url, "-n", "5", "-s", &script(name)]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", text(&o));
        assert!(text(&o).contains(&words), "{name}: {}", text(&o));
    }
    let o = run(&[
        "run",
        &url,
        "-R",
        "100",
        "-n",
        "5",
        "-s",
        &script("stop.lua"),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("delay()"), "{}", text(&o));
    assert_eq!(server.requests_served(), 0, "no load before the refusals");
}

#[test]
fn runtime_errors_in_request_are_counted_with_their_line() {
    let server = target();
    let dir = temp_dir("wrk-scripts", "runtime");
    let url = format!("http://{}/status", server.local_addr());
    let out_file = dir.path().join("r.json");
    let o = run(&[
        "run",
        &url,
        "-c",
        "1",
        "-t",
        "1",
        "-n",
        "20",
        "-s",
        &script("broken_runtime.lua"),
        "-o",
        out_file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (report, _) = read_report(&dir);
    // Calls 2-4 make requests (call 1 was the check before the load); the other 17 fail.
    assert_eq!(report.totals.responses, 3);
    assert_eq!(server.requests_served(), 3);
    let script_errors = report
        .totals
        .errors
        .get(loadmark_metrics::ErrorKind::Script);
    assert_eq!(script_errors.count, 17);
    let example = script_errors.first_example.as_deref().unwrap();
    assert!(
        example.contains("broken_runtime.lua:8: no more requests after 4"),
        "{example}"
    );

    let o = run(&[
        "run",
        &url,
        "-c",
        "1",
        "-t",
        "1",
        "-n",
        "10",
        "-s",
        &script("broken_type.lua"),
        "-o",
        out_file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (report, _) = read_report(&dir);
    assert_eq!(report.totals.responses, 1);
    let script_errors = report
        .totals
        .errors
        .get(loadmark_metrics::ErrorKind::Script);
    assert_eq!(script_errors.count, 9);
    let example = script_errors.first_example.as_deref().unwrap();
    assert!(example.contains("returned a number"), "{example}");
    assert!(example.contains("broken_type.lua:4"), "{example}");
}

#[test]
fn lookup_connect_thread_addr_and_response_errors() {
    let server = target();
    let (_held, refused) = refusing_port();
    let dir = temp_dir("wrk-scripts", "lookup");
    let addr = server.local_addr();
    let url = format!("http://{addr}/json");
    let out_file = dir.path().join("r.json");
    let refused = refused.to_string();
    let o = run(&[
        "run",
        &url,
        "-c",
        "2",
        "-t",
        "2",
        "-n",
        "6",
        "-s",
        &script("lookup.lua"),
        "-o",
        out_file.to_str().unwrap(),
        "--",
        &refused,
    ]);
    let out = stdout(&o);
    assert_eq!(
        out.matches(&format!("setup addr {addr}\n")).count(),
        2,
        "{}",
        text(&o)
    );
    let refused_line = format!("lookup 1 127.0.0.1:{refused} false");
    assert_eq!(out.matches(&refused_line).count(), 2, "{}", text(&o));
    assert_eq!(
        out.matches(&format!("lookup own {addr} true")).count(),
        2,
        "{out}"
    );
    // Every response reached the client and then failed in response(): a script error,
    // with its line and what it saw, never a crash.
    let (report, _) = read_report(&dir);
    let script_errors = report
        .totals
        .errors
        .get(loadmark_metrics::ErrorKind::Script);
    assert_eq!(script_errors.count, 6, "{}", text(&o));
    assert_eq!(server.requests_served(), 6);
    let example = script_errors.first_example.as_deref().unwrap();
    assert!(
        example.contains("lookup.lua:18: response saw 200 application/json"),
        "{example}"
    );
    // Nothing succeeded as far as the run knows: exit 1, as for any run without success.
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

/// A server that ignores `Connection: close`: it answers every request 200 and keeps the
/// connection open, keeping each request head as received under its connection's number.
struct KeepsOpen {
    addr: std::net::SocketAddr,
    heads: std::sync::Arc<std::sync::Mutex<Vec<(usize, String)>>>,
}

impl KeepsOpen {
    fn start() -> KeepsOpen {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let server = KeepsOpen {
            addr: listener.local_addr().unwrap(),
            heads: Default::default(),
        };
        let heads = server.heads.clone();
        std::thread::spawn(move || {
            for (number, mut conn) in listener.incoming().flatten().enumerate() {
                let heads = heads.clone();
                std::thread::spawn(move || {
                    let mut seen = Vec::new();
                    let mut buf = [0u8; 4096];
                    loop {
                        // GET requests only: a head is a whole request.
                        while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head: Vec<u8> = seen.drain(..end + 4).collect();
                            let head = String::from_utf8_lossy(&head).into_owned();
                            heads.lock().unwrap().push((number, head));
                            let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                            if conn.write_all(reply).is_err() {
                                return;
                            }
                        }
                        match conn.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => seen.extend_from_slice(&buf[..n]),
                        }
                    }
                });
            }
        });
        server
    }

    /// The request heads each connection carried, connections without a request left out
    /// (wrk's `wrk.resolve` probes the address with a connection of its own before the load).
    fn per_connection(&self) -> Vec<Vec<String>> {
        let mut by: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for (number, head) in self.heads.lock().unwrap().iter() {
            by.entry(*number).or_default().push(head.clone());
        }
        by.into_values().collect()
    }
}

/// --no-keepalive holds for a script's requests as for the plan's: each says `Connection:
/// close` (added when the script's bytes lack it) and loadmark closes its connection after
/// it, even when the server keeps it open; a pipelined batch says it on its last request.
#[test]
fn no_keepalive_closes_after_every_script_request_though_the_server_keeps_it_open() {
    let dir = temp_dir("wrk-scripts", "no-keepalive");
    let lua = dir.path().join("s.lua");
    std::fs::write(
        &lua,
        "request = function() return wrk.format(\"GET\", \"/\") end\n",
    )
    .unwrap();
    // N script calls on 2 connections under --no-keepalive, against a server of its own.
    let run_against = |server: &KeepsOpen, n: &str, extra: &[&str]| {
        let url = format!("http://{}/", server.addr);
        let args = ["run", &url, "-c", "2", "-t", "1", "-n", n, "--no-keepalive"];
        run(&[&args[..], extra].concat())
    };
    let server = KeepsOpen::start();
    let o = run_against(
        &server,
        "10",
        &["-s", lua.to_str().unwrap(), "--format", "json"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let report = report_json(&stdout(&o)).unwrap();
    assert_eq!(report.summary.requests.responses, 10);
    assert_eq!(report.summary.connections_opened, 10);
    let conns = server.per_connection();
    assert_eq!(conns.len(), 10, "a connection per request: {conns:?}");
    for heads in &conns {
        assert_eq!(heads.len(), 1, "{heads:?}");
        assert!(heads[0].contains("\r\nConnection: close\r\n"), "{heads:?}");
    }

    // Pipelined: 5 writes of three requests, each write on a connection of its own.
    let server = KeepsOpen::start();
    let o = run_against(&server, "5", &["-s", &script("pipeline.lua")]);
    assert!(o.status.success(), "{}", text(&o));
    let conns = server.per_connection();
    assert_eq!(conns.len(), 5, "{conns:?}");
    for heads in &conns {
        let close: Vec<bool> = heads
            .iter()
            .map(|h| h.contains("Connection: close"))
            .collect();
        assert_eq!(close, [false, false, true], "{heads:?}");
    }
}
