//! A 0-RTT connection's handshake (`--http3-0rtt`): the connection carries requests before
//! its handshake ends, so what the server did with them is known only later. quinn says it
//! once (`ZeroRttAccepted`); this shares that answer between the connection's requests (a
//! request that must not go early waits for it) and times the handshake for the report.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_util::future::{FutureExt, Shared};
use loadmark_metrics::EarlyData;

/// The handshake of a connection that went 0-RTT, watched by a task of its own.
pub(crate) struct Early {
    accepted: Shared<quinn::ZeroRttAccepted>,
    connection: quinn::Connection,
    /// When the handshake ended, from its start (set by the watcher).
    ended_after: Rc<Cell<Option<Duration>>>,
    watcher: tokio::task::JoinHandle<()>,
}

impl Early {
    /// Starts watching; call on the worker's event loop.
    pub(crate) fn watch(
        connection: quinn::Connection,
        accepted: quinn::ZeroRttAccepted,
        started: Instant,
    ) -> Early {
        let accepted = accepted.shared();
        let ended_after = Rc::new(Cell::new(None));
        let watcher = {
            let (accepted, ended_after) = (accepted.clone(), ended_after.clone());
            tokio::task::spawn_local(async move {
                accepted.await;
                ended_after.set(Some(started.elapsed()));
            })
        };
        Early {
            accepted,
            connection,
            ended_after,
            watcher,
        }
    }

    /// What the server did with the early data; None while the handshake is under way.
    pub(crate) fn outcome(&self) -> Option<EarlyData> {
        let accepted = self.accepted.clone().now_or_never()?;
        Some(match (accepted, self.connection.close_reason()) {
            (true, _) => EarlyData::Accepted,
            // quinn answers false too when the connection failed during the handshake.
            (false, Some(_)) => EarlyData::Unknown,
            (false, None) => EarlyData::Rejected,
        })
    }

    /// Resolves when the handshake ends (or the connection does).
    pub(crate) async fn ended(&self) {
        self.accepted.clone().await;
    }

    /// The handshake's time, when it ended.
    pub(crate) fn handshake(&self) -> Option<Duration> {
        self.ended_after.get()
    }
}

impl Drop for Early {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}
