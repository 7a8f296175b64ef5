//! The closed-loop executor: each connection sends its next request when the previous one
//! ended (wrk, ab, bombardier). One of these loops runs per connection, as a task on its
//! worker thread's event loop; everything it touches is that thread's own.

use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::connection::{perform, Connection, Shared};
use crate::transport::Transport;

/// How many requests may still start: unlimited (a duration run) or a count shared by every
/// connection of every thread, so `-n N` sends exactly N.
pub(crate) struct Budget {
    remaining: Option<AtomicU64>,
}

impl Budget {
    pub(crate) fn new(count: Option<u64>) -> Self {
        Budget {
            remaining: count.map(AtomicU64::new),
        }
    }

    fn claim(&self) -> bool {
        match &self.remaining {
            None => true,
            Some(n) => n
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok(),
        }
    }
}

/// Runs one connection until the budget or the deadline says stop.
pub(crate) async fn connection_loop<T: Transport>(
    shared: Rc<Shared<T>>,
    budget: Arc<Budget>,
    deadline: Option<Instant>,
) {
    let mut conn = Connection::new();
    let mut now = Instant::now();
    while deadline.is_none_or(|d| now < d) && budget.claim() {
        now = perform(&shared, &mut conn, None).await;
    }
}
