//! HTTP/2 on the wire, the client's own (RFC 9113 and, for header blocks, RFC 7541): [`frame`]
//! and [`hpack`] are the wire formats, [`request`] turns a request's HTTP/1.1 bytes into a
//! header block, and [`state`] is what every frame a server sends does to a connection's
//! streams, ending them as [`Event`]s. The engine's `H2Conn` owns the socket, the timers and
//! the loop; it feeds [`state::State`] whole frames and writes what it queues. The `h2` crate
//! served here before and cost ~3 µs of user CPU per request in framing, locks and a task
//! wake per stream; the built-in target still serves with it (through hyper).

mod capture;
mod event;
pub mod frame;
mod fuzz;
pub mod hpack;
pub(crate) mod huffman;
pub mod request;
pub mod state;

pub use event::{Answer, Event, Failure};
pub use fuzz::fuzz_server_bytes;
