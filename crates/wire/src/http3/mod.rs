//! HTTP/3 on the wire, the client's own (RFC 9114, and RFC 9204 for header blocks): [`frame`]
//! holds QUIC's variable-length integers, the frame layout and the error codes, [`qpack`] the
//! header blocks, [`request`] turns a request's HTTP/1.1 bytes into the bytes of a request
//! stream, [`response`] parses a response stream as it arrives, and [`control`] reads the
//! server's unidirectional streams (its SETTINGS and GOAWAY).
//!
//! The client tells the server a QPACK dynamic table of 0 bytes (it sends no
//! SETTINGS_QPACK_MAX_TABLE_CAPACITY), so a server may only refer to the static table: no
//! encoder or decoder stream carries anything, a header block decodes alone, and a block
//! that refers to a dynamic entry is the server's error (QPACK_DECOMPRESSION_FAILED). The
//! engine's QUIC driver (quinn-proto) owns the streams; this module sees only their bytes.
//! The `h3` crate served here before, and its request path cost more user CPU per request
//! than the QUIC underneath it (bench/RESULTS.md, "HTTP/3's floor on this machine").

pub mod control;
pub mod frame;
pub mod qpack;
pub mod request;
pub mod response;

pub use frame::H3Error;
