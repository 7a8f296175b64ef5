//! Requests per connection, counted per worker thread (issue 16).
//!
//! A connection counts its own answered requests in a plain integer and reports the figure
//! here once, when it ends (closed, dropped at the stop). The tally lives in a thread-local
//! because a worker is one thread, and an HTTP/1.1 [`crate::connection::Connection`] closes
//! in places (and a `Drop`) that hold no handle to the worker's `Shared`; the runner takes
//! the thread's tally after its event loop ended, when every connection has been dropped.

use std::cell::RefCell;

use loadmark_metrics::RequestsPerConnection;

thread_local! {
    static CARRIED: RefCell<RequestsPerConnection> = RefCell::new(RequestsPerConnection::default());
}

/// A connection that was open ended after answering `requests`.
pub(crate) fn connection_ended(requests: u64) {
    CARRIED.with(|c| c.borrow_mut().ended(requests));
}

/// This thread's tally, leaving it empty (a worker calls it once, at its end).
pub(crate) fn take() -> RequestsPerConnection {
    CARRIED.with(|c| std::mem::take(&mut *c.borrow_mut()))
}

/// An open connection's count, reported when it is dropped: however the connection's loop
/// ends (a reconnect, the stop, its task aborted), it is counted once.
#[derive(Default)]
pub(crate) struct Tally(pub u64);

impl Drop for Tally {
    fn drop(&mut self) {
        connection_ended(self.0);
    }
}
