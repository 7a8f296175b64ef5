//! HTTP/2 over the `h2` crate (hyperium's frame layer, the one hyper and tonic use): one
//! connection carries `--streams` requests at once, each a closed loop of its own.
//!
//! Requests come from the same [`crate::source::RequestSource`] as HTTP/1.1 (one encoding,
//! mixes, templates): their HTTP/1.1 bytes are turned into an HTTP/2 request once per fixed
//! request, or per request when templated ([`request`]). The same `Sample` goes out.

mod client;
mod open;
mod request;

pub use client::Negotiated;
pub(crate) use client::{ramp_loop, slot_loop, H2Shared};
pub(crate) use open::schedule_loop;
