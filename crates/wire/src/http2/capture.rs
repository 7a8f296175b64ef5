//! A response kept whole for the checks and extractions that read it ([`super::state::State::open_capturing`]).

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
