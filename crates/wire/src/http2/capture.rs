//! A response kept whole for the checks and extractions that read it ([`State::open_capturing`]).

use std::time::Instant;

use bytes::Bytes;

use super::state::State;

impl<T> State<T> {
    /// [`State::open`], keeping the response's head and body (up to `limit` bytes) for the
    /// checks and extractions that read them: [`State::take_captured`] hands it over once the
    /// stream's response came. One stream at a time is kept (a scenario user's: its steps go
    /// one by one); opening another drops what the last one kept.
    pub fn open_capturing(
        &mut self,
        block: &[u8],
        body: &Bytes,
        tag: T,
        deadline: Instant,
        limit: usize,
    ) -> Instant {
        self.capture = Some(Box::new(Capture {
            id: self.next_id,
            limit,
            ..Capture::default()
        }));
        self.open(block, body, tag, deadline)
    }

    /// The response the capturing stream kept, once it came whole.
    pub fn take_captured(&mut self) -> Option<Box<Capture>> {
        self.capture.take_if(|c| c.done)
    }
}

/// A response kept whole for the checks: its head in HTTP/1.1's form (`HTTP/1.1 200`, then
/// each regular header as `name: value`), then its body, so the one parser the checks and
/// extractions use reads a response of either protocol. Bytes past `limit` are not kept.
#[derive(Debug, Default)]
pub struct Capture {
    pub bytes: Vec<u8>,
    /// The response was longer than the limit.
    pub overflow: bool,
    pub(super) limit: usize,
    /// The stream it belongs to.
    pub(super) id: u32,
    /// The final head is in; the stream's end came.
    pub(super) head: bool,
    pub(super) done: bool,
}

impl Capture {
    /// The headers pushed from `start` on were the final head's: its status line goes first.
    pub(super) fn head(&mut self, start: usize, status: u16) {
        let headers = self.bytes.split_off(start);
        self.push(format!("HTTP/1.1 {status} \r\n").as_bytes());
        self.push(&headers);
        self.push(b"\r\n");
        self.head = true;
    }

    pub(super) fn truncate(&mut self, len: usize) {
        self.bytes.truncate(len);
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
        let room = self.limit.saturating_sub(self.bytes.len());
        self.overflow |= bytes.len() > room;
        self.bytes
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}
