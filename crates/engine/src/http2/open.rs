//! The HTTP/2 open loop: requests are due on the same schedule as over HTTP/1.1
//! ([`crate::open`]), and each due request goes out on a stream of a connection in this
//! worker's pool. A connection takes up to `--streams` requests at once; the pool grows on
//! demand up to the cap of connections; a request due when every stream of every connection
//! is taken and the cap is reached is dropped and counted, as over HTTP/1.1. Latency counts
//! from the intended send time, so schedule lag keeps its meaning.
//!
//! A stream the server did not process (GOAWAY above its last stream id, REFUSED_STREAM) is
//! sent once more on another connection and counted as a retry; the connection it was on
//! is taken out of the pool.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use h2::client::SendRequest;
use loadmark_metrics::{ErrorKind, Sample};
use tokio::sync::OnceCell;
use tokio::task::JoinSet;

use super::client::{
    connect, exchange, pick, record_error, ConnectFailure, Failure, Flight, H2Shared, Negotiated,
};
use crate::connection::Shared;
use crate::open::{Schedule, Share};
use crate::transport::Transport;
use loadmark_plan::Profile;

/// One connection of the pool: opened by the first request that lands on it (the others
/// wait for the same handshake), and out of the pool once it failed or the server went away.
struct Conn {
    client: OnceCell<Result<SendRequest<Bytes>, (ErrorKind, String)>>,
    busy: Cell<usize>,
    dead: Cell<bool>,
    answered: Cell<u64>,
}

impl Drop for Conn {
    /// Out of the pool and its last request ended (or the worker stopped): one connection
    /// counted, if it ever opened.
    fn drop(&mut self) {
        if matches!(self.client.get(), Some(Ok(_))) {
            crate::carried::connection_ended(self.answered.get());
        }
    }
}

struct Pool {
    conns: RefCell<Vec<Rc<Conn>>>,
    max_connections: usize,
}

impl Pool {
    /// A connection with a free stream, or a new one if the cap allows.
    fn take(&self, streams: usize) -> Option<Rc<Conn>> {
        let mut conns = self.conns.borrow_mut();
        conns.retain(|c| !c.dead.get());
        let conn = match conns.iter().find(|c| c.busy.get() < streams) {
            Some(c) => c.clone(),
            None if conns.len() < self.max_connections => {
                let c = Rc::new(Conn {
                    client: OnceCell::new(),
                    busy: Cell::new(0),
                    dead: Cell::new(false),
                    answered: Cell::new(0),
                });
                conns.push(c.clone());
                c
            }
            None => return None,
        };
        conn.busy.set(conn.busy.get() + 1);
        Some(conn)
    }
}

/// Sends this worker's share of the schedule over HTTP/2, then waits for its requests to end
/// (each is bounded by the request timeout).
pub(crate) async fn schedule_loop<T: Transport>(
    shared: Rc<Shared<T>>,
    h2s: Rc<H2Shared>,
    profile: Arc<Profile>,
    origin: Instant,
    share: Share,
    max_connections: usize,
) where
    T::Stream: Negotiated,
{
    let pool = Rc::new(Pool {
        conns: RefCell::new(Vec::new()),
        max_connections: max_connections.max(1),
    });
    let mut requests = JoinSet::new();
    let mut schedule = Schedule::new(profile, origin, share);
    while let Some((k, due)) = schedule.next(&shared.idle_polling).await {
        while requests.try_join_next().is_some() {}
        match pool.take(h2s.streams()) {
            Some(conn) => {
                let (shared, h2s, pool) = (shared.clone(), h2s.clone(), pool.clone());
                requests.spawn_local(async move {
                    one(&shared, &h2s, &pool, conn, due, k).await;
                });
            }
            None => shared.recorder.borrow_mut().record_dropped(due, 1),
        }
    }
    while requests.join_next().await.is_some() {}
}

/// One scheduled request, retried once on another connection if the server did not
/// process it.
async fn one<T: Transport>(
    shared: &Shared<T>,
    h2s: &H2Shared,
    pool: &Pool,
    mut conn: Rc<Conn>,
    due: Instant,
    k: u64,
) where
    T::Stream: Negotiated,
{
    let mut retried = false;
    let mut rendered = Vec::new();
    loop {
        let outcome = attempt(shared, h2s, &conn, due, k, &mut rendered).await;
        conn.busy.set(conn.busy.get() - 1);
        let Err(f) = outcome else { return };
        if f.connection_over {
            conn.dead.set(true);
        }
        if f.unprocessed && !retried {
            // Another connection: the pool skips this one now that it is dead.
            conn.dead.set(true);
            if let Some(next) = pool.take(h2s.streams()) {
                shared.recorder.borrow_mut().record_retry(Instant::now());
                retried = true;
                conn = next;
                continue;
            }
        }
        record_error(shared, f.kind, &f.message);
        return;
    }
}

async fn attempt<T: Transport>(
    shared: &Shared<T>,
    h2s: &H2Shared,
    conn: &Conn,
    due: Instant,
    k: u64,
    rendered: &mut Vec<u8>,
) -> Result<(), Failure>
where
    T::Stream: Negotiated,
{
    let opened = conn
        .client
        .get_or_init(|| async {
            connect(shared)
                .await
                .map_err(|ConnectFailure { kind, message }| (kind, message))
        })
        .await;
    let client = match opened {
        Ok(c) => c.clone(),
        Err((kind, message)) => {
            // Every request that landed on a connection that could not open fails with it.
            return Err(Failure {
                kind: *kind,
                message: message.clone(),
                unprocessed: false,
                connection_over: true,
            });
        }
    };
    let prepared = pick(shared, h2s, Some(k), rendered).map_err(|message| Failure {
        kind: ErrorKind::Protocol,
        message,
        unprocessed: false,
        connection_over: false,
    })?;
    let deadline = due.max(Instant::now()) + shared.timeout;
    let mut flight = Flight {
        in_flight: &shared.in_flight,
        on_air: false,
    };
    let on_air = &mut flight.on_air;
    let exchanged = tokio::time::timeout_at(deadline.into(), async {
        let mut client = client;
        // Waits for a stream the server allows (SETTINGS_MAX_CONCURRENT_STREAMS).
        client = client
            .ready()
            .await
            .map_err(|e| super::client::failure(&e, "open a stream"))?;
        let started = Instant::now();
        let (first_byte, status, read) = exchange(&mut client, &prepared, on_air).await?;
        Ok::<_, Failure>((client, started, first_byte, status, read))
    })
    .await;
    flight.on_air = false;
    match exchanged {
        Ok(Ok((client, started, first_byte, status, bytes_read))) => {
            if conn.answered.get() == 0 {
                h2s.observe_limit(&client);
            }
            conn.answered.set(conn.answered.get() + 1);
            shared.recorder.borrow_mut().record(&Sample {
                scheduled: Some(due),
                started,
                first_byte,
                ended: Instant::now(),
                status,
                bytes_read,
                bytes_written: prepared.body.len() as u64,
            });
            Ok(())
        }
        Ok(Err(f)) => Err(f),
        Err(_) => Err(Failure {
            kind: ErrorKind::Timeout,
            message: format!(
                "no complete response within {:?} (--timeout)",
                shared.timeout
            ),
            unprocessed: false,
            connection_over: false,
        }),
    }
}
