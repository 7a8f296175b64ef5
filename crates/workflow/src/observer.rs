//! What the workflow tells its caller while it runs, and what it asks of it: the seam
//! between the workflow (which decides) and the binary (which prints and shows).

use loadmark_engine::{Progress, RunResult};
use loadmark_plan::Plan;
use loadmark_report::{CapacityResult, CurvePoint, Report};

use crate::find::StepVerdict;

/// Something that happened that a user may want to read; the caller words it (the binary
/// prints each on stderr, `loadmark: ...`).
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<'a> {
    /// A plan's target is being launched before its first step.
    TargetStarting { name: &'a str, command: &'a str },
    /// A plan's service is being launched before the first step that needs it.
    ServiceStarting { name: &'a str, command: &'a str },
    /// A service is being stopped after the last step that needs it (or at the end).
    ServiceStopping { name: &'a str },
    /// A step did not run because a service it needs is not running; `note` is the
    /// sentence the bundle's notes carry.
    StepSkipped { note: &'a str },
    /// Step `number` of `total` starts; `command` is its `loadmark run` line.
    StepBegins {
        number: usize,
        total: usize,
        command: &'a str,
    },
    /// Something happened during step `number` (a service died meanwhile).
    StepNote { number: usize, note: &'a str },
    /// Step `number` ended with this report.
    StepDone { number: usize, report: &'a Report },
    /// A run of step `number`'s capacity search (a `find:` plan) ended: its verdict and its
    /// point of the curve.
    SearchStep {
        number: usize,
        verdict: &'a StepVerdict,
        point: &'a CurvePoint,
    },
    /// Step `number`'s capacity search ended with this result.
    SearchDone {
        number: usize,
        result: &'a CapacityResult,
    },
    /// `srun` is being started: `tasks` tasks whose schedules start at `start` (RFC 3339).
    SrunStarting { tasks: u32, start: &'a str },
    /// A task's result did not come back whole (the sentence says which and why).
    TaskIncomplete { why: &'a str },
}

/// Hears the workflow's [`Event`]s.
pub trait Observer {
    fn event(&mut self, event: &Event<'_>);
}

/// An error of the caller's own, from [`Host::step_begins`].
pub type HostError = Box<dyn std::error::Error + Send + Sync>;

/// What running a plan's steps needs from the program around it, besides hearing events:
/// its live outputs, its progress display, and the report of a local run (which records the
/// build of that program and the machine it runs on).
pub trait Host: Observer {
    /// Step `number` of `total` is about to send load (the live outputs label what follows).
    fn step_begins(&mut self, plan: &Plan, number: usize, total: usize) -> Result<(), HostError>;
    /// The engine is about to run `plan` on this machine.
    fn run_begins(&mut self, plan: &Plan);
    /// The engine's progress, about once a second, on the calling thread.
    fn progress(&mut self, progress: &Progress<'_>);
    /// The engine's run ended (well or not).
    fn run_ends(&mut self);
    /// The report of a local run of `plan`.
    fn report(&mut self, plan: &Plan, result: RunResult) -> Report;
}
