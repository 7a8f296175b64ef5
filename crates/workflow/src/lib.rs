//! The plan-file workflow of loadmark, apart from the binary: running a plan's steps in
//! order (launching its targets and services, monitoring them, running each step here or
//! over Slurm tasks), one segment of a split run, the Kubernetes Job of one step, and the
//! merge and compare gates over saved results.
//!
//! ```no_run
//! use loadmark_workflow::{bench, Event, Observer};
//!
//! struct Quiet;
//! impl Observer for Quiet {
//!     fn event(&mut self, _event: &Event<'_>) {}
//! }
//! let merged = loadmark_workflow::gate::merge_files(
//!     &["a.json".into(), "b.json".into()],
//!     &loadmark_workflow::gate::MergeRequest::default(),
//! );
//! # let _ = (merged, bench::step_name);
//! ```
//!
//! Design decisions:
//! - **Typed inputs, typed results.** A caller turns its flags into options
//!   ([`bench::BenchOptions`], [`slurm::SlurmRun`], [`gate::CompareRequest`]) and gets back a
//!   `Bundle`, a `Report`, a `Comparison`, or one error enum per operation (thiserror), whose
//!   [`is_usage`] says whether the user's input was at fault (the binary's exit code 2).
//! - **Nothing printed, nothing exited.** What a user may want to read while a plan runs
//!   (a server starting, a step's figures, a note) is an [`Event`] handed to an [`Observer`];
//!   the wording, the quiet flag and the streams are the caller's. A local step's progress
//!   and its report go through a [`Host`], which the binary fills with its progress line,
//!   live outputs and the report of its build.
//! - **The environment is an input.** Environment variables (`SLURM_PROCID`, `PATH`), the
//!   binary's own path and the stop handle are passed in, so the pure parts (step names,
//!   segment specs, srun command lines, missing programs, gates) are unit-tested without a
//!   process around them.

pub mod bench;
pub mod find;
pub mod gate;
pub mod k8s;
pub mod launch;
mod observer;
pub mod segment;
pub mod services;
pub mod slurm;

pub use observer::{Event, Host, HostError, Observer};

/// Whether `e` is one of this crate's errors that the user's input caused (a plan, a flag, a
/// file given): the binary exits 2 for these, 1 for the rest. Walks any error chain.
pub fn is_usage(e: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(e) = e.downcast_ref::<bench::BenchError>() {
        e.is_usage()
    } else if let Some(e) = e.downcast_ref::<find::FindError>() {
        e.is_usage()
    } else if e.downcast_ref::<find::ObjectiveError>().is_some() {
        true
    } else if let Some(e) = e.downcast_ref::<slurm::SlurmError>() {
        e.is_usage()
    } else if let Some(e) = e.downcast_ref::<segment::SegmentError>() {
        e.is_usage()
    } else if let Some(e) = e.downcast_ref::<k8s::K8sError>() {
        e.is_usage()
    } else if let Some(e) = e.downcast_ref::<launch::LaunchSpecError>() {
        e.is_usage()
    } else {
        e.downcast_ref::<gate::ReadError>().is_some()
            || e.downcast_ref::<gate::ThresholdsError>().is_some()
            || e.downcast_ref::<gate::MergeRunsError>().is_some()
            || e.downcast_ref::<gate::CompareRunsError>().is_some()
    }
}
