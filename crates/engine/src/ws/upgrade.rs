//! The WebSocket opening handshake over a new connection of the run's transport, shared by
//! `loadmark ws` sessions and scenario steps: connect, write the upgrade request, read until
//! the answer is whole, and classify what the server did instead of upgrading.

use std::time::{Duration, Instant};

use loadmark_metrics::ErrorKind;
use loadmark_wire::ws::handshake::{self, Answer};

use super::session::KEPT_READ_CAPACITY;
use crate::connection::Shared;
use crate::transport::{classify_io, Transport};

/// The read buffer of a handshake (a 101 head is ~150 bytes); it grows for a longer one.
/// Every session of a run may be in its handshake at once, so this is a peak of memory.
const HANDSHAKE_BUFFER_BYTES: usize = 1024;

/// Why a session ended early, as the error its unanswered messages are counted under.
pub(crate) struct Failure {
    pub kind: ErrorKind,
    pub message: String,
}

pub(crate) struct Opened<S> {
    pub(crate) stream: S,
    /// Bytes after the 101's head, already in the read buffer.
    pub(crate) leftover: usize,
}

/// Connects and upgrades. The whole handshake runs within the connect timeout. Every byte
/// read and written counts in the run's totals, whatever the outcome: the upgrade request,
/// the answer, and frames that came in the same read as the 101 (they are parsed later but
/// never read again).
pub(crate) async fn upgrade<T: Transport>(
    shared: &Shared<T>,
    (request, key): (&[u8], &str),
    connect_timeout: Duration,
    read: &mut Vec<u8>,
) -> Result<Opened<T::Stream>, Failure> {
    let mut moved = (0u64, 0u64);
    let connect = async {
        let moved = &mut moved;
        let mut stream = shared.transport.connect().await.map_err(|e| Failure {
            kind: e.kind,
            message: e.message,
        })?;
        tokio::io::AsyncWriteExt::write_all(&mut stream, request)
            .await
            .map_err(|e| Failure {
                kind: classify_io(&e, ErrorKind::Write),
                message: format!("writing the upgrade request: {e}"),
            })?;
        // (A write that failed part way is not counted: how much went is unknown.)
        moved.1 = request.len() as u64;
        read.clear();
        read.resize(HANDSHAKE_BUFFER_BYTES, 0);
        let mut filled = 0;
        loop {
            if filled == read.len() {
                read.resize(filled * 2, 0);
            }
            let n = tokio::io::AsyncReadExt::read(&mut stream, &mut read[filled..])
                .await
                .map_err(|e| Failure {
                    kind: classify_io(&e, ErrorKind::Read),
                    message: format!("reading the upgrade response: {e}"),
                })?;
            if n == 0 {
                return Err(Failure {
                    kind: ErrorKind::Read,
                    message: "the server closed the connection before answering the upgrade"
                        .to_string(),
                });
            }
            filled += n;
            moved.0 = filled as u64;
            match handshake::answer(&read[..filled], key) {
                Answer::Partial => continue,
                Answer::Upgraded { head_len } => {
                    read.copy_within(head_len..filled, 0);
                    // From here on the buffer holds exactly the unparsed bytes.
                    read.truncate(filled - head_len);
                    read.shrink_to(KEPT_READ_CAPACITY);
                    return Ok(Opened {
                        stream,
                        leftover: filled - head_len,
                    });
                }
                Answer::Refused { status, why } => {
                    let now = Instant::now();
                    let mut rec = shared.recorder.borrow_mut();
                    *rec.websocket(now).upgrade_status.entry(status).or_default() += 1;
                    return Err(Failure {
                        kind: ErrorKind::Handshake,
                        message: why,
                    });
                }
                Answer::Malformed(why) => {
                    return Err(Failure {
                        kind: ErrorKind::Protocol,
                        message: why,
                    })
                }
            }
        }
    };
    let result = tokio::time::timeout(connect_timeout, connect).await;
    if moved != (0, 0) {
        shared
            .recorder
            .borrow_mut()
            .record_bytes(Instant::now(), moved.0, moved.1);
    }
    match result {
        Ok(result) => result,
        Err(_) => Err(Failure {
            kind: ErrorKind::Timeout,
            message: format!(
                "no WebSocket handshake within {:?} (--connect-timeout)",
                connect_timeout
            ),
        }),
    }
}
