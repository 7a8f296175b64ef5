//! HTTP/3 against peers that misbehave on purpose (issue 37): small quinn and h3 servers
//! written here that never answer, refuse `h3`, reset streams, close connections, lose their
//! state (stateless reset), stop granting flow-control or stream credit, go away (GOAWAY),
//! reject 0-RTT, or answer before reading the request. Each request ends answered or
//! classified, within the request timeout, and the counts add up.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loadmark_metrics::ErrorKind;
use loadmark_report::Report;
use loadmark_test_support::TempDir;

struct Ran {
    code: Option<i32>,
    out: String,
    err: String,
}

/// Runs `loadmark run ARGS -o DIR/NAME.json` and reads the report it wrote.
fn run_json(dir: &Path, name: &str, args: &[&str]) -> (Ran, Report) {
    let path = dir.join(format!("{name}.json"));
    let out = common::loadmark()
        .arg("run")
        .args(args)
        .args(["-o", path.to_str().unwrap()])
        .output()
        .unwrap();
    let ran = Ran {
        code: out.status.code(),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{name}: no report ({e}): {}{}", ran.out, ran.err));
    (ran, common::report_json(&text).unwrap())
}

#[test]
fn a_silent_udp_port_and_a_server_without_h3_are_classified_errors_not_hangs() {
    let dir = TempDir::new("http3-hostile");
    // Bound and never read: every Initial packet goes unanswered.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let url = format!("https://127.0.0.1:{}/", silent.local_addr().unwrap().port());
    let began = Instant::now();
    let args = [
        "--http3",
        "--insecure",
        "--connect-timeout",
        "300ms",
        "-c",
        "1",
    ];
    let (ran, r) = run_json(
        dir.path(),
        "silent",
        &[&[&url[..]][..], &args, &["-n", "3"]].concat(),
    );
    assert_eq!(
        ran.code,
        Some(1),
        "every request failed: {}{}",
        ran.out,
        ran.err
    );
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
    let timeouts = r.summary.errors.get(ErrorKind::Timeout);
    assert_eq!(timeouts.count, 3, "{}", ran.out);
    let example = timeouts.first_example.as_deref().unwrap();
    assert!(example.contains("no QUIC handshake"), "{example}");
    assert!(r.summary.protocol.as_ref().unwrap().quic.is_none());

    // A QUIC server that offers only another application protocol.
    let (addr, _server) = quic_server(b"hq-interop", Hostile::Nothing);
    let url = format!("https://127.0.0.1:{}/", addr.port());
    let (ran, r) = run_json(
        dir.path(),
        "alpn",
        &[&[&url[..]][..], &args, &["-n", "2"]].concat(),
    );
    assert_eq!(ran.code, Some(1), "{}{}", ran.out, ran.err);
    let tls = r.summary.errors.get(ErrorKind::Tls);
    assert_eq!(tls.count, 2, "{}", ran.out);
    let example = tls.first_example.as_deref().unwrap();
    assert!(example.contains("does not offer HTTP/3"), "{example}");

    // A server that resets every request stream: each request is one error naming the reset.
    let (addr, _server) = quic_server(b"h3", Hostile::Reset);
    let url = format!("https://127.0.0.1:{}/", addr.port());
    let (ran, r) = run_json(
        dir.path(),
        "reset",
        &[&[&url[..]][..], &args, &["-n", "4"]].concat(),
    );
    assert_eq!(ran.code, Some(1), "{}{}", ran.out, ran.err);
    let s = &r.summary;
    let (read, write) = (
        s.errors.get(ErrorKind::Read),
        s.errors.get(ErrorKind::Write),
    );
    assert_eq!(
        (s.requests.errors, read.count + write.count),
        (4, 4),
        "{}",
        ran.out
    );
    let example = read
        .first_example
        .as_deref()
        .or(write.first_example.as_deref());
    assert!(example.unwrap().contains("reset the stream"), "{}", ran.out);
    // H3_REQUEST_REJECTED says the server did not process it: each was sent once more.
    assert_eq!(s.retries, 4, "{}", ran.out);

    // A server that closes the connection at each request: each is one error naming the
    // close's code, and a new connection carries the next.
    let (addr, _server) = quic_server(b"h3", Hostile::Close);
    let url = format!("https://127.0.0.1:{}/", addr.port());
    let (ran, r) = run_json(
        dir.path(),
        "close",
        &[&[&url[..]][..], &args, &["-n", "5"]].concat(),
    );
    assert_eq!(ran.code, Some(1), "{}{}", ran.out, ran.err);
    let s = &r.summary;
    let read = s.errors.get(ErrorKind::Read);
    assert_eq!((s.requests.errors, read.count), (5, 5), "{}", ran.out);
    assert!(
        read.first_example
            .as_deref()
            .unwrap()
            .contains("H3_EXCESSIVE_LOAD"),
        "{}",
        ran.out
    );
    assert_eq!(s.connections_opened, 5, "{}", ran.out);
}

#[test]
fn a_server_that_lost_the_connections_state_sends_a_stateless_reset_classified_at_once() {
    let dir = TempDir::new("http3-stateless-reset");
    let (addr, server) = resetting_server();
    let url = format!("https://127.0.0.1:{}/", addr.port());
    let began = Instant::now();
    let args = ["--http3", "--insecure", "--timeout", "3s", "-c", "1"];
    let (ran, r) = run_json(
        dir.path(),
        "reset",
        &[&[&url[..]][..], &args, &["-n", "3"]].concat(),
    );
    // Which endpoint each datagram reached, for the messages below.
    let trace = server.log.lock().unwrap().join("\n");
    assert_eq!(ran.code, Some(1), "{}{}\n{trace}", ran.out, ran.err);
    let s = &r.summary;
    let read = s.errors.get(ErrorKind::Read);
    // Every request ends as one `read` error naming the reset, none as a timeout or an answer.
    assert_eq!(s.requests.errors, 3, "{}\n{trace}", ran.out);
    assert_eq!(read.count, 3, "{}\n{trace}", ran.out);
    assert_eq!(s.requests.responses, 0, "{}\n{trace}", ran.out);
    let example = read.first_example.as_deref().unwrap();
    assert!(example.contains("stateless reset"), "{example}");
    // One QUIC connection per request (`connections_opened` counts only those whose HTTP/3
    // setup ended too: the reset may come while h3 opens its control streams).
    let quic = s.protocol.as_ref().unwrap().quic.as_ref().unwrap();
    assert_eq!(quic.connections, 3, "{}\n{trace}", ran.out);
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
}

#[test]
fn a_server_that_stops_granting_credit_times_requests_out_naming_the_credit() {
    let dir = TempDir::new("http3-credit");
    // Flow control: a 1 KiB window per stream, 4 KiB per connection, never read: a 64 KiB
    // body is stuck after its first KiB.
    let (addr, _server) = quic_server(b"h3", Hostile::Starve);
    let url = format!("https://127.0.0.1:{}/", addr.port());
    let body = dir.path().join("body.bin");
    std::fs::write(&body, vec![b'x'; 64 << 10]).unwrap();
    let began = Instant::now();
    let args = ["--http3", "--insecure", "--timeout", "500ms", "-c", "1"];
    let (ran, r) = run_json(
        dir.path(),
        "flow",
        &[
            &[&url[..], "-p", body.to_str().unwrap()][..],
            &args,
            &["--streams", "2", "-n", "4"],
        ]
        .concat(),
    );
    assert_eq!(ran.code, Some(1), "{}{}", ran.out, ran.err);
    let s = &r.summary;
    let timeouts = s.errors.get(ErrorKind::Timeout);
    assert_eq!((s.requests.errors, timeouts.count), (4, 4), "{}", ran.out);
    assert_eq!(s.requests.in_flight_at_end, 0, "{}", ran.out);
    let example = timeouts.first_example.as_deref().unwrap();
    assert!(
        example.contains("body was not all sent") && example.contains("flow-control credit"),
        "{example}"
    );
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );

    // Streams: a limit of 2 never raised (the server answers, then never reads the request
    // streams to their end, so they never close): 2 answered, the others never start.
    let (addr, server) = quic_server(b"h3", Hostile::AnswerAndHold);
    let url = format!("https://127.0.0.1:{}/", addr.port());
    let (ran, r) = run_json(
        dir.path(),
        "streams",
        &[&[&url[..]][..], &args, &["--streams", "2", "-n", "5"]].concat(),
    );
    let s = &r.summary;
    assert_eq!(s.requests.responses, 2, "{}", ran.out);
    assert_eq!(s.status.get(200), 2, "{}", ran.out);
    let timeouts = s.errors.get(ErrorKind::Timeout);
    assert_eq!((s.requests.errors, timeouts.count), (3, 3), "{}", ran.out);
    let example = timeouts.first_example.as_deref().unwrap();
    assert!(
        example.contains("never started") && example.contains("MAX_STREAMS"),
        "{example}"
    );
    assert_eq!(server.streams.load(Ordering::Relaxed), 2, "the limit held");
}

#[test]
fn a_server_that_sends_goaway_has_its_unprocessed_requests_sent_again_on_a_new_connection() {
    let dir = TempDir::new("http3-goaway");
    let (addr, server) = quic_server(b"h3", Hostile::GoawayAfter(5));
    let url = format!("https://127.0.0.1:{}/", addr.port());
    let args = ["--http3", "--insecure", "--timeout", "5s", "-c", "1"];
    for (name, extra) in [
        ("closed", &["--streams", "4", "-n", "40"][..]),
        ("open", &["--streams", "4", "-R", "100", "-d", "400ms"][..]),
    ] {
        let before = server.answered.load(Ordering::Relaxed);
        let (ran, r) = run_json(dir.path(), name, &[&[&url[..]][..], &args, extra].concat());
        let s = &r.summary;
        let answered = server.answered.load(Ordering::Relaxed) - before;
        // Every request answered, or classified naming GOAWAY or the refusal; what the
        // server answered is what was counted.
        assert_eq!(s.requests.responses, answered, "{name}: {}", ran.out);
        assert_eq!(
            s.requests.responses + s.requests.errors + s.dropped,
            40,
            "{name}: {}",
            ran.out
        );
        for kind in [ErrorKind::Read, ErrorKind::Write] {
            if let Some(e) = s.errors.get(kind).first_example.as_deref() {
                assert!(
                    e.contains("GOAWAY") || e.contains("REQUEST_REJECTED"),
                    "{e}"
                );
            }
        }
        assert!(
            s.requests.errors <= 2,
            "{name}: unprocessed requests are sent again: {}",
            ran.out
        );
        // 5 requests per connection, and the few under way when GOAWAY came: a new
        // connection every 9 at most. Requests never sent because of the GOAWAY moved to
        // the next connection, counted apart: retries are only those the server refused
        // (H3_REQUEST_REJECTED on streams past the GOAWAY), which reached it.
        assert!(s.connections_opened >= 40 / 9, "{name}: {}", ran.out);
        let quic = r.summary.protocol.as_ref().unwrap().quic.as_ref().unwrap();
        assert!(quic.requests_moved_after_goaway > 0, "{name}: {}", ran.out);
        assert!(
            ran.out.contains(&format!(
                "moved to a new connection after GOAWAY: {}",
                quic.requests_moved_after_goaway
            )),
            "{}",
            ran.out
        );
    }
}

#[test]
fn a_server_that_answers_before_reading_a_large_body_has_its_answer_counted() {
    // RFC 9114 §4.1: a server may send its whole response before the request is sent whole,
    // and stop reading. This one never reads: the body's 4 MiB outgrow its stream window, so
    // the client is still waiting for credit when the answer ends the stream.
    let dir = TempDir::new("http3-answer-first");
    let (addr, server) = quic_server(b"h3", Hostile::AnswerAndHold);
    let body = dir.path().join("body.bin");
    std::fs::write(&body, vec![b'x'; 4 << 20]).unwrap();
    let url = format!("https://127.0.0.1:{}/upload", addr.port());
    let args = [
        "--http3",
        "--insecure",
        "--timeout",
        "5s",
        "-c",
        "1",
        "-n",
        "2",
    ];
    let began = Instant::now();
    let (ran, r) = run_json(
        dir.path(),
        "answer-first",
        &[&[&url[..]][..], &args, &["-p", body.to_str().unwrap()]].concat(),
    );
    assert_eq!(ran.code, Some(0), "{}{}", ran.out, ran.err);
    let s = &r.summary;
    assert_eq!(
        (s.requests.responses, s.requests.errors),
        (2, 0),
        "answered, not failed: {}",
        ran.out
    );
    assert_eq!(s.status.get(200), 2, "{}", ran.out);
    assert_eq!(server.streams.load(Ordering::Relaxed), 2);
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
}

#[test]
fn a_server_that_requires_a_client_certificate_is_shown_one_over_quic_as_over_tcp() {
    let dir = TempDir::new("http3-mtls");
    let mut tls = common::mtls::mutual_tls(dir.path());
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    let config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let (addr, server) = serve_quic(config, Hostile::GoawayAfter(u64::MAX));
    let url = format!("https://127.0.0.1:{}/", addr.port());
    let file = |name: &str| dir.path().join(name).display().to_string();
    let (ca, cert, key, both) = (
        file("ca.pem"),
        file("client.pem"),
        file("client.key"),
        file("both.pem"),
    );
    let load = ["--http3", "--timeout", "5s", "-c", "2", "--streams", "2"];

    let (ran, r) = run_json(
        dir.path(),
        "cert-and-key",
        &[
            &[
                &url[..],
                "--cacert",
                &ca,
                "--cert",
                &cert,
                "--key",
                &key,
                "-n",
                "20",
            ][..],
            &load,
        ]
        .concat(),
    );
    assert_eq!(ran.code, Some(0), "{}{}", ran.out, ran.err);
    assert_eq!(r.summary.requests.responses, 20, "{}", ran.out);
    // Key and certificate in one file, as curl allows.
    let (ran, r) = run_json(
        dir.path(),
        "both",
        &[
            &[&url[..], "--cacert", &ca, "--cert", &both, "-n", "10"][..],
            &load,
        ]
        .concat(),
    );
    assert_eq!(ran.code, Some(0), "{}{}", ran.out, ran.err);
    assert_eq!(r.summary.requests.responses, 10, "{}", ran.out);

    // Without one, the handshake fails: TLS errors, every one, and nothing served.
    let (ran, r) = run_json(
        dir.path(),
        "none",
        &[&[&url[..], "--cacert", &ca, "-n", "4"][..], &load].concat(),
    );
    assert_eq!(ran.code, Some(1), "{}{}", ran.out, ran.err);
    let tls_errors = r.summary.errors.get(ErrorKind::Tls);
    assert_eq!(
        (r.summary.requests.responses, tls_errors.count),
        (0, 4),
        "{}",
        ran.out
    );
    let example = tls_errors.first_example.as_deref().unwrap();
    assert!(
        example.contains("the server requires a client certificate: --cert"),
        "{example}"
    );
    drop(server);
}

#[test]
fn a_server_that_forgets_its_tickets_rejects_0rtt_and_the_early_requests_go_again() {
    let dir = TempDir::new("http3-0rtt-rejected");
    let (addr, server) = quic_server(b"h3", Hostile::ForgetTickets);
    let url = format!("https://127.0.0.1:{}/", addr.port());
    let args = ["--http3", "--http3-0rtt", "--insecure", "--timeout", "5s"];
    let extra = ["--no-keepalive", "-c", "1", "-n", "20"];
    let (ran, r) = run_json(
        dir.path(),
        "rejected",
        &[&[&url[..]][..], &args, &extra].concat(),
    );
    let s = &r.summary;
    let answered = server.answered.load(Ordering::Relaxed);
    assert_eq!(ran.code, Some(0), "{}{}", ran.out, ran.err);
    assert_eq!(
        (s.requests.responses, s.requests.errors),
        (20, 0),
        "{}",
        ran.out
    );
    assert_eq!(answered, 20, "each request processed once");
    let quic = r.summary.protocol.as_ref().unwrap().quic.as_ref().unwrap();
    let z = quic
        .zero_rtt
        .as_ref()
        .expect("0-RTT tried with the tickets it was sent");
    assert!(z.rejected > 0 && z.accepted == 0, "{z:?}");
    assert_eq!(z.requests_early, 0, "{z:?}");
    assert_eq!(
        z.requests_rejected, z.rejected,
        "one request on each: {z:?}"
    );
    assert_eq!(
        s.retries, 0,
        "rejected early data is not a retry: {}",
        ran.out
    );
    assert!(ran.out.contains("rejected and sent again"), "{}", ran.out);
}

/// What the hostile QUIC server does with a request stream.
#[derive(Clone, Copy)]
enum Hostile {
    /// Nothing: its handshake is the test (ALPN), or a client that waits for an answer.
    Nothing,
    /// Resets it (H3_REQUEST_REJECTED).
    Reset,
    /// Closes the whole connection (H3_EXCESSIVE_LOAD, with a reason).
    Close,
    /// Never reads it, with receive windows of 1 KiB per stream and 4 KiB per connection:
    /// the client runs out of flow-control credit.
    Starve,
    /// Allows 2 streams at once; answers 200 and ends its side, but never reads the
    /// request to its end, so no stream ever closes and MAX_STREAMS is never raised.
    AnswerAndHold,
    /// An HTTP/3 server (h3) that answers 200, and after N requests sends GOAWAY, serves
    /// what it accepted, and closes the connection.
    GoawayAfter(u64),
    /// An HTTP/3 server (h3) that answers every request, sends session tickets allowing
    /// 0-RTT, and forgets them: each resumption fails, so the early data is rejected.
    ForgetTickets,
}

/// The hostile server's counts, and its runtime (the server ends when this is dropped).
struct Server {
    /// Request streams accepted.
    streams: Arc<AtomicU64>,
    /// Requests answered (GoawayAfter).
    answered: Arc<AtomicU64>,
    /// What a relay saw, one line per datagram (the resetting server's).
    log: Arc<Mutex<Vec<String>>>,
    _runtime: tokio::runtime::Runtime,
}

fn server_crypto(alpn: &[u8]) -> quinn::ServerConfig {
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert.cert.der().clone()], key)
    .unwrap();
    tls.alpn_protocols = vec![alpn.to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    quinn::ServerConfig::with_crypto(Arc::new(crypto))
}

/// [`server_crypto`] accepting 0-RTT, with a session store that keeps nothing: tickets
/// are sent (the store says it kept them) but never found again.
fn forgetful_crypto(alpn: &[u8]) -> quinn::ServerConfig {
    #[derive(Debug)]
    struct Forget;
    impl rustls::server::StoresServerSessions for Forget {
        fn put(&self, _: Vec<u8>, _: Vec<u8>) -> bool {
            true
        }
        fn get(&self, _: &[u8]) -> Option<Vec<u8>> {
            None
        }
        fn take(&self, _: &[u8]) -> Option<Vec<u8>> {
            None
        }
        fn can_cache(&self) -> bool {
            true
        }
    }
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert.cert.der().clone()], key)
    .unwrap();
    tls.alpn_protocols = vec![alpn.to_vec()];
    tls.max_early_data_size = u32::MAX;
    tls.session_storage = Arc::new(Forget);
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    quinn::ServerConfig::with_crypto(Arc::new(crypto))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// A quinn server on a thread of its own whose only ALPN is `alpn`, until the returned
/// [`Server`] is dropped, doing `hostile` to every request stream.
fn quic_server(alpn: &[u8], hostile: Hostile) -> (SocketAddr, Server) {
    let config = match hostile {
        Hostile::ForgetTickets => forgetful_crypto(alpn),
        _ => server_crypto(alpn),
    };
    serve_quic(config, hostile)
}

/// [`quic_server`] with its TLS and QUIC configuration given.
fn serve_quic(mut config: quinn::ServerConfig, hostile: Hostile) -> (SocketAddr, Server) {
    let mut transport = quinn::TransportConfig::default();
    match hostile {
        Hostile::Starve => {
            transport.stream_receive_window(1024u32.into());
            transport.receive_window(4096u32.into());
        }
        Hostile::AnswerAndHold => {
            transport.max_concurrent_bidi_streams(2u32.into());
        }
        _ => {}
    }
    config.transport_config(Arc::new(transport));
    let runtime = runtime();
    let endpoint = runtime
        .block_on(async { quinn::Endpoint::server(config, ([127, 0, 0, 1], 0).into()) })
        .unwrap();
    let addr = endpoint.local_addr().unwrap();
    let streams = Arc::new(AtomicU64::new(0));
    let answered = Arc::new(AtomicU64::new(0));
    let (s, a) = (streams.clone(), answered.clone());
    runtime.spawn(async move {
        while let Some(incoming) = endpoint.accept().await {
            let (streams, answered) = (s.clone(), a.clone());
            tokio::spawn(async move {
                let Ok(connection) = incoming.await else {
                    return;
                };
                match hostile {
                    Hostile::GoawayAfter(n) => return goaway_after(connection, n, &answered).await,
                    Hostile::ForgetTickets => {
                        return goaway_after(connection, u64::MAX, &answered).await
                    }
                    _ => {}
                }
                // Held, never read: dropping a stream would stop or finish it.
                let mut held = Vec::new();
                while let Ok((mut send, mut recv)) = connection.accept_bi().await {
                    streams.fetch_add(1, Ordering::Relaxed);
                    match hostile {
                        Hostile::Reset => {
                            let _ = send.reset(0x10bu32.into());
                            let _ = recv.stop(0x10bu32.into());
                        }
                        Hostile::Close => connection.close(0x107u32.into(), b"too busy"),
                        Hostile::AnswerAndHold => {
                            // HEADERS (type 1, 3 bytes): QPACK's empty prefix and static
                            // entry 25, `:status: 200`; then the stream's end.
                            let _ = send.write_all(&[0x01, 0x03, 0x00, 0x00, 0xc0 | 25]).await;
                            let _ = send.finish();
                        }
                        _ => {}
                    }
                    held.push((send, recv));
                }
            });
        }
    });
    let server = Server {
        streams,
        answered,
        log: Arc::default(),
        _runtime: runtime,
    };
    (addr, server)
}

/// An h3 server: answers 200 with a short body, and after `n` requests sends GOAWAY
/// (h3 rejects the streams past it with H3_REQUEST_REJECTED), then closes once the accepted
/// ones are answered.
async fn goaway_after(connection: quinn::Connection, n: u64, answered: &AtomicU64) {
    let quic = h3_quinn::Connection::new(connection.clone());
    let Ok(mut h3) = h3::server::Connection::<_, bytes::Bytes>::new(quic).await else {
        return;
    };
    let mut accepted = 0;
    let mut answering = Vec::new();
    while let Ok(Some(resolver)) = h3.accept().await {
        accepted += 1;
        answering.push(tokio::spawn(async move {
            let (_, mut stream) = resolver.resolve_request().await.ok()?;
            let head = http::Response::builder().status(200).body(()).unwrap();
            stream.send_response(head).await.ok()?;
            stream
                .send_data(bytes::Bytes::from_static(b"ok\n"))
                .await
                .ok()?;
            stream.finish().await.ok()
        }));
        if accepted == n {
            let _ = h3.shutdown(1).await;
        }
    }
    for task in answering {
        if let Ok(Some(())) = task.await {
            answered.fetch_add(1, Ordering::Relaxed);
        }
    }
    connection.close(0x100u32.into(), b"done");
}

/// Connection IDs of 8 bytes, unique in the process.
struct CountedIds;

impl quinn::ConnectionIdGenerator for CountedIds {
    fn generate_cid(&mut self) -> quinn::ConnectionId {
        static NEXT: AtomicU64 = AtomicU64::new(0x5eed_0000_0000_0000);
        quinn::ConnectionId::new(&NEXT.fetch_add(1, Ordering::Relaxed).to_be_bytes())
    }

    fn cid_len(&self) -> usize {
        8
    }

    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

/// The QUIC packets coalesced in one datagram (RFC 9000 §12.2, §17.2: each long-header packet
/// says its length; a short-header one runs to the datagram's end): each one's kind
/// (`I` Initial, `0` 0-RTT, `H` Handshake, `R` Retry, `1` 1-RTT) and destination connection ID
/// (a short header's taken as 8 bytes, the length both sides use here).
fn packets(datagram: &[u8]) -> Vec<(char, Vec<u8>)> {
    fn varint(b: &[u8]) -> Option<(usize, usize)> {
        let len = 1usize << (b.first()? >> 6);
        let mut v = (b[0] & 0x3f) as usize;
        for byte in b.get(1..len)? {
            v = (v << 8) | *byte as usize;
        }
        Some((v, len))
    }
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(&first) = datagram.get(at) {
        if first & 0x80 == 0 {
            let dcid = datagram.get(at + 1..at + 9).unwrap_or_default();
            found.push(('1', dcid.to_vec()));
            break;
        }
        let packet_type = (first >> 4) & 0x03;
        let parsed = || -> Option<(Vec<u8>, usize)> {
            let dcid_len = *datagram.get(at + 5)? as usize;
            let dcid = datagram.get(at + 6..at + 6 + dcid_len)?.to_vec();
            let mut p = at + 6 + dcid_len;
            p += 1 + *datagram.get(p)? as usize;
            if packet_type == 0 {
                let (token, n) = varint(datagram.get(p..)?)?;
                p += n + token;
            }
            let (length, n) = varint(datagram.get(p..)?)?;
            Some((dcid, p + n + length))
        };
        match (packet_type, parsed()) {
            (0..=2, Some((dcid, end))) => {
                found.push((['I', '0', 'H'][packet_type as usize], dcid));
                at = end;
            }
            (_, dcid) => {
                found.push(('R', dcid.map(|(d, _)| d).unwrap_or_default()));
                break;
            }
        }
    }
    found
}

/// One line of the relay's log: the packets of a datagram with their connection IDs.
fn describe(datagram: &[u8]) -> String {
    let parts: Vec<String> = packets(datagram)
        .iter()
        .map(|(kind, dcid)| {
            let hex: String = dcid.iter().map(|b| format!("{b:02x}")).collect();
            format!("{kind}:{hex}")
        })
        .collect();
    format!("{} bytes [{}]", datagram.len(), parts.join(" "))
}

/// A server that loses its connections' state: two quinn endpoints sharing one reset key
/// behind a UDP relay on one port. Each connection's handshake goes to the current
/// endpoint; the relay sends the connection's first datagram with a 1-RTT packet in it on to
/// the other, which does not know it and answers with a stateless reset (as a restarted
/// server would), and stays current for the next connection. The relay logs every datagram
/// (which endpoint, each packet's kind and connection ID) in the server's `log`.
fn resetting_server() -> (SocketAddr, Server) {
    let runtime = runtime();
    // One reset key (the default config's, shared by its clones) and connection IDs either
    // endpoint accepts as its own (quinn's default IDs carry a hash keyed per endpoint, and
    // one that fails it is dropped without a reset).
    let mut endpoint_config = quinn::EndpointConfig::default();
    endpoint_config.cid_generator(|| Box::new(CountedIds));
    // A reset for every packet it does not know. quinn sends at most one stateless reset per
    // 20 ms by default and ignores the rest in silence; the three connections here follow
    // each other within a few milliseconds, so the third one's request reached the endpoint
    // that had reset the first one 4 ms before and got nothing. Worse, the endpoint that kept
    // the first connection retransmits to it; the client's endpoint answers each of those with
    // a reset of its own, which the relay hands to the current endpoint, which resets it back:
    // with the retransmission timers of both connections backing off in step, each of the
    // client's retransmissions of the request came within 20 ms of such an exchange, and the
    // request timed out (1 run in 6; the relay's trace showed every datagram of that
    // connection reaching the endpoint without its state).
    endpoint_config.min_reset_interval(Duration::ZERO);
    let (front, ups) = runtime.block_on(async {
        let mut ups = Vec::new();
        for _ in 0..2 {
            let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let endpoint = quinn::Endpoint::new(
                endpoint_config.clone(),
                Some(server_crypto(b"h3")),
                socket,
                quinn::default_runtime().unwrap(),
            )
            .unwrap();
            let server = endpoint.local_addr().unwrap();
            tokio::spawn(async move {
                // Accepts and holds connections (never answers: the reset ends them). Each
                // handshake in a task of its own: a client may coalesce its last Handshake
                // packet with its first request (RFC 9000 §12.2), which the relay then sends
                // to the other endpoint, so this endpoint's handshake never completes; awaited
                // in this loop, it would keep every later connection waiting behind it.
                let held: Arc<Mutex<Vec<quinn::Connection>>> = Arc::default();
                while let Some(incoming) = endpoint.accept().await {
                    let held = held.clone();
                    tokio::spawn(async move {
                        if let Ok(c) = incoming.await {
                            held.lock().unwrap().push(c);
                        }
                    });
                }
            });
            let up = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            up.connect(server).await.unwrap();
            ups.push(Arc::new(up));
        }
        let front = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        (Arc::new(front), ups)
    });
    let addr = front.local_addr().unwrap();
    let client: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
    let current = Arc::new(AtomicUsize::new(0));
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let began = Instant::now();
    // Client to server: an Initial (long header, type 0) arms the switch; the first
    // short-header datagram after it flips to the other endpoint.
    let (f, u, c, cur, l) = (
        front.clone(),
        ups.clone(),
        client.clone(),
        current.clone(),
        log.clone(),
    );
    runtime.spawn(async move {
        let mut buf = vec![0u8; 65536];
        let mut armed = false;
        while let Ok((n, from)) = f.recv_from(&mut buf).await {
            *c.lock().unwrap() = Some(from);
            let found = packets(&buf[..n]);
            if found.iter().any(|(kind, _)| *kind == 'I') {
                armed = true;
            }
            // The client may coalesce its last Handshake packet and its first 1-RTT one
            // (the request) in one datagram: that datagram already goes to the other side.
            let mut flip = "";
            if armed && found.iter().any(|(kind, _)| *kind == '1') {
                armed = false;
                cur.store(1 - cur.load(Ordering::Relaxed), Ordering::Relaxed);
                flip = " (flip)";
            }
            let to = cur.load(Ordering::Relaxed);
            l.lock().unwrap().push(format!(
                "{:8.1} ms client:{} > endpoint {to}: {}{flip}",
                began.elapsed().as_secs_f64() * 1e3,
                from.port(),
                describe(&buf[..n])
            ));
            let _ = u[to].send(&buf[..n]).await;
        }
    });
    // Server to client: whatever either endpoint sends (the reset included).
    for (i, up) in ups.into_iter().enumerate() {
        let (f, c, l) = (front.clone(), client.clone(), log.clone());
        runtime.spawn(async move {
            let mut buf = vec![0u8; 65536];
            while let Ok(n) = up.recv(&mut buf).await {
                let to = *c.lock().unwrap();
                if let Some(to) = to {
                    l.lock().unwrap().push(format!(
                        "{:8.1} ms endpoint {i} > client:{}: {}",
                        began.elapsed().as_secs_f64() * 1e3,
                        to.port(),
                        describe(&buf[..n])
                    ));
                    let _ = f.send_to(&buf[..n], to).await;
                }
            }
        });
    }
    let server = Server {
        streams: Arc::default(),
        answered: Arc::default(),
        log,
        _runtime: runtime,
    };
    (addr, server)
}
