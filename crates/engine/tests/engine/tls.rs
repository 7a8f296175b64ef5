//! https:// over rustls: verified by default, accepted with --insecure, failures classified.

use crate::common;
use std::io::{Read, Write};

use crate::common::plan;
use loadmark_engine::{run, StopHandle};
use loadmark_metrics::ErrorKind;
use loadmark_plan::{Stop, TlsPolicy};

/// A blocking TLS server with a fresh self-signed certificate for 127.0.0.1.
fn tls_server() -> std::net::SocketAddr {
    common::tls_server(|tls| {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                buf.drain(..end + 4);
                if tls
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK")
                    .is_err()
                {
                    return;
                }
                let _ = tls.flush();
            }
            match tls.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    })
}

#[test]
fn self_signed_certificate_is_refused_by_default_and_classified() {
    let addr = tls_server();
    let p = plan(&format!("https://{addr}/"), 1, 1, Stop::Requests(3));
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let tls = r.totals.snapshot.errors.get(ErrorKind::Tls);
    assert_eq!(tls.count, 3);
    let example = tls.first_example.as_deref().unwrap();
    assert!(example.contains("certificate"), "{tls:?}");
    assert!(
        example.contains("--insecure") && example.contains("--cacert"),
        "the error says what to do about it: {example}"
    );
    assert_eq!(r.totals.snapshot.responses, 0);
}

#[test]
fn insecure_accepts_it_and_requests_flow() {
    let addr = tls_server();
    let mut p = plan(&format!("https://{addr}/"), 2, 1, Stop::Requests(50));
    p.tls = TlsPolicy::Insecure;
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.responses, 50);
    assert_eq!(s.connections_opened, 2, "keep-alive over TLS");
}
