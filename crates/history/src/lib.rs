//! loadmark's results history: every run recorded with its full result, trends a person can
//! read, change points found with a stated false-positive rate, and a regression gate for CI
//! that knows the noise of the series instead of a fixed threshold.
//!
//! ```no_run
//! # fn demo(report: &loadmark_report::Report) -> Result<(), loadmark_history::StoreError> {
//! use loadmark_history::{Location, NewRun, Store};
//! let mut store = Store::open(&Location::parse("history.sqlite"))?;
//! store.insert(&[NewRun::of_report(report, &Default::default())])?;
//! let runs = store.runs()?;
//! let metrics = [loadmark_history::metric("p99").unwrap()];
//! let trends = loadmark_history::trends(&runs, &[], &metrics, &Default::default());
//! print!("{}", loadmark_history::render::table(&trends));
//! # Ok(()) }
//! ```
//!
//! Design decisions:
//! - One schema for SQLite and PostgreSQL, in versioned migrations (`store.rs`); a store of a
//!   newer schema, a damaged file or another program's database is refused with its name.
//! - The result JSON is stored as loadmark wrote it (histograms included), so any figure can
//!   be recomputed later; the figures trends read are extracted once, at recording time.
//! - A series is plan hash + step + target + the tags the reader chooses (`--by`), decided when
//!   reading, so a tag recorded today can split a series later.
//! - Detection (`detect.rs`) and the gate (`gate.rs`) are pure functions of a series' values:
//!   E-divisive means with a permutation test (seeded, so the same series gives the same
//!   answer), and a one-sided t prediction test of the newest run against the level since the
//!   last change point.
//! - No tokio, no engine: the CLI records after a run has ended, never during the load.
//!
//! Layout: `record` (what a run contributes), `store` + `backend` (the databases),
//! `series` (grouping, trends), `detect`, `gate`, `render` (table, CSV, HTML).

mod backend;
pub mod detect;
pub mod gate;
mod record;
pub mod render;
mod series;
mod store;

pub use detect::{e_divisive, ChangePoint, Settings};
pub use record::{
    metric, metrics_of, params_text, plan_file_hash, runs_of_file, FileError, MetricInfo, NewRun,
    RunInfo, Unit, METRICS,
};
pub use series::{group, short, trends, SeriesKey, Trend};
pub use store::{
    default_location, Inserted, Location, Store, StoreError, StoredRun, SCHEMA_VERSION,
};

#[cfg(test)]
mod store_tests;
