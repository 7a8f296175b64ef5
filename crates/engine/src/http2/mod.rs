//! HTTP/2, the client's own (RFC 9113 and, for header blocks, RFC 7541): one connection
//! carries `--streams` requests at once. [`conn`] is a connection driven by the loop that
//! owns it (the closed loop in [`client`], the open loop in [`open`]); the wire formats
//! (frames, HPACK) and the state machine that handles each frame are `loadmark_wire::http2`'s. The `h2` crate served here before and cost ~3 µs of user
//! CPU per request in framing, locks and a task wake per stream; the built-in target still
//! serves with it (through hyper).
//!
//! Requests come from the same [`crate::source::RequestSource`] as HTTP/1.1 (one encoding,
//! mixes, templates): their HTTP/1.1 bytes are turned into an HTTP/2 header block once per
//! fixed request, or per request when templated (`loadmark_wire::http2::request`). The same `Sample` goes out.

pub(crate) mod client;
pub(crate) mod conn;
#[cfg(test)]
mod conn_tests;
pub(crate) mod open;

pub use client::Negotiated;
pub(crate) use client::{H2Run, H2Shared};
pub(crate) use open::Http2;

/// Records a response of the plain HTTP/2 drivers, with the run's checks when it has some:
/// they read the status and the latency (the plan refuses checks on headers or the body
/// over `--http2`; a scenario's h2 step keeps its one stream's response for those).
pub(crate) fn settle_response<T: crate::transport::Transport>(
    shared: &crate::connection::Shared<T>,
    sample: &loadmark_metrics::Sample,
) {
    crate::settle::response_checked(&shared.recorder, shared.checks.as_ref(), sample, &[], false);
}
