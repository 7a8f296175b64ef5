//! HTTP/1.1 on the wire: request bytes encoded once, responses parsed incrementally.

mod parse;
mod request;

pub use parse::{Feed, Limits, ParseError, Response, ResponseParser, MAX_HEADERS};
pub use request::encode_request;
