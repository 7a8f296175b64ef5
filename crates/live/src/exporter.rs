//! [`Exporter`]: serves the OpenMetrics exposition over HTTP on its own thread.
//!
//! The load threads never see it: the run's main thread hands it each tick (a few final
//! seconds, once or twice a second) and a scrape renders what was handed under a lock held
//! for microseconds. Each connection gets one response and is closed.

use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use loadmark_plan::Plan;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::openmetrics::{render, Format, Labels, StepState};
use crate::{LiveError, Tick};

#[derive(Default)]
struct State {
    steps: Vec<StepState>,
    /// Scrapes served since the last step finished (what the linger waits for).
    scrapes_since_finish: u64,
    finished: bool,
}

/// An OpenMetrics endpoint (`GET /metrics`) for the life of the process.
pub struct Exporter {
    addr: SocketAddr,
    shared: Arc<(Mutex<State>, Condvar)>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Exporter {
    /// Binds `addr` (port 0 picks a free port: see [`Exporter::local_addr`]) and serves.
    pub fn bind(addr: SocketAddr) -> Result<Exporter, LiveError> {
        let listener = std::net::TcpListener::bind(addr)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|source| LiveError::Bind { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| LiveError::Bind { addr, source })?;
        let shared: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|source| LiveError::Bind { addr, source })?;
        let serving = shared.clone();
        let thread = std::thread::Builder::new()
            .name("loadmark-metrics".into())
            .spawn(move || runtime.block_on(serve(listener, serving, rx)))
            .map_err(|source| LiveError::Bind { addr, source })?;
        Ok(Exporter {
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

    /// Starts exposing a run (a plan step); earlier steps stay exposed with their final values.
    pub fn begin(&self, labels: Labels, plan: &Plan) {
        let mut state = self.shared.0.lock().expect("exporter state");
        state.steps.retain(|s| s.labels() != &labels);
        state.steps.push(StepState::new(labels, plan));
        state.finished = false;
    }

    /// Adds a tick to the current step.
    pub fn tick(&self, tick: &Tick) {
        let mut state = self.shared.0.lock().expect("exporter state");
        if let Some(step) = state.steps.last_mut() {
            step.tick(tick);
        }
        if tick.finished {
            state.finished = true;
            state.scrapes_since_finish = 0;
        }
    }

    /// The exposition as a scrape would get it now.
    pub fn render(&self, format: Format) -> String {
        render(&self.shared.0.lock().expect("exporter state").steps, format)
    }

    /// Waits until a scrape has fetched the final numbers, at most `max`. Returns whether
    /// one did.
    pub fn linger(&self, max: Duration) -> bool {
        let (lock, cvar) = &*self.shared;
        let deadline = Instant::now() + max;
        let mut state = lock.lock().expect("exporter state");
        loop {
            if state.finished && state.scrapes_since_finish > 0 {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            state = cvar.wait_timeout(state, left).expect("exporter state").0;
        }
    }
}

impl Drop for Exporter {
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
    shared: Arc<(Mutex<State>, Condvar)>,
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
                tokio::spawn(async move {
                    // A client that sends nothing is dropped, never waited for.
                    let _ = tokio::time::timeout(Duration::from_secs(5), answer(stream, &shared)).await;
                });
            }
        }
    }
}

/// Reads one request head and answers it.
async fn answer(
    mut stream: tokio::net::TcpStream,
    shared: &(Mutex<State>, Condvar),
) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 || head.len() > 16 * 1024 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut words = line.split(|&b| b == b' ');
    let (method, path) = (
        words.next().unwrap_or_default(),
        words.next().unwrap_or_default(),
    );
    let path = path.split(|&b| b == b'?').next().unwrap_or_default();
    let accept = String::from_utf8_lossy(&head)
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.trim()
                .eq_ignore_ascii_case("accept")
                .then(|| value.to_string())
        })
        .unwrap_or_default();
    let format = Format::from_accept(&accept);
    let (status, content_type, body) = match (method, path) {
        (b"GET", b"/metrics") => {
            let (lock, cvar) = shared;
            let body = {
                let mut state = lock.lock().expect("exporter state");
                let body = render(&state.steps, format);
                if state.finished {
                    state.scrapes_since_finish += 1;
                    cvar.notify_all();
                }
                body
            };
            ("200 OK", format.content_type(), body)
        }
        (b"GET", b"/") => (
            "200 OK",
            "text/plain; charset=utf-8",
            "loadmark: OpenMetrics at /metrics\n".to_string(),
        ),
        (b"GET", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "not found: the metrics are at /metrics\n".to_string(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "only GET\n".to_string(),
        ),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}
