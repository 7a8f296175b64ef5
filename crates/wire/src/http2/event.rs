//! What a connection hands the loop that drives it: each request that ended, as a whole
//! response or a failure, with the caller's tag.

use std::time::Instant;

use loadmark_metrics::{ErrorKind, Sample};

/// How a request failed.
#[derive(Debug)]
pub struct Failure {
    pub kind: ErrorKind,
    pub message: String,
    /// The server did not process it (GOAWAY above its last stream, REFUSED_STREAM): it may
    /// be sent again on a new connection.
    pub unprocessed: bool,
    /// The connection cannot carry more streams.
    pub connection_over: bool,
    /// The server reset the stream (RST_STREAM): its error code, which a gRPC call's status
    /// comes from (`crate::grpc::failed_status`).
    pub reset: Option<super::frame::Reason>,
}

/// A whole response.
pub struct Answer {
    pub first_byte: Instant,
    pub ended: Instant,
    pub status: u16,
    /// Body bytes (DATA payloads without padding).
    pub body: u64,
    /// Every byte of the stream's frames read (HEADERS, CONTINUATION, DATA with their
    /// 9-byte headers, padding and HPACK blocks) and written (its HEADERS, CONTINUATION and
    /// DATA frames): the request's share of what crossed the connection. The connection's
    /// own frames are counted apart (the engine's `H2Conn::unattributed`).
    pub read: u64,
    pub written: u64,
    /// gRPC calls only: how the call ended (`grpc-status`, the body's framing).
    pub grpc: Option<crate::grpc::End>,
}

impl Answer {
    /// The sample of a request `started` (due at `scheduled` in an open loop).
    pub fn sample(&self, scheduled: Option<Instant>, started: Instant) -> Sample {
        Sample {
            scheduled,
            started,
            first_byte: self.first_byte,
            ended: self.ended,
            status: self.status,
            bytes_read: self.read,
            bytes_written: self.written,
        }
    }
}

/// What a poll found: a request that ended, with the caller's tag.
pub enum Event<T> {
    Response { tag: T, answer: Answer },
    Failed { tag: T, failure: Failure },
}
