//! WebSocket on the wire (RFC 6455), client side: frames ([`frame`]) and the opening
//! handshake ([`handshake`]). The sessions that run them over a connection are the engine's.
//!
//! Own framing rather than a WebSocket library: frames are built straight into the write
//! buffer (masked eight bytes at a time) and read in place from the read buffer, so a message
//! costs no allocation.

pub mod frame;
pub mod handshake;
