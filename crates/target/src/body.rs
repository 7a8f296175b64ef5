//! The response body: a whole buffer, or a stream of chunks of unknown total length.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

/// Size of each frame of a chunked body.
const CHUNK_BYTES: usize = 4096;

/// Filler bytes, sent as slices: a large body is many frames of this one buffer, so the
/// target's memory does not grow with the body sizes it serves.
static FILLER: [u8; 64 * 1024] = [b'a'; 64 * 1024];

/// `Full` and `Filler` have a known length (Content-Length); `Filler` with `chunked` hides it
/// so hyper sends `Transfer-Encoding: chunked`, one 4 KiB chunk per frame.
pub enum ResponseBody {
    Full(Option<Bytes>),
    Filler { remaining: usize, chunked: bool },
}

impl ResponseBody {
    pub fn empty() -> Self {
        ResponseBody::Full(None)
    }

    pub fn full(bytes: impl Into<Bytes>) -> Self {
        ResponseBody::Full(Some(bytes.into()))
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        Poll::Ready(match this {
            ResponseBody::Full(data) => data
                .take()
                .filter(|d| !d.is_empty())
                .map(|d| Ok(Frame::data(d))),
            ResponseBody::Filler { remaining, chunked } => {
                if *remaining == 0 {
                    None
                } else {
                    let frame = if *chunked { CHUNK_BYTES } else { FILLER.len() };
                    let n = (*remaining).min(frame);
                    *remaining -= n;
                    Some(Ok(Frame::data(Bytes::from_static(&FILLER[..n]))))
                }
            }
        })
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ResponseBody::Full(data) => data.as_ref().is_none_or(|d| d.is_empty()),
            ResponseBody::Filler { remaining, .. } => *remaining == 0,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ResponseBody::Full(data) => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
            ResponseBody::Filler {
                remaining,
                chunked: false,
            } => SizeHint::with_exact(*remaining as u64),
            ResponseBody::Filler { chunked: true, .. } => SizeHint::default(),
        }
    }
}
