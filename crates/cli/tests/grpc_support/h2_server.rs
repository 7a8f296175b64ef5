//! A real HTTP/2 server for `loadmark grpc`'s tests (the `h2` crate, hyper's HTTP/2, not
//! loadmark's), answering the methods of grpc_support/hostile.proto: each hostile method
//! breaks the gRPC protocol in one way (tests/grpc_hostile.rs); `Record` answers OK and
//! keeps each request's `name` (tests/grpc_data.rs).

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::server::SendResponse;
use h2::RecvStream;

/// What the server took: calls by method name, and the `name` of each `Record` request.
#[derive(Debug, Default)]
pub struct Seen {
    pub calls: HashMap<String, u64>,
    pub names: Vec<String>,
}

pub type Served = Arc<Mutex<Seen>>;

/// The hostile server: its address and what it served; it runs until the test ends.
pub fn hostile_server() -> (SocketAddr, Served) {
    let served: Served = Arc::default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let counts = served.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let (socket, _) = listener.accept().await.unwrap();
                let counts = counts.clone();
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(socket).await else {
                        return;
                    };
                    while let Some(Ok((request, respond))) = conn.accept().await {
                        let counts = counts.clone();
                        tokio::spawn(async move {
                            let method = request.uri().path().rsplit('/').next().unwrap_or("");
                            let method = method.to_string();
                            *counts
                                .lock()
                                .unwrap()
                                .calls
                                .entry(method.clone())
                                .or_default() += 1;
                            let _ = answer(&method, request.into_body(), respond, &counts).await;
                        });
                    }
                });
            }
        });
    });
    (addr, served)
}

fn grpc_head(extra: &[(&str, &str)]) -> http::Response<()> {
    let mut response = http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc");
    for (name, value) in extra {
        response = response.header(*name, *value);
    }
    response.body(()).unwrap()
}

fn trailers(fields: &[(&'static str, &'static str)]) -> http::HeaderMap {
    let mut map = http::HeaderMap::new();
    for (name, value) in fields {
        map.insert(*name, http::HeaderValue::from_static(value));
    }
    map
}

/// A length-prefixed message with compressed flag `flag`.
fn message(flag: u8, payload: &[u8]) -> Bytes {
    let mut out = vec![flag];
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out.into()
}

/// A `Ping { name: "hi" }`.
const PING: &[u8] = &[0x0a, 2, b'h', b'i'];

/// Answers one call of `method` in its broken way.
async fn answer(
    method: &str,
    mut body: RecvStream,
    mut respond: SendResponse<Bytes>,
    seen: &Served,
) -> Result<(), h2::Error> {
    // The request is read whole first, as a unary handler would.
    let mut request = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        request.extend_from_slice(&chunk);
    }
    let head = grpc_head(&[]);
    match method {
        // OK, keeping the request's name (a Ping with field 1 only, as the tests send it).
        "Record" => {
            let name = match request.get(5..) {
                Some([0x0a, len, name @ ..]) if name.len() == *len as usize => {
                    String::from_utf8_lossy(name).into_owned()
                }
                Some([]) => String::new(),
                other => format!("not a Ping: {other:?}"),
            };
            seen.lock().unwrap().names.push(name);
            let mut send = respond.send_response(head, false)?;
            send.send_data(message(0, PING), false)?;
            send.send_trailers(trailers(&[("grpc-status", "0")]))?;
        }
        // The status in the response headers, END_STREAM on them: no body, no trailers.
        "TrailersOnly" => {
            let head = grpc_head(&[
                ("grpc-status", "14"),
                ("grpc-message", "hostile%20and%20down"),
            ]);
            respond.send_response(head, true)?;
        }
        // A prefix announcing 5 MiB, over the 4 MiB a client receives: the client stops
        // reading (RST_STREAM) rather than take it.
        "TooLarge" => {
            let mut send = respond.send_response(head, false)?;
            let mut data = vec![0u8, 0, 0x50, 0, 0];
            data.extend_from_slice(&[0u8; 1024]);
            send.send_data(data.into(), false)?;
            held_until_reset(&mut send).await;
        }
        // Compressed flag 1 with no grpc-encoding named: nothing says how to decompress it.
        "CompressedUnasked" => {
            let mut send = respond.send_response(head, false)?;
            send.send_data(message(1, PING), false)?;
            held_until_reset(&mut send).await;
        }
        // Compressed flag 2: no such flag exists.
        "UnknownFlag" => {
            let mut send = respond.send_response(head, false)?;
            send.send_data(message(2, PING), false)?;
            held_until_reset(&mut send).await;
        }
        // The message, END_STREAM on the DATA: no trailers, so no grpc-status.
        "NoStatusOnData" => {
            let mut send = respond.send_response(head, false)?;
            send.send_data(message(0, PING), true)?;
        }
        // Trailers that carry no grpc-status.
        "NoStatusInTrailers" => {
            let mut send = respond.send_response(head, false)?;
            send.send_data(message(0, PING), false)?;
            send.send_trailers(trailers(&[("x-hostile", "no-status")]))?;
        }
        // Half a message, then RST_STREAM INTERNAL_ERROR.
        "Reset" => {
            let mut send = respond.send_response(head, false)?;
            send.send_data(message(0, PING).slice(..6), false)?;
            send.send_reset(h2::Reason::INTERNAL_ERROR);
        }
        // Headers, then nothing until the client gives up on the call.
        "Stall" => {
            let mut send = respond.send_response(head, false)?;
            held_until_reset(&mut send).await;
        }
        _ => {
            respond.send_response(grpc_head(&[("grpc-status", "12")]), true)?;
        }
    }
    Ok(())
}

/// Keeps the stream open until the client resets it (a client that never does fails the
/// test by its bound, not here).
async fn held_until_reset(send: &mut h2::SendStream<Bytes>) {
    let reset = std::future::poll_fn(|cx| send.poll_reset(cx));
    let _ = tokio::time::timeout(Duration::from_secs(20), reset).await;
}

/// Runs `loadmark grpc ADDR --call hostile.Hostile/METHOD ARGS` with a JSON report, killed
/// (and the test failed) if it outlives `bound`; returns the report and how long it took.
pub fn bounded_run(
    addr: SocketAddr,
    method: &str,
    args: &[&str],
    bound: Duration,
) -> (serde_json::Value, Duration) {
    let proto = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/grpc_support/hostile.proto")
        .display()
        .to_string();
    let started = Instant::now();
    let data = if args.contains(&"--data") {
        &[][..]
    } else {
        &["--data", r#"{"name":"hi"}"#][..]
    };
    let mut child = crate::common::loadmark()
        .arg("grpc")
        .arg(addr.to_string())
        .args(["--proto", &proto, "--call"])
        .arg(format!("hostile.Hostile/{method}"))
        .args(["-q", "--format", "json"])
        .args(data)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read as the child writes: a report larger than the pipe's buffer (64 KiB) would
    // otherwise block the child, and the wait below would call that a hang.
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{method}: the run hung past {bound:?}: {}",
                String::from_utf8_lossy(&stderr.join().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = started.elapsed();
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    let report = serde_json::from_slice(&stdout).unwrap_or_else(|e| {
        panic!(
            "{method}: no JSON report ({e}): {}",
            String::from_utf8_lossy(&stderr)
        )
    });
    (report, took)
}

/// The calls counted under each status name, with the first status message.
pub fn codes(report: &serde_json::Value) -> Vec<(String, u64, String)> {
    report["totals"]["grpc"]["codes"]
        .as_array()
        .unwrap_or_else(|| panic!("no gRPC codes in {}", report["totals"]))
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["count"].as_u64().unwrap(),
                c["first_message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}
