//! `-x/--proxy` and the `*_PROXY` variables end to end, through real proxies on loopback:
//! Debian's squid (HTTP forwarding and CONNECT, Basic credentials checked by its
//! basic_ncsa_auth helper) and microsocks (SOCKS5, RFC 1929 credentials), each started here
//! and stopped by its pid. Every count is checked three ways: the report, the built-in
//! target's own counters, and the proxy's access log (squid) or the target's connection
//! count (microsocks, which logs nothing).

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{port, retry_on_port_conflict, target, wait_until, Daemon, TempDir};
use loadmark_target::{start, RunningServer, ServerConfig};
use loadmark_test_support::PATIENCE;
use serde_json::Value;

/// The environment variables a proxy may come from: cleared for every run, so the machine's
/// own settings cannot change what a test means.
const PROXY_VARS: [&str; 8] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
];

/// squid's basic_ncsa_auth file: alice's password is "s3cret" (MD5-crypt, `openssl passwd -1
/// -salt lmproxy s3cret`).
const PASSWD: &str = "alice:$1$lmproxy$lfpoquWpB6/1BerNwOmOX.\n";

struct Squid {
    daemon: Option<Daemon>,
    dir: TempDir,
    port: u16,
    /// Log lines before the tests' own: the readiness probe's connection, which squid logs
    /// as a transaction that ended before any request.
    before: usize,
}

impl Squid {
    /// squid in the foreground (-N) on a leased loopback port, with no cache, its logs and
    /// pid file in a temporary directory; with `auth`, only alice (Basic) may use it.
    fn start(auth: bool) -> Squid {
        let dir = TempDir::new("proxy-squid");
        // Started as root, squid drops to its cache_effective_user (Debian: proxy), which
        // must be able to write its logs here.
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        )
        .unwrap();
        let d = dir.path().display();
        let access = if auth {
            std::fs::write(dir.path().join("passwd"), PASSWD).unwrap();
            format!(
                "auth_param basic program /usr/lib/squid/basic_ncsa_auth {d}/passwd\n\
                 auth_param basic children 1\n\
                 acl users proxy_auth REQUIRED\n\
                 http_access allow lo users\n"
            )
        } else {
            "http_access allow lo\n".to_string()
        };
        let (daemon, port) = retry_on_port_conflict("squid", || {
            let port = port();
            let conf = format!(
                "http_port 127.0.0.1:{port}\n\
                 acl lo src 127.0.0.1/32 ::1\n\
                 {access}\
                 http_access deny all\n\
                 cache deny all\n\
                 access_log stdio:{d}/access.log squid\n\
                 cache_log {d}/cache.log\n\
                 pid_filename {d}/squid.pid\n\
                 coredump_dir {d}\n\
                 dns_nameservers 127.0.0.1\n\
                 pinger_enable off\n\
                 netdb_filename none\n\
                 shutdown_lifetime 0 seconds\n"
            );
            let path = dir.path().join("squid.conf");
            std::fs::write(&path, conf).map_err(|e| e.to_string())?;
            let mut command = Command::new(squid_binary());
            command.arg("-N").arg("-f").arg(&path);
            let daemon = Daemon::spawn("squid", command).map_err(|e| e.to_string())?;
            match daemon.wait_for_port(port, PATIENCE) {
                Ok(()) => Ok((daemon, port)),
                Err(e) => {
                    let log =
                        std::fs::read_to_string(dir.path().join("cache.log")).unwrap_or_default();
                    Err(format!("{e}\n{log}"))
                }
            }
        });
        let mut squid = Squid {
            daemon: Some(daemon),
            dir,
            port,
            before: 0,
        };
        wait_until("squid's log line of the readiness probe", || {
            squid
                .log()
                .iter()
                .any(|l| l.contains("error:transaction-end-before-headers"))
        });
        squid.before = squid.log().len();
        assert_eq!(squid.before, 1, "{:#?}", squid.log());
        squid
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The access log's lines so far (one per forwarded request or per tunnel, written when
    /// it ends).
    fn log(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("access.log"))
            .unwrap_or_default()
            .lines()
            .skip(self.before)
            .map(str::to_string)
            .collect()
    }

    /// Waits until the log holds `n` lines after the first `from`, and returns those.
    fn log_after(&self, from: usize, n: usize) -> Vec<String> {
        wait_until(&format!("{n} new lines in squid's access.log"), || {
            self.log().len() >= from + n
        });
        let lines = self.log();
        assert_eq!(
            lines.len(),
            from + n,
            "more lines than requests:\n{lines:#?}"
        );
        lines[from..].to_vec()
    }
}

impl Drop for Squid {
    fn drop(&mut self) {
        if let Some(daemon) = self.daemon.take() {
            daemon.stop(PATIENCE);
        }
    }
}

fn squid_binary() -> PathBuf {
    ["/usr/sbin/squid", "/usr/bin/squid"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("squid is installed (Debian package squid; .ci/run installs it)")
}

/// microsocks on a leased loopback port; with `credentials`, RFC 1929 user/password only.
fn microsocks(credentials: Option<(&str, &str)>) -> (Daemon, u16) {
    retry_on_port_conflict("microsocks", || {
        let port = port();
        let mut command = Command::new("microsocks");
        command.args(["-i", "127.0.0.1", "-p", &port.to_string()]);
        if let Some((user, password)) = credentials {
            command.args(["-u", user, "-P", password]);
        }
        let daemon = Daemon::spawn("microsocks", command).map_err(|e| e.to_string())?;
        daemon.wait_for_port(port, PATIENCE)?;
        Ok((daemon, port))
    })
}

/// The built-in target with TLS (its certificate written for --cacert) and HTTP/2 (ALPN).
fn tls_target(dir: &TempDir) -> (RunningServer, PathBuf) {
    let server = start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 1,
        tls: true,
        http2: true,
        ..Default::default()
    })
    .unwrap();
    let ca = dir.path().join("target.pem");
    std::fs::write(&ca, server.tls_cert_pem().unwrap()).unwrap();
    (server, ca)
}

/// Runs loadmark with a JSON report on stdout, the proxy variables cleared and `env` set;
/// returns the exit code, the report (checked against the schema) and stderr.
fn run(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, Value, String) {
    let mut command = common::loadmark();
    for var in PROXY_VARS {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    let out = command
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = match common::report_json(&stdout) {
        Ok(_) => serde_json::from_str(&stdout).unwrap(),
        Err(e) => panic!("no report ({e}): {args:?}\nstderr: {stderr}\nstdout: {stdout}"),
    };
    (out.status.code(), report, stderr)
}

fn count(report: &Value, pointer: &str) -> u64 {
    report
        .pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} in {report:#}"))
}

fn connect_errors(report: &Value) -> (u64, String) {
    let stat = &report["summary"]["errors"]["connect"];
    (
        stat["count"].as_u64().unwrap_or(0),
        stat["first_example"].as_str().unwrap_or("").to_string(),
    )
}

#[test]
fn http_targets_are_forwarded_by_squid_one_log_line_per_request() {
    let squid = Squid::start(false);
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    let proxy = squid.url();

    // -x: 200 requests, each forwarded once in absolute form.
    let (code, report, stderr) = run(&["run", &url, "-x", &proxy, "-n", "200", "-c", "4"], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(count(&report, "/summary/requests/responses"), 200);
    assert_eq!(count(&report, "/summary/requests/errors"), 0);
    assert_eq!(server.requests_served(), 200);
    let lines = squid.log_after(0, 200);
    let forwarded = format!("GET {url} ");
    assert!(
        lines
            .iter()
            .all(|l| l.contains("TCP_MISS/200") && l.contains(&forwarded)),
        "{lines:#?}"
    );
    assert_eq!(
        report["run"]["proxy"].as_str(),
        Some(format!("{proxy} (from --proxy)").as_str())
    );
    assert_eq!(
        report["run"]["target_addr"],
        format!("127.0.0.1:{}", squid.port)
    );

    // The environment, as curl reads it: http_proxy (and HTTP_PROXY), with Connection: close.
    for var in ["http_proxy", "HTTP_PROXY"] {
        let (code, report, stderr) = run(
            &["run", &url, "-n", "30", "-c", "2", "--no-keepalive"],
            &[(var, &proxy)],
        );
        assert_eq!(code, Some(0), "{stderr}");
        assert_eq!(count(&report, "/summary/requests/responses"), 30);
        assert_eq!(count(&report, "/summary/connections_opened"), 30);
        assert!(
            report["run"]["proxy"]
                .as_str()
                .unwrap()
                .ends_with(&format!("(from {var})")),
            "{}",
            report["run"]
        );
    }
    assert_eq!(server.requests_served(), 260);
    squid.log_after(200, 60);

    // NO_PROXY names the host: straight to the target, squid sees nothing; `-x ''` ignores
    // the environment's proxy.
    for (args, env) in [
        (
            vec!["-n", "25"],
            vec![
                ("http_proxy", proxy.as_str()),
                ("NO_PROXY", "localhost,127.0.0.1"),
            ],
        ),
        (
            vec!["-n", "25", "-x", ""],
            vec![("http_proxy", proxy.as_str())],
        ),
    ] {
        let mut all = vec!["run", url.as_str()];
        all.extend(args);
        let (code, report, stderr) = run(&all, &env);
        assert_eq!(code, Some(0), "{stderr}");
        assert!(report["run"].get("proxy").is_none(), "{}", report["run"]);
    }
    assert_eq!(server.requests_served(), 310);
    assert_eq!(squid.log().len(), 260);

    // The text report says that a proxy carried the run.
    let out = common::loadmark()
        .args(["run", &url, "-x", &proxy, "-n", "5", "-c", "1"])
        .env_remove("http_proxy")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("through the proxy {proxy} (from --proxy)")),
        "{text}"
    );
}

#[test]
fn https_http2_h2c_and_websocket_go_through_squids_connect_tunnels() {
    let squid = Squid::start(false);
    let dir = TempDir::new("proxy-tunnels");
    let (tls, ca) = tls_target(&dir);
    let ca = ca.to_str().unwrap();
    let proxy = squid.url();
    let https = format!("https://{}/status", tls.local_addr());
    let authority = format!("CONNECT {} ", tls.local_addr());
    let mut seen = 0;

    // HTTPS over HTTP/1.1: one tunnel per connection, every request through one.
    let (code, report, stderr) = run(
        &["run", &https, "--cacert", ca, "-n", "150", "-c", "3"],
        &[("HTTPS_PROXY", &proxy)],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(count(&report, "/summary/requests/responses"), 150);
    let h1_connections = count(&report, "/summary/connections_opened");
    assert_eq!(tls.requests_served(), 150);
    assert_eq!(tls.connections_accepted(), h1_connections);
    let lines = squid.log_after(seen, h1_connections as usize);
    seen += lines.len();
    assert!(
        lines
            .iter()
            .all(|l| l.contains("TCP_TUNNEL/200") && l.contains(&authority)),
        "{lines:#?}"
    );

    // HTTP/2 over TLS: ALPN inside the tunnel; the refusal check before the run (does the
    // server offer h2?) is one more tunnel.
    let (code, report, stderr) = run(
        &[
            "run",
            &https,
            "--cacert",
            ca,
            "-x",
            &proxy,
            "--http2",
            "--streams",
            "4",
            "-n",
            "200",
            "-c",
            "2",
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(count(&report, "/summary/requests/responses"), 200);
    assert_eq!(tls.http2_requests(), 200);
    let connections = count(&report, "/summary/connections_opened") + 1;
    assert_eq!(tls.connections_accepted(), h1_connections + connections);
    seen += squid.log_after(seen, connections as usize).len();

    // WebSocket over TLS (wss://): the upgrade inside the tunnel.
    let wss = format!("wss://{}/ws/echo", tls.local_addr());
    let (code, report, stderr) = run(
        &[
            "ws", &wss, "--cacert", ca, "-x", &proxy, "-n", "40", "-c", "2",
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(count(&report, "/summary/websocket/messages_received"), 40);
    let sessions = count(&report, "/summary/websocket/sessions_opened");
    assert_eq!(tls.ws_sessions(), sessions);
    seen += squid.log_after(seen, sessions as usize).len();

    // h2c (prior knowledge over http://) cannot be forwarded: it is tunnelled too.
    let h2c = start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 1,
        http2: true,
        ..Default::default()
    })
    .unwrap();
    let url = format!("http://{}/status", h2c.local_addr());
    let (code, report, stderr) = run(
        &["run", &url, "-x", &proxy, "--http2", "-n", "100", "-c", "2"],
        &[],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(count(&report, "/summary/requests/responses"), 100);
    assert_eq!(h2c.http2_requests(), 100);
    let connections = count(&report, "/summary/connections_opened");
    assert_eq!(h2c.connections_accepted(), connections);
    let lines = squid.log_after(seen, connections as usize);
    let authority = format!("CONNECT {} ", h2c.local_addr());
    assert!(lines.iter().all(|l| l.contains(&authority)), "{lines:#?}");
}

#[test]
fn squid_credentials_407_and_a_refused_connect_are_counted_exactly() {
    let squid = Squid::start(true);
    let dir = TempDir::new("proxy-auth");
    let (tls, ca) = tls_target(&dir);
    let ca = ca.to_str().unwrap();
    let https = format!("https://{}/status", tls.local_addr());
    let plain = target();
    let http = format!("http://{}/status", plain.local_addr());
    let with_user = format!("http://alice:s3cret@127.0.0.1:{}", squid.port);

    // No credentials: every CONNECT is answered 407, each request one connect error that
    // names the proxy; the run failed.
    let (code, report, _) = run(
        &[
            "run",
            &https,
            "--cacert",
            ca,
            "-x",
            &squid.url(),
            "-n",
            "20",
            "-c",
            "1",
        ],
        &[],
    );
    assert_eq!(code, Some(1));
    assert_eq!(count(&report, "/summary/requests/completed"), 20);
    assert_eq!(count(&report, "/summary/requests/responses"), 0);
    let (errors, example) = connect_errors(&report);
    assert_eq!(errors, 20);
    assert!(
        example.starts_with(&format!(
            "proxy {}: CONNECT {} refused: HTTP/1.1 407",
            squid.url(),
            tls.local_addr()
        )),
        "{example}"
    );
    assert_eq!(tls.connections_accepted(), 0);
    let lines = squid.log_after(0, 20);
    assert!(
        lines.iter().all(|l| l.contains("TCP_DENIED/407")),
        "{lines:#?}"
    );

    // alice: tunnels and forwarded requests carry her Basic credentials; the report shows
    // the proxy without the password.
    let (code, report, stderr) = run(
        &[
            "run", &https, "--cacert", ca, "-x", &with_user, "-n", "60", "-c", "2",
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(count(&report, "/summary/requests/responses"), 60);
    let connections = count(&report, "/summary/connections_opened") as usize;
    let lines = squid.log_after(20, connections);
    assert!(lines.iter().all(|l| l.contains(" alice ")), "{lines:#?}");
    let shown = report["run"]["proxy"].as_str().unwrap();
    assert!(shown.starts_with("http://alice:***@127.0.0.1:"), "{shown}");
    assert!(!serde_json::to_string(&report).unwrap().contains("s3cret"));
    let (code, report, stderr) = run(&["run", &http, "-x", &with_user, "-n", "40"], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(count(&report, "/summary/status/200"), 40);
    assert_eq!(plain.requests_served(), 40);
    let lines = squid.log_after(20 + connections, 40);
    assert!(
        lines
            .iter()
            .all(|l| l.contains(" alice ") && l.contains("TCP_MISS/200")),
        "{lines:#?}"
    );

    // A CONNECT to a port where nothing listens: squid's refusal is the connect error.
    let (_held, closed) = common::refusing_port();
    let refused = format!("https://127.0.0.1:{closed}/");
    let (code, report, _) = run(
        &[
            "run", &refused, "--cacert", ca, "-x", &with_user, "-n", "5", "-c", "1",
        ],
        &[],
    );
    assert_eq!(code, Some(1));
    let (errors, example) = connect_errors(&report);
    assert_eq!(errors, 5);
    assert!(
        example.contains(&format!("CONNECT 127.0.0.1:{closed} refused: HTTP/1.1 50")),
        "{example}"
    );
}

#[test]
fn socks5_carries_http_and_https_with_and_without_credentials() {
    let dir = TempDir::new("proxy-socks");
    let (tls, ca) = tls_target(&dir);
    let ca = ca.to_str().unwrap();
    let plain = target();
    let http = format!("http://{}/status", plain.local_addr());
    let https = format!("https://{}/status", tls.local_addr());

    let (open, port) = microsocks(None);
    // socks5:// (the address resolved here) and socks5h:// (the name sent to the proxy).
    for (scheme, env) in [("socks5", "ALL_PROXY"), ("socks5h", "all_proxy")] {
        let proxy = format!("{scheme}://127.0.0.1:{port}");
        let (code, report, stderr) = run(&["run", &http, "-n", "100", "-c", "4"], &[(env, &proxy)]);
        assert_eq!(code, Some(0), "{stderr}");
        assert_eq!(count(&report, "/summary/requests/responses"), 100);
        assert_eq!(
            report["run"]["proxy"].as_str(),
            Some(format!("{proxy} (from {env})").as_str())
        );
    }
    assert_eq!(plain.requests_served(), 200);
    let proxy = format!("socks5h://127.0.0.1:{port}");
    let (code, report, stderr) = run(
        &[
            "run", &https, "--cacert", ca, "-x", &proxy, "--http2", "-n", "100", "-c", "2",
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(tls.http2_requests(), 100);
    assert_eq!(
        tls.connections_accepted(),
        count(&report, "/summary/connections_opened") + 1
    );
    // The proxy's refusal to reach a closed port: SOCKS5 reply 5, per request.
    let (_held, closed) = common::refusing_port();
    let url = format!("http://127.0.0.1:{closed}/");
    let (code, report, _) = run(&["run", &url, "-x", &proxy, "-n", "7", "-c", "1"], &[]);
    assert_eq!(code, Some(1));
    let (errors, example) = connect_errors(&report);
    assert_eq!(errors, 7);
    assert_eq!(
        example,
        format!("proxy {proxy}: SOCKS5 connect to 127.0.0.1:{closed} failed: connection refused (reply 5)")
    );
    open.stop(PATIENCE);

    let (authed, port) = microsocks(Some(("alice", "s3cret")));
    let good = format!("socks5://alice:s3cret@127.0.0.1:{port}");
    let (code, report, stderr) = run(&["run", &http, "-x", &good, "-n", "50", "-c", "2"], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(count(&report, "/summary/requests/responses"), 50);
    assert_eq!(plain.requests_served(), 250);
    for (proxy, says) in [
        (
            format!("socks5://127.0.0.1:{port}"),
            "accepts no connection without authentication",
        ),
        (
            format!("socks5://alice:wrong@127.0.0.1:{port}"),
            "rejected the user name and password (RFC 1929 status",
        ),
    ] {
        let (code, report, _) = run(&["run", &http, "-x", &proxy, "-n", "3", "-c", "1"], &[]);
        assert_eq!(code, Some(1));
        let (errors, example) = connect_errors(&report);
        assert_eq!(errors, 3);
        assert!(example.contains(says), "{example}");
        assert!(!example.contains("wrong"), "{example}");
    }
    assert_eq!(plain.requests_served(), 250);
    authed.stop(PATIENCE);
}

#[test]
fn a_proxy_that_cannot_be_used_is_a_usage_error_naming_where_it_came_from() {
    let out = common::loadmark()
        .args(["run", "http://127.0.0.1:1/", "-n", "1"])
        .env("HTTPS_PROXY", "ftp://u:pw@127.0.0.1:1")
        .env("http_proxy", "https://127.0.0.1:3128")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("http_proxy") && stderr.contains("https://"),
        "{stderr}"
    );
}
