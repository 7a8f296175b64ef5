//! The response body: a whole buffer, or filler bytes of a known or a hidden length.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

/// Size of each chunk of a chunked body: several chunks even for modest sizes, so clients'
/// chunk decoders are exercised across frame boundaries.
const CHUNK_BYTES: usize = 4096;

/// Filler bytes, sent as static slices: a large body is many frames of this one buffer, so
/// serving `/bytes/104857600` neither allocates nor copies, and memory does not grow with
/// the body sizes asked for.
static FILLER: [u8; 64 * 1024] = [b'a'; 64 * 1024];

/// A body hyper can send without boxing. `Full` and non-chunked `Filler` report an exact
/// length, so hyper writes `Content-Length`; chunked `Filler` reports none, so hyper falls
/// back to `Transfer-Encoding: chunked` and writes one chunk per frame.
pub enum ResponseBody {
    Full(Option<Bytes>),
    Filler {
        remaining: usize,
        chunked: bool,
    },
    /// Frames a task writes as it goes (a gRPC call's messages, then its trailers); the
    /// body ends when the task drops its sender.
    Channel(tokio::sync::mpsc::Receiver<Frame<Bytes>>),
}

impl ResponseBody {
    pub fn empty() -> Self {
        ResponseBody::Full(None)
    }

    pub fn full(bytes: Bytes) -> Self {
        ResponseBody::Full(Some(bytes))
    }

    /// `len` bytes of `a`; with `chunked`, in [`CHUNK_BYTES`] chunks and no announced length.
    pub fn filler(len: usize, chunked: bool) -> Self {
        ResponseBody::Filler {
            remaining: len,
            chunked,
        }
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let frame = match self.get_mut() {
            ResponseBody::Channel(rx) => return rx.poll_recv(cx).map(|frame| frame.map(Ok)),
            ResponseBody::Full(data) => data.take().filter(|d| !d.is_empty()),
            ResponseBody::Filler { remaining: 0, .. } => None,
            ResponseBody::Filler { remaining, chunked } => {
                let most = if *chunked { CHUNK_BYTES } else { FILLER.len() };
                let n = (*remaining).min(most);
                *remaining -= n;
                Some(Bytes::from_static(&FILLER[..n]))
            }
        };
        Poll::Ready(frame.map(|data| Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ResponseBody::Full(data) => data.as_ref().map_or(0, Bytes::len) == 0,
            ResponseBody::Filler { remaining, .. } => *remaining == 0,
            ResponseBody::Channel(_) => false,
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
            ResponseBody::Filler { chunked: true, .. } | ResponseBody::Channel(_) => {
                SizeHint::default()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn frames(mut body: ResponseBody) -> Vec<usize> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut sizes = Vec::new();
            while let Some(frame) = body.frame().await {
                sizes.push(frame.unwrap().into_data().unwrap().len());
            }
            sizes
        })
    }

    #[test]
    fn chunked_filler_comes_in_4_kib_frames() {
        assert_eq!(
            frames(ResponseBody::filler(10_000, true)),
            [4096, 4096, 1808]
        );
    }

    #[test]
    fn plain_filler_comes_in_64_kib_frames() {
        assert_eq!(frames(ResponseBody::filler(70_000, false)), [65_536, 4464]);
        assert!(frames(ResponseBody::filler(0, false)).is_empty());
    }

    #[test]
    fn empty_full_body_sends_no_frame() {
        assert!(frames(ResponseBody::full(Bytes::new())).is_empty());
        assert!(frames(ResponseBody::empty()).is_empty());
        assert_eq!(frames(ResponseBody::full(Bytes::from_static(b"OK"))), [2]);
    }
}
