//! The connection's frame handling on arbitrary server bytes, without a socket: the entry of
//! the cargo-fuzz target `fuzz/fuzz_targets/http2_frames.rs`, also run by the test suite.

use std::time::{Duration, Instant};

use bytes::Bytes;

use super::event::Event;
use super::frame::FrameReader;
use super::state::State;

/// Three streams open (the second uploading 100 bytes) on a connection that then reads
/// `server` as what its server sent, in two reads split at `cut`, then the end of the bytes.
/// Panics if any stream does not end exactly once, or the connection keeps one.
pub fn fuzz_server_bytes(server: &[u8], cut: usize) {
    let mut state: State<usize> = State::new(Duration::from_secs(5));
    // Past the server's first SETTINGS, so every frame type is reached at once.
    state.settings_seen = true;
    let deadline = Instant::now() + Duration::from_secs(5);
    // GET http://x/ : indexed :method, :scheme, :path; :authority with a literal value.
    let block = [0x82, 0x86, 0x84, 0x41, 0x01, b'x'];
    for tag in 0..3 {
        let body = if tag == 1 {
            Bytes::from_static(&[7; 100])
        } else {
            Bytes::new()
        };
        state.open(&block, &body, tag, deadline);
    }
    let mut reader = FrameReader::new();
    let mut events = Vec::new();
    let now = Instant::now();
    let cut = cut.min(server.len());
    'feed: for piece in [&server[..cut], &server[cut..]] {
        let mut rest = piece;
        while !rest.is_empty() {
            let space = reader.space();
            let n = space.len().min(rest.len());
            space[..n].copy_from_slice(&rest[..n]);
            reader.filled(n);
            rest = &rest[n..];
            loop {
                let handled = match reader.next() {
                    Ok(Some((head, payload))) => state.frame(head, payload, now, &mut events),
                    Ok(None) => break,
                    Err(e) => Err(e),
                };
                if let Err(e) = handled {
                    state.conn_error(e, &mut events);
                    break 'feed;
                }
            }
        }
    }
    if state.ended.is_none() {
        state.end_eof(&mut events);
    }
    let mut ended = [0u32; 3];
    for e in &events {
        match e {
            Event::Response { tag, .. } | Event::Failed { tag, .. } => ended[*tag] += 1,
        }
    }
    assert_eq!(ended, [1, 1, 1], "each stream ends exactly once");
    assert!(state.streams.is_empty() && state.uploads.is_empty());
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_server_bytes_end_each_stream_once(
            bytes in proptest::collection::vec(any::<u8>(), 0..600),
            cut in 0usize..600,
        ) {
            fuzz_server_bytes(&bytes, cut);
        }
    }
}
