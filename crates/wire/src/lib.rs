//! loadmark's codecs apart from I/O: the bytes of each protocol it speaks, encoded and parsed
//! by pure functions and state machines that a driver feeds what its socket read and drains
//! what it must write.
//!
//! - [`http1`]: request bytes encoded once per run, and the incremental response parser that
//!   counts bodies instead of keeping them.
//! - [`http2`]: frames (RFC 9113), HPACK with its Huffman code (RFC 7541), a request's HTTP/1.1
//!   bytes turned into a header block, and the client connection's state machine: what every
//!   frame a server sends does to the streams, and the frames it calls for in answer.
//! - [`http3`]: HTTP/3 frames (RFC 9114), QPACK with the static table only (RFC 9204), a
//!   request's HTTP/1.1 bytes turned into a request stream's, a response stream parsed as it
//!   comes, and the server's control stream (SETTINGS, GOAWAY). QUIC itself is quinn-proto's,
//!   driven by the engine.
//! - [`grpc`]: gRPC's length-prefixed messages and how a call ends (`grpc-status`).
//! - [`ws`]: WebSocket framing and the opening handshake's key, upgrade request and answer
//!   check (RFC 6455).
//!
//! What this crate must never import, so that every rule here is tested and fuzzed on plain
//! byte slices: no async runtime (tokio or any other), no sockets or file descriptors, no
//! threads, and no clock reads where a caller can pass the time (the times a state machine
//! records come in as arguments; the engine stamps them at its syscalls). It may use the plan
//! (what a request is) and the metrics vocabulary (error kinds, samples), which are pure too.
//! The engine's drivers own the I/O: they open connections, read into these codecs, write
//! what they queue, and keep the timers.
//!
//! The fuzz targets in `fuzz/` call this crate directly ([`http2::fuzz_server_bytes`],
//! [`http1::ResponseParser`]).

pub mod grpc;
pub mod http1;
pub mod http2;
pub mod http3;
pub mod ws;
