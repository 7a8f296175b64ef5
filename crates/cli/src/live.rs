//! Watching a run live: the flags, and the wiring of the stream file, the OpenMetrics
//! endpoint and the terminal view to the engine's per-second hand-overs.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Result;
use clap::Args;
use loadmark_engine::Progress;
use loadmark_live::{Exporter, Labels, RemoteWriter, StreamWriter, Tick, Tui, WebDashboard};
use loadmark_plan::Plan;
use loadmark_report::{Report, StreamStart, SCHEMA_VERSION};

use crate::UsageError;

/// The OpenMetrics endpoint: shared by `run`, `ws` and `bench`.
#[derive(Args, Debug, Default, Clone)]
pub struct MetricsFlags {
    /// Serve OpenMetrics (Prometheus) at http://ADDR/metrics while the run goes, e.g.
    /// 127.0.0.1:9464; port 0 picks a free port (the address is printed on stderr)
    #[arg(long = "metrics-listen", value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,

    /// Live charts in a browser: serve a dashboard at http://ADDR/ while the run goes
    /// [default ADDR: 127.0.0.1:5665, loopback only]; at the end the page offers the final
    /// report. Port 0 picks a free port (the address is printed on stderr)
    #[arg(long = "dashboard", value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:5665")]
    pub dashboard: Option<SocketAddr>,

    /// Full-screen live view: rate achieved vs requested, latency over time, status codes and
    /// errors, client health, the last seconds; q or Ctrl-C stops the run (report written,
    /// exit 130). Without a terminal of at least 80x24 the progress line is shown instead
    #[arg(long = "tui")]
    pub tui: bool,

    /// After the run, keep the metrics endpoint up until one scrape has fetched the final
    /// numbers, at most this long (0 stops at once)
    #[arg(long = "metrics-linger", value_name = "DURATION", default_value = "15s", value_parser = crate::args::duration_arg)]
    pub metrics_linger: Duration,

    /// Push the same metrics to a Prometheus remote-write receiver once a second, e.g.
    /// http://127.0.0.1:9090/api/v1/write (Prometheus with --web.enable-remote-write-receiver);
    /// the end waits for the last push at most 10 s
    #[arg(long = "remote-write", value_name = "URL")]
    pub remote_write: Option<String>,
}

/// How long the end of the process waits for the pages watching the dashboard to fetch the
/// final report.
const DASHBOARD_PATIENCE: Duration = Duration::from_secs(10);

/// How long the end of the process waits for the last remote-write push.
const REMOTE_WRITE_PATIENCE: Duration = Duration::from_secs(10);

/// The live outputs of `run` and `ws`.
#[derive(Args, Debug, Default, Clone)]
pub struct LiveFlags {
    /// Write the result as JSON Lines while the run goes: a start line, one line per second
    /// as soon as it is final (the report's series point plus that second's histograms),
    /// and the whole report last. `loadmark report` and `merge` read the file
    #[arg(long = "stream", value_name = "FILE")]
    pub stream: Option<PathBuf>,

    #[command(flatten)]
    pub metrics: MetricsFlags,
}

/// The live outputs of one process, fed from the engine's progress calls.
#[derive(Default)]
pub struct Live {
    run_id: String,
    segment: Option<String>,
    linger: Duration,
    exporter: Option<Exporter>,
    dashboard: Option<WebDashboard>,
    stream: Option<StreamWriter>,
    stream_path: Option<PathBuf>,
    tui: Option<Tui>,
    remote: Option<(String, RemoteWriter)>,
    /// A live output failed during the run: said once, then it is left alone; the run goes on.
    failed: bool,
}

impl Live {
    /// Nothing live (quickstart).
    pub fn none() -> Self {
        Live::default()
    }

    /// Binds the endpoint now, so a bad address is a usage error before any load, and says
    /// where it is. `run_id` is `--run-id` (default: the start time in Unix seconds and the
    /// process id, e.g. 1764052200-4242); `segment` is a split run's share, as `--segment`
    /// resolved it (`0/2`).
    pub fn start(
        metrics: &MetricsFlags,
        stream: Option<PathBuf>,
        run_id: Option<String>,
        segment: Option<String>,
    ) -> Result<Self> {
        let run_id = run_id.unwrap_or_else(|| {
            let secs = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            format!("{secs}-{}", std::process::id())
        });
        let exporter = match metrics.metrics_listen {
            Some(addr) => {
                let e = Exporter::bind(addr).map_err(|e| UsageError(e.to_string()))?;
                eprintln!(
                    "loadmark: OpenMetrics at http://{}/metrics (run_id {run_id})",
                    e.local_addr()
                );
                Some(e)
            }
            None => None,
        };
        let dashboard = match metrics.dashboard {
            Some(addr) => {
                let d = WebDashboard::bind(addr).map_err(|e| UsageError(e.to_string()))?;
                let reach = if addr.ip().is_loopback() {
                    "loopback only; --dashboard 0.0.0.0:PORT serves other machines"
                } else {
                    "not loopback: whoever reaches this address sees the run"
                };
                eprintln!(
                    "loadmark: dashboard at http://{}/ ({reach})",
                    d.local_addr()
                );
                Some(d)
            }
            None => None,
        };
        let remote = match &metrics.remote_write {
            Some(url) => Some((
                url.clone(),
                RemoteWriter::new(url).map_err(|e| UsageError(e.to_string()))?,
            )),
            None => None,
        };
        let tui = if metrics.tui { start_tui() } else { None };
        Ok(Live {
            tui,
            remote,
            run_id,
            segment,
            linger: metrics.metrics_linger,
            exporter,
            dashboard,
            stream: None,
            stream_path: stream,
            failed: false,
        })
    }

    /// Whether the terminal view is up (the progress line then stays quiet).
    pub fn has_tui(&self) -> bool {
        self.tui.is_some()
    }

    /// A run (plan step `step` of `steps`) begins: the stream file opens with its start line.
    pub fn begin(&mut self, plan: &Plan, step: u32, steps: u32) -> Result<()> {
        if let Some(t) = &mut self.tui {
            t.begin(plan, step, steps);
        }
        let labels = Labels {
            run_id: self.run_id.clone(),
            step,
            segment: self.segment.clone(),
        };
        if let Some((_, r)) = &mut self.remote {
            r.begin(labels.clone(), plan);
        }
        if let Some(e) = &self.exporter {
            e.begin(labels, plan);
        }
        if let Some(d) = &self.dashboard {
            d.begin(plan, step, steps);
        }
        if let Some(path) = &self.stream_path {
            let start = StreamStart {
                schema_version: SCHEMA_VERSION,
                loadmark_version: env!("CARGO_PKG_VERSION").to_string(),
                run_id: self.run_id.clone(),
                step,
                segment: self.segment.clone(),
                opened_at: loadmark_report::rfc3339(SystemTime::now()),
                plan: plan.redacted(),
            };
            // Before any load: a path that cannot be written is the user's to fix (exit 2).
            let w = StreamWriter::create(path, start).map_err(|e| UsageError(e.to_string()))?;
            self.stream = Some(w);
        }
        Ok(())
    }

    /// Hands the engine's progress on (on the run's main thread, never a load thread).
    pub fn update(&mut self, p: &Progress) {
        let tick = Tick {
            elapsed: p.elapsed,
            seconds: p.seconds,
            in_flight: p.in_flight,
            open_connections: p.open_connections,
            busiest_worker: p.busiest_worker,
            finished: p.finished,
        };
        if let Some(e) = &self.exporter {
            e.tick(&tick);
        }
        if let Some(d) = &self.dashboard {
            d.tick(&tick);
        }
        if let Some((_, r)) = &mut self.remote {
            r.tick(&tick);
        }
        if let Some(t) = &mut self.tui {
            t.tick(&tick);
        }
        if let Some(w) = &mut self.stream {
            if let Err(e) = w.tick(&tick) {
                self.give_up_stream(&e);
            }
        }
    }

    fn give_up_stream(&mut self, e: &loadmark_live::LiveError) {
        if !self.failed {
            eprintln!("\nloadmark: warning: {e}; the stream stops here, the run goes on");
        }
        self.failed = true;
        self.stream = None;
    }

    /// The run's report is ready: it ends the stream, and the terminal view gives the
    /// screen back for the report.
    pub fn finish(&mut self, report: &Report) {
        self.leave_tui();
        if let Some(d) = &self.dashboard {
            d.finish(loadmark_report::render_html(report));
        }
        if let Some(w) = &mut self.stream {
            if let Err(e) = w.summary(report) {
                self.give_up_stream(&e);
            }
        }
        self.stream = None;
    }

    /// A plan's steps have all run: the dashboard offers the bundle's report.
    pub fn finish_bundle(&mut self, bundle: &loadmark_report::Bundle) {
        if let Some(d) = &self.dashboard {
            d.finish(loadmark_report::render_html_bundle(bundle));
        }
    }

    /// Gives the terminal back, if the view has it.
    pub fn leave_tui(&mut self) {
        if let Some(mut t) = self.tui.take() {
            t.leave();
        }
    }

    /// The process is about to end: the endpoint waits for its final scrape (bounded).
    pub fn linger(&mut self) {
        self.leave_tui();
        if let Some((url, mut r)) = self.remote.take() {
            match r.finish(REMOTE_WRITE_PATIENCE) {
                None => eprintln!(
                    "loadmark: warning: --remote-write {url}: the last push did not finish within {REMOTE_WRITE_PATIENCE:?}"
                ),
                Some(d) if d.failed > 0 => eprintln!(
                    "loadmark: warning: --remote-write {url}: {} of {} pushes failed; the last: {}",
                    d.failed,
                    d.failed + d.accepted,
                    d.last_error.unwrap_or_default()
                ),
                Some(_) => {}
            }
        }
        if let Some(d) = &self.dashboard {
            if !d.linger(DASHBOARD_PATIENCE) {
                eprintln!(
                    "loadmark: a page watching the dashboard did not fetch the final report within {DASHBOARD_PATIENCE:?}; the dashboard stops"
                );
            }
        }
        let Some(e) = &self.exporter else { return };
        if self.linger.is_zero() {
            return;
        }
        eprintln!(
            "loadmark: keeping http://{}/metrics up until it is scraped once more (at most {:?})",
            e.local_addr(),
            self.linger
        );
        if !e.linger(self.linger) {
            eprintln!("loadmark: no scrape came; the metrics endpoint stops");
        }
    }
}

/// The terminal view, or the progress line with a note saying why not.
fn start_tui() -> Option<Tui> {
    // q or Ctrl-C (a key in raw mode) stop the run as a Ctrl-C signal does, once: a second
    // signal would end the process at once, with the terminal still in raw mode.
    let quit_sent = std::sync::atomic::AtomicBool::new(false);
    let quit = move || {
        if !quit_sent.swap(true, std::sync::atomic::Ordering::Relaxed) {
            // SAFETY: kill(2) on our own pid; no memory involved.
            unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
        }
    };
    match Tui::start(quit) {
        Ok(t) => Some(t),
        Err(why) => {
            eprintln!("loadmark: --tui: {why}; showing the progress line instead");
            None
        }
    }
}
