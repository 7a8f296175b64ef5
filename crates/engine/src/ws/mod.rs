//! WebSocket load (`loadmark ws`): sessions that upgrade, send on a schedule or in a closed
//! loop, and match what comes back.
//!
//! A WebSocket run is an ordinary [`crate::run`] of a plan whose `websocket` is set: the same
//! worker threads, recorders, per-second series, stop rules and Ctrl-C handling as HTTP. Only
//! what a connection does differs: each of a worker's connections is a virtual user that runs
//! one session after another ([`session`]), over the same [`crate::transport::Transport`]
//! (ws:// over TCP, wss:// over TLS).
//!
//! Design decisions:
//! - Own framing (`loadmark_wire::ws::frame`) rather than a WebSocket library: frames are built straight into
//!   the write buffer (masked eight bytes at a time) and read in place from the read buffer,
//!   so a message costs no allocation, and timestamps sit exactly at the syscalls.
//! - The built-in target's WebSocket endpoints use an independent implementation
//!   (tungstenite), so the tests that run one against the other check interoperability.

mod messages;
mod session;
pub(crate) mod upgrade;

pub(crate) use session::WsShared;
