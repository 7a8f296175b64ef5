//! The open-connections gauge: a [`Transport`] wrapper whose streams count themselves.
//!
//! Every executor (HTTP/1.1 closed and open loop, pipelining, HTTP/2, WebSocket) opens its
//! connections through the run's transport, so wrapping it once in the runner counts them
//! all without a hook in any executor. The cost is one relaxed atomic add when a connection
//! opens and one when its stream is dropped (closed), on one counter all workers share (so
//! a connection per request, `--no-keepalive`, moves its cache line between cores on each
//! connect and close; beside a connect and a close syscall that is noise); reads and writes
//! only pass through (generic, inlined); nothing is done per request otherwise.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::http2::Negotiated;
use crate::transport::{ConnectError, Inbound, Transport};

/// Connections open now, across every worker of a run.
///
/// The counter is leaked (8 bytes per run) so that a stream refers to it without a reference
/// count: an `Arc` would add two more atomic operations per connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpenConnections(&'static AtomicU64);

impl Default for OpenConnections {
    fn default() -> Self {
        OpenConnections(Box::leak(Box::new(AtomicU64::new(0))))
    }
}

impl OpenConnections {
    pub(crate) fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// `T`, with every stream it opens counted in `open` until dropped.
#[derive(Clone)]
pub(crate) struct Counting<T> {
    pub(crate) inner: T,
    pub(crate) open: OpenConnections,
}

impl<T: Transport> Transport for Counting<T> {
    type Stream = Counted<T::Stream>;

    async fn connect(&self) -> Result<Self::Stream, ConnectError> {
        let inner = self.inner.connect().await?;
        self.open.0.fetch_add(1, Ordering::Relaxed);
        Ok(Counted {
            inner,
            open: self.open.0,
        })
    }

    fn stamps_arrival(&self) -> bool {
        self.inner.stamps_arrival()
    }
}

/// A connected stream that leaves the count when dropped.
pub(crate) struct Counted<S> {
    inner: S,
    open: &'static AtomicU64,
}

impl<S> Drop for Counted<S> {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    #[inline]
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    #[inline]
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    #[inline]
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    #[inline]
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    #[inline]
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    #[inline]
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<S: Inbound> Inbound for Counted<S> {
    const CAN_DISCARD: bool = S::CAN_DISCARD;

    #[inline]
    fn poll_discard(&mut self, cx: &mut Context<'_>, max: usize) -> Poll<io::Result<usize>> {
        self.inner.poll_discard(cx, max)
    }

    #[inline]
    fn arrival(&self) -> Option<std::time::Instant> {
        self.inner.arrival()
    }

    fn handshake(&self) -> crate::transport::Handshake {
        self.inner.handshake()
    }
}

impl<S: Negotiated> Negotiated for Counted<S> {
    fn h2_negotiated(&self) -> Result<(), String> {
        self.inner.h2_negotiated()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Tcp;
    use std::time::Duration;

    #[test]
    fn a_stream_counts_from_connect_to_drop() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let transport = Counting {
            inner: Tcp {
                addr: listener.local_addr().unwrap(),
                connect_timeout: Duration::from_secs(30),
                via: None,
            },
            open: OpenConnections::default(),
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (a, b) = rt.block_on(async {
            (
                transport.connect().await.unwrap(),
                transport.connect().await.unwrap(),
            )
        });
        assert_eq!(transport.open.now(), 2);
        drop(a);
        assert_eq!(transport.open.now(), 1);
        drop(b);
        assert_eq!(transport.open.now(), 0);
    }
}
