//! `loadmark-floor-h3 ADDR PATH REQUESTS CONNECTIONS STREAMS [PAUSE_US]`: the least an HTTP/3
//! client can do per request (issue 37), to say how far below quinn + h3 a client on this
//! machine can go. With PAUSE_US, the loop sleeps that long after each turn before it polls,
//! so that one turn handles the datagrams of the pause (what loadmark's driver does with its
//! pause between reads): the figure for a client that does not wake for every datagram.
//!
//! One thread, no async runtime: quinn-proto's state machines (the same QUIC as quinn, without
//! its endpoint and connection tasks, their locks and wake-ups) driven by one loop that
//! `poll`s one UDP socket, reads every datagram the kernel has in one `recvmmsg`, hands them
//! to their connections, then keeps STREAMS GETs in flight on each of CONNECTIONS and sends
//! what the connections queued (GSO when there is more than one datagram). HTTP/3 is framed
//! here: a fixed QPACK header block encoded once (static table only, so no encoder or decoder
//! stream is needed), a response is its HEADERS and DATA frames, checked for `:status 200`
//! (the static table's entry 25) and counted. Certificates are not verified. Nothing is
//! recorded but counts. It prints one line: requests, req/s, and per request the loop's
//! wake-ups, datagrams received and transmits.
use std::collections::HashMap;
use std::io::IoSliceMut;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig,
    Event, StreamEvent, StreamId,
};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

/// Accepts any certificate (Caddy's `tls internal` is signed by its own local CA).
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A QUIC variable-length integer (RFC 9000 §16).
fn put_varint(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=63 => out.push(v as u8),
        64..=16383 => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        _ => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
    }
}

fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let len = 1usize << (b.first()? >> 6);
    let bytes = b.get(..len)?;
    let v = bytes[1..]
        .iter()
        .fold((bytes[0] & 0x3f) as u64, |v, x| (v << 8) | *x as u64);
    Some((v, len))
}

/// The request: one HEADERS frame. QPACK prefix 0/0 (no dynamic table), then `:method GET`
/// (static 17), `:scheme https` (23), `:path` (name 1) and `:authority` (name 0) as literals.
fn request_frame(authority: &str, path: &str) -> Vec<u8> {
    let mut block = vec![0, 0, 0xc0 | 17, 0xc0 | 23];
    for (name, value) in [(1u8, path), (0, authority)] {
        assert!(value.len() < 127, "a literal this long needs a prefixed length");
        block.extend_from_slice(&[0x50 | name, value.len() as u8]);
        block.extend_from_slice(value.as_bytes());
    }
    let mut frame = Vec::new();
    put_varint(&mut frame, 1);
    put_varint(&mut frame, block.len() as u64);
    frame.extend_from_slice(&block);
    frame
}

/// A complete response stream: true when its HEADERS say 200; its DATA bytes added to `body`.
fn response_ok(stream: &[u8], body: &mut u64) -> bool {
    let (mut at, mut ok) = (0, false);
    while at < stream.len() {
        let Some((kind, a)) = varint(&stream[at..]) else { return false };
        let Some((len, b)) = varint(&stream[at + a..]) else { return false };
        let start = at + a + b;
        let Some(payload) = stream.get(start..start + len as usize) else { return false };
        match kind {
            // The first field line after the two prefix bytes: indexed, static, entry 25.
            1 => ok |= payload.get(2) == Some(&(0xc0 | 25)),
            0 => *body += len,
            _ => {}
        }
        at = start + len as usize;
    }
    ok
}

struct Conn {
    handle: ConnectionHandle,
    quic: Connection,
    ready: bool,
    in_flight: usize,
    /// Each open request stream's bytes so far.
    streams: HashMap<StreamId, Vec<u8>>,
}

#[derive(Default)]
struct Counts {
    sent: u64,
    done: u64,
    not_ok: u64,
    body: u64,
    wakes: u64,
    datagrams_in: u64,
    transmits: u64,
}

fn send(udp: &quinn_udp::UdpSocketState, sock: &UdpSocket, t: &quinn_proto::Transmit, buf: &[u8]) {
    let transmit = quinn_udp::Transmit {
        destination: t.destination,
        ecn: None,
        contents: &buf[..t.size],
        segment_size: t.segment_size,
        src_ip: None,
    };
    // A full socket buffer drops the datagram; QUIC's loss recovery sends it again.
    let _ = udp.send(sock.into(), &transmit);
}

/// What a connection's events call for: the control stream once connected, the server's
/// unidirectional streams accepted (and read, for their flow-control credit), responses.
fn on_events(conn: &mut Conn, c: &mut Counts) {
    while let Some(event) = conn.quic.poll() {
        match event {
            Event::Connected => {
                conn.ready = true;
                // The control stream: its type (0x00), then an empty SETTINGS frame.
                let id = conn.quic.streams().open(Dir::Uni).expect("a unidirectional stream");
                conn.quic.send_stream(id).write(&[0x00, 0x04, 0x00]).expect("written");
            }
            Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                while let Some(id) = conn.quic.streams().accept(Dir::Uni) {
                    conn.streams.insert(id, Vec::new());
                }
            }
            Event::Stream(StreamEvent::Readable { id }) => read(conn, id, c),
            Event::ConnectionLost { reason } => panic!("connection lost: {reason}"),
            _ => {}
        }
    }
}

fn read(conn: &mut Conn, id: StreamId, c: &mut Counts) {
    let mut stream = conn.quic.recv_stream(id);
    let Ok(mut chunks) = stream.read(true) else { return };
    let buf = conn.streams.entry(id).or_default();
    let mut finished = false;
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(chunk)) if id.dir() == Dir::Bi => buf.extend_from_slice(&chunk.bytes),
            Ok(Some(_)) => {}
            Ok(None) => {
                finished = true;
                break;
            }
            Err(_) => break,
        }
    }
    let _ = chunks.finalize();
    if finished && id.dir() == Dir::Bi {
        let bytes = conn.streams.remove(&id).unwrap_or_default();
        if !response_ok(&bytes, &mut c.body) {
            c.not_ok += 1;
        }
        c.done += 1;
        conn.in_flight -= 1;
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 6 && args.len() != 7 {
        eprintln!("usage: loadmark-floor-h3 ADDR PATH REQUESTS CONNECTIONS STREAMS [PAUSE_US]");
        std::process::exit(2);
    }
    let addr: SocketAddr = args[1].parse().expect("ADDR: ip:port");
    let path = &args[2];
    let requests: u64 = args[3].parse().expect("REQUESTS: a count");
    let connections: usize = args[4].parse().expect("CONNECTIONS: a count");
    let streams: usize = args[5].parse().expect("STREAMS: a count");
    let pause: u64 = args.get(6).map_or(0, |p| p.parse().expect("PAUSE_US: microseconds"));

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn_proto::crypto::rustls::QuicClientConfig::try_from(tls).expect("QUIC TLS");
    let mut config = ClientConfig::new(Arc::new(crypto));
    // The same windows as loadmark's HTTP/3 driver.
    let mut transport = quinn_proto::TransportConfig::default();
    transport.stream_receive_window((8u32 << 20).into());
    transport.receive_window((16u32 << 20).into());
    config.transport_config(Arc::new(transport));
    let request = request_frame(&addr.to_string(), path);

    let sock = UdpSocket::bind("127.0.0.1:0").expect("a UDP socket");
    sock.set_nonblocking(true).expect("non-blocking");
    let udp = quinn_udp::UdpSocketState::new((&sock).into()).expect("quinn-udp");
    let gso = udp.max_gso_segments();
    let mut endpoint = Endpoint::new(Arc::new(EndpointConfig::default()), None, false, None);
    let mut conns = Vec::new();
    let mut by_handle = HashMap::new();
    for i in 0..connections {
        let (handle, quic) = endpoint
            .connect(Instant::now(), config.clone(), addr, &addr.ip().to_string())
            .expect("connect");
        by_handle.insert(handle, i);
        conns.push(Conn { handle, quic, ready: false, in_flight: 0, streams: HashMap::new() });
    }
    let mut c = Counts::default();
    let mut tx = Vec::with_capacity(gso * 1500);
    let mut rx: Vec<Vec<u8>> = (0..quinn_udp::BATCH_SIZE).map(|_| vec![0; 64 << 10]).collect();
    let mut meta = vec![quinn_udp::RecvMeta::default(); quinn_udp::BATCH_SIZE];
    let start = Instant::now();
    while c.done < requests {
        let now = Instant::now();
        for conn in conns.iter_mut() {
            while let Some(event) = conn.quic.poll_endpoint_events() {
                if let Some(event) = endpoint.handle_event(conn.handle, event) {
                    conn.quic.handle_event(event);
                }
            }
            on_events(conn, &mut c);
            while conn.ready && conn.in_flight < streams && c.sent < requests {
                let Some(id) = conn.quic.streams().open(Dir::Bi) else { break };
                let mut stream = conn.quic.send_stream(id);
                stream.write(&request).expect("written");
                stream.finish().expect("finished");
                conn.in_flight += 1;
                c.sent += 1;
            }
            loop {
                tx.clear();
                let Some(t) = conn.quic.poll_transmit(now, gso, &mut tx) else { break };
                send(&udp, &sock, &t, &tx);
                c.transmits += 1;
            }
        }
        if c.done >= requests {
            break;
        }
        let due = conns.iter_mut().filter_map(|conn| conn.quic.poll_timeout()).min();
        let wait_ms = due.map_or(1000, |d| {
            d.saturating_duration_since(Instant::now()).as_millis() as i32 + 1
        });
        if pause > 0 {
            std::thread::sleep(std::time::Duration::from_micros(pause));
        }
        let mut pfd = libc::pollfd { fd: sock.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, for the duration of the call.
        let ready = unsafe { libc::poll(&mut pfd, 1, wait_ms) };
        c.wakes += 1;
        let now = Instant::now();
        if ready > 0 {
            let mut iov: Vec<IoSliceMut> = rx.iter_mut().map(|b| IoSliceMut::new(b)).collect();
            // One recvmmsg: what is there now. poll is level-triggered, so whatever stays
            // behind wakes the next turn at once (no second, empty read per turn).
            if let Ok(count) = udp.recv((&sock).into(), &mut iov, &mut meta) {
                for (m, buf) in meta.iter().zip(iov.iter()).take(count) {
                    for datagram in buf[..m.len].chunks(m.stride) {
                        c.datagrams_in += 1;
                        tx.clear();
                        let data = BytesMut::from(datagram);
                        match endpoint.handle(now, m.addr, m.dst_ip, None, data, &mut tx) {
                            Some(DatagramEvent::ConnectionEvent(handle, event)) => {
                                conns[by_handle[&handle]].quic.handle_event(event)
                            }
                            Some(DatagramEvent::Response(t)) => send(&udp, &sock, &t, &tx),
                            _ => {}
                        }
                    }
                }
            }
        }
        for conn in conns.iter_mut() {
            if conn.quic.poll_timeout().is_some_and(|due| due <= now) {
                conn.quic.handle_timeout(now);
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let per = |x: u64| x as f64 / requests as f64;
    println!(
        "{} requests ({} not 200, {} body bytes) in {secs:.3}s: {:.0} req/s; per request {:.2} \
         wake-ups, {:.2} datagrams received, {:.2} transmits",
        c.done,
        c.not_ok,
        c.body,
        c.done as f64 / secs,
        per(c.wakes),
        per(c.datagrams_in),
        per(c.transmits)
    );
    if c.not_ok > 0 {
        std::process::exit(1);
    }
}
