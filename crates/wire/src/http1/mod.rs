//! HTTP/1.1 on the wire: request bytes encoded once, responses parsed incrementally.

mod head;
mod parse;
mod request;

pub use head::{read_head, Head};
pub use parse::{Feed, Limits, ParseError, Response, ResponseParser, MAX_HEADERS};
pub use request::encode_request;
