//! Runs one loadmark plan on several machines through launchers people already operate,
//! with no protocol of loadmark's own: Slurm (`srun`, [`slurm`]) and Kubernetes (an Indexed
//! Job, [`k8s`]). Each machine runs one segment of the plan (`loadmark_plan::Segment`) and
//! prints its result framed on standard output ([`frame`]); the launcher collects the
//! results and `loadmark_report` merges them exactly.
//!
//! ```
//! use loadmark_cluster::frame::{frame, Collected, Collector};
//! let mut c = Collector::new();
//! for line in frame("{\"ok\":true}").lines() {
//!     c.feed_labelled(&format!("3: {line}"));
//! }
//! assert_eq!(c.finish().0[&3], Collected::Result("{\"ok\":true}".into()));
//! ```
//!
//! Design decisions:
//! - **Standard output, not files.** No shared file system is assumed: srun relays each
//!   task's output to the launcher, `kubectl logs` returns a pod's.
//! - **The plan travels whole.** Workers get the validated plan as JSON, so every segment
//!   runs the same plan by construction and the plan hash in each result proves it.
//! - **The launcher owns nothing at run time.** Starting together is an absolute start
//!   time chosen before launch; a worker that dies is a missing segment, named at merge.

pub mod frame;
pub mod k8s;
pub mod slurm;

/// Why a launch failed.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The launcher program could not be started: install Slurm's client (`srun`) or put it
    /// on PATH.
    #[error("cannot run {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
}
