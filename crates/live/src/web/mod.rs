//! [`WebDashboard`]: live charts in a browser (`--dashboard ADDR`), served by loadmark itself
//! on its own thread, pushed to the page as server-sent events.
//!
//! Like the OpenMetrics endpoint, it is fed only the ticks the run's main thread already
//! hands every live view: the load threads never see it. A tick becomes one or two JSON
//! events ([`feed`]) appended to a bounded log under a lock held for microseconds, and every
//! page's connection task is woken to send what it has not sent yet. A page is never waited
//! for: a write that does not finish within [`WRITE_PATIENCE`] closes its connection (the
//! browser's EventSource reconnects and says, with `Last-Event-ID`, where it stopped), and a
//! page far behind is sent at most [`BATCH`] events per write. So a slow or vanished browser
//! costs neither the load nor memory: the log holds at most [`KEEP`] events whoever watches.

mod feed;

use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use loadmark_plan::Plan;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;

use crate::{LiveError, Tick};
use feed::{Feed, Log};

/// Events kept for pages that join late: two per second for over three hours of run.
const KEEP: usize = 25_000;
/// At most this many events in one write to a page.
const BATCH: usize = 512;
/// A page that does not take a write within this long is disconnected.
const WRITE_PATIENCE: Duration = Duration::from_secs(10);
/// A comment line this often keeps proxies from closing an idle event stream and finds
/// browsers that left.
const HEARTBEAT: Duration = Duration::from_secs(15);

const PAGE: &str = include_str!("../../assets/dashboard.html");
const PAGE_JS: &str = include_str!("../../assets/dashboard.js");

struct State {
    feed: Feed,
    log: Log,
    /// The final report's HTML, once the run has ended.
    report: Option<Arc<str>>,
    /// Pages connected to the event stream now.
    viewers: usize,
    /// Times the final report was fetched since it was offered.
    report_fetches: u64,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the pages' tasks when events were added.
    events: Notify,
    /// Wakes [`WebDashboard::linger`] when a page fetched the report or left.
    changed: Condvar,
}

/// The live dashboard's server, for the life of the process.
pub struct WebDashboard {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl WebDashboard {
    /// Binds `addr` (port 0 picks a free one: see [`WebDashboard::local_addr`]) and serves.
    /// A bind failure is returned before any load starts.
    pub fn bind(addr: SocketAddr) -> Result<WebDashboard, LiveError> {
        let bind_error = |source| LiveError::Dashboard { addr, source };
        let listener = std::net::TcpListener::bind(addr)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(bind_error)?;
        let local = listener.local_addr().map_err(bind_error)?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                feed: Feed::new(),
                log: Log::new(KEEP),
                report: None,
                viewers: 0,
                report_fetches: 0,
            }),
            events: Notify::new(),
            changed: Condvar::new(),
        });
        let (tx, rx) = tokio::sync::oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(bind_error)?;
        let serving = shared.clone();
        let thread = std::thread::Builder::new()
            .name("loadmark-dashboard".into())
            .spawn(move || runtime.block_on(serve(listener, serving, rx)))
            .map_err(bind_error)?;
        Ok(WebDashboard {
            addr: local,
            shared,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Plan step `step` of `steps` begins.
    pub fn begin(&self, plan: &Plan, step: u32, steps: u32) {
        self.push(|feed| vec![feed.begin(plan, step, steps)]);
    }

    /// Adds a tick's seconds and state.
    pub fn tick(&self, tick: &Tick) {
        self.push(|feed| feed.tick(tick));
    }

    /// The run has ended: its report (HTML) is offered to the pages at `/report`.
    pub fn finish(&self, report_html: String) {
        {
            let mut state = self.shared.state.lock().expect("dashboard state");
            state.report = Some(report_html.into());
            state.report_fetches = 0;
        }
        self.push(|_| vec![json!({ "type": "end", "report": "/report" })]);
    }

    fn push(&self, events: impl FnOnce(&mut Feed) -> Vec<serde_json::Value>) {
        {
            let mut state = self.shared.state.lock().expect("dashboard state");
            let state = &mut *state;
            for event in events(&mut state.feed) {
                state.log.push(&event);
            }
        }
        self.shared.events.notify_waiters();
    }

    /// Keeps serving until every page watching has fetched the final report, at most `max`;
    /// at once when no page is watching. Returns whether every page got it.
    pub fn linger(&self, max: Duration) -> bool {
        let deadline = Instant::now() + max;
        let mut state = self.shared.state.lock().expect("dashboard state");
        loop {
            if state.viewers == 0 || state.report_fetches >= state.viewers as u64 {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, left)
                .expect("dashboard state")
                .0;
        }
    }
}

impl Drop for WebDashboard {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    mut shutdown: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let shared = shared.clone();
                tokio::spawn(async move { let _ = answer(stream, &shared).await; });
            }
        }
    }
}

/// A request's method, path and `Last-Event-ID`, from its head.
struct Head {
    method: String,
    path: String,
    last_event_id: Option<u64>,
}

/// Reads one request head; a client that sends none within 5 s is dropped.
async fn read_head(stream: &mut tokio::net::TcpStream) -> Option<Head> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut buf).await.ok()?;
            if n == 0 || head.len() > 16 * 1024 {
                return None;
            }
            head.extend_from_slice(&buf[..n]);
        }
        Some(())
    };
    tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .ok()??;
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.lines();
    let mut words = lines.next()?.split(' ');
    let method = words.next()?.to_string();
    let target = words.next()?;
    let path = target.split('?').next().unwrap_or_default().to_string();
    let last_event_id = lines.find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("last-event-id")
            .then(|| value.trim().parse().ok())?
    });
    Some(Head {
        method,
        path,
        last_event_id,
    })
}

async fn answer(mut stream: tokio::net::TcpStream, shared: &Shared) -> std::io::Result<()> {
    let Some(head) = read_head(&mut stream).await else {
        return Ok(());
    };
    let (status, content_type, body): (&str, &str, Arc<str>) =
        match (head.method.as_str(), head.path.as_str()) {
            ("GET", "/events") => return events(stream, shared, head.last_event_id).await,
            ("GET", "/") => ("200 OK", "text/html; charset=utf-8", page().into()),
            ("GET", "/report") => {
                let report = {
                    let mut state = shared.state.lock().expect("dashboard state");
                    if state.report.is_some() {
                        state.report_fetches += 1;
                        shared.changed.notify_all();
                    }
                    state.report.clone()
                };
                match report {
                    Some(html) => ("200 OK", "text/html; charset=utf-8", html),
                    None => (
                        "404 Not Found",
                        "text/plain; charset=utf-8",
                        "the report comes when the run ends\n".into(),
                    ),
                }
            }
            ("GET", _) => (
                "404 Not Found",
                "text/plain; charset=utf-8",
                "not found: the dashboard is at /\n".into(),
            ),
            _ => (
                "405 Method Not Allowed",
                "text/plain; charset=utf-8",
                "only GET\n".into(),
            ),
        };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    write_patiently(&mut stream, head.as_bytes()).await?;
    write_patiently(&mut stream, body.as_bytes()).await?;
    stream.shutdown().await
}

/// The page, with uPlot and its script inlined: one response, nothing else fetched but the
/// event stream.
fn page() -> String {
    PAGE.replace("/*UPLOT_CSS*/", loadmark_report::UPLOT_CSS)
        .replace("/*UPLOT_JS*/", loadmark_report::UPLOT_JS)
        .replace("/*DASHBOARD_JS*/", PAGE_JS)
}

async fn write_patiently(stream: &mut tokio::net::TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    match tokio::time::timeout(WRITE_PATIENCE, stream.write_all(bytes)).await {
        Ok(done) => done,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "a page did not take the events within 10 s",
        )),
    }
}

/// Counts a page on the event stream while it is there.
struct Viewer<'a>(&'a Shared);

impl<'a> Viewer<'a> {
    fn enter(shared: &'a Shared) -> Self {
        shared.state.lock().expect("dashboard state").viewers += 1;
        Viewer(shared)
    }
}

impl Drop for Viewer<'_> {
    fn drop(&mut self) {
        self.0.state.lock().expect("dashboard state").viewers -= 1;
        self.0.changed.notify_all();
    }
}

/// The event stream: every event kept from `after + 1` on, then each as it comes.
async fn events(
    mut stream: tokio::net::TcpStream,
    shared: &Shared,
    after: Option<u64>,
) -> std::io::Result<()> {
    let _viewer = Viewer::enter(shared);
    write_patiently(
        &mut stream,
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: close\r\n\r\nretry: 1000\n\n",
    )
    .await?;
    let mut next = after.map_or(1, |id| id + 1);
    let mut last_write = Instant::now();
    loop {
        let notified = shared.events.notified();
        tokio::pin!(notified);
        // Registered before the log is read, so an event pushed in between still wakes us.
        notified.as_mut().enable();
        let (batch, missed) = {
            let state = shared.state.lock().expect("dashboard state");
            state.log.since(next, BATCH)
        };
        let mut out = String::new();
        if missed {
            out.push_str("event: missed\ndata: {}\n\n");
        }
        for (id, data) in &batch {
            out.push_str(&format!("id: {id}\ndata: {data}\n\n"));
            next = id + 1;
        }
        if !out.is_empty() {
            write_patiently(&mut stream, out.as_bytes()).await?;
            last_write = Instant::now();
            if batch.len() == BATCH {
                continue;
            }
        }
        let quiet_until = last_write + HEARTBEAT;
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep_until(quiet_until.into()) => {
                write_patiently(&mut stream, b": heartbeat\n\n").await?;
                last_write = Instant::now();
            }
        }
    }
}
