//! Watching a loadmark run while it goes: a streamed JSON Lines result ([`StreamWriter`]),
//! an OpenMetrics endpoint for Prometheus ([`Exporter`]), a terminal dashboard and a web
//! dashboard with live charts ([`WebDashboard`]).
//!
//! Everything here is fed [`Tick`]s: the seconds the engine has made final since the last
//! tick, each exactly as the report's series will have it, with its histograms. Nothing reads
//! the engine's hot state, so watching cannot slow the load threads; the price is that live
//! numbers trail the clock by the hand-over delay (about 1-1.5 s).
//!
//! ```no_run
//! use loadmark_live::{Exporter, Labels, Tick};
//! # fn plan() -> loadmark_plan::Plan { panic!("the example only shows the calls") }
//! let exporter = Exporter::bind("127.0.0.1:0".parse().unwrap()).unwrap();
//! exporter.begin(Labels { run_id: "r1".into(), step: 1, segment: None }, &plan());
//! exporter.tick(&Tick { elapsed: std::time::Duration::from_secs(1), seconds: &[], finished: true, ..Tick::default() });
//! exporter.linger(std::time::Duration::from_secs(15));
//! ```
//!
//! Design decisions:
//! - The live numbers are the report's numbers: the same final seconds, the same
//!   `partial_s` marking of the last one, counters that exclude warm-up as the totals do.
//! - The exposition is written by hand (a few families, one format): no registry or
//!   dependency; counters carry the time of the end of the last second they hold, so
//!   Prometheus puts them on the run's own time axis.
//! - `--remote-write` pushes the same exposition to a Prometheus remote-write receiver
//!   ([`RemoteWriter`]), protobuf and snappy written by hand, from its own thread.
//! - The endpoint lingers after the run until one scrape fetched the final numbers (bounded),
//!   so the last second is never lost between two scrapes.

mod dashboard;
mod exporter;
mod openmetrics;
mod remote_write;
mod stream;
mod tui;
mod web;

use std::time::Duration;

pub use dashboard::{Dashboard, MIN_SIZE};
pub use exporter::Exporter;
pub use loadmark_metrics::{Busy, Second};
pub use openmetrics::{Format, Labels, LATENCY_BUCKETS_S};
pub use remote_write::{Delivered, RemoteWriter};
pub use stream::StreamWriter;
pub use tui::{NoTui, Tui};
pub use web::WebDashboard;

/// What a live view is fed, once or twice a second.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tick<'a> {
    /// Time since the run's start; on the last tick, the run's wall time as the report has it.
    pub elapsed: Duration,
    /// The seconds made final since the previous tick, in order.
    pub seconds: &'a [Second],
    /// Requests begun and not yet ended, at the workers' latest hand-overs.
    pub in_flight: u64,
    /// Connections open now (WebSocket: one per session).
    pub open_connections: u64,
    /// The busiest load thread's CPU use: the saturation verdict's input.
    pub busiest_worker: Busy,
    /// The last tick: the load stopped and every second is final.
    pub finished: bool,
}

/// A live output failed.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The stream file could not be written: check the path and the free space.
    #[error("--stream {}: {source}", path.display())]
    Stream {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// The remote-write URL cannot be used.
    #[error("--remote-write {url}: {why}")]
    RemoteWrite { url: String, why: String },
    /// The metrics address could not be bound: in use, or not an address of this machine.
    #[error("--metrics-listen {addr}: {source}")]
    Bind {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    /// The dashboard address could not be bound: in use, or not an address of this machine.
    #[error("--dashboard {addr}: {source}")]
    Dashboard {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
}
