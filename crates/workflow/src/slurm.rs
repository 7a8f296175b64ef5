//! `--slurm N`: one plan run as N srun tasks, each the hidden `worker` command on its own
//! segment, their framed results collected and merged into one report.

use std::ffi::OsString;
use std::path::PathBuf;

use loadmark_cluster::frame::Collected;
use loadmark_cluster::slurm::{Srun, SrunOutcome};
use loadmark_cluster::ClusterError;
use loadmark_engine::StopHandle;
use loadmark_plan::Plan;
use loadmark_report::{MergeOptions, Report};

use crate::segment::{parse_start, SegmentError};
use crate::{Event, Observer};

/// How a plan is run over Slurm: from `run`/`ws` flags, or per step of `bench --slurm`.
#[derive(Debug, Clone)]
pub struct SlurmRun {
    pub tasks: u32,
    /// `--start-at` (default: three seconds from now, for srun to start every task).
    pub start_at: Option<String>,
    /// `--run-id` (default: `slurm-START`).
    pub run_id: Option<String>,
    /// The srun program (`LOADMARK_SRUN`, else `srun` on PATH).
    pub program: PathBuf,
    /// The loadmark binary every task runs as `worker`.
    pub exe: PathBuf,
    /// Extra srun options (`--srun-arg`).
    pub srun_args: Vec<String>,
}

/// Why a Slurm run failed.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    /// `--slurm 0`: give at least one task.
    #[error("--slurm: expected a number of tasks, at least 1")]
    NoTasks,
    /// Linux takes at most `MAX_ARG_STRLEN` bytes in one argument of a command; past it srun
    /// would not start, with a bare "Argument list too long".
    #[error(
        "--slurm: the plan is {bytes} bytes as JSON, over the {limit} bytes Linux allows in \
         one argument of srun's command line; a smaller body or data file would fit, or run \
         the same command with --segment K/N on each machine instead of --slurm"
    )]
    PlanTooLong { bytes: usize, limit: usize },
    /// `--start-at` is malformed.
    #[error(transparent)]
    Start(#[from] SegmentError),
    /// The plan could not be written as JSON for the workers (a bug).
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// srun could not be started: install Slurm's client or set LOADMARK_SRUN.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// A task wrote something framed as a result that is not one (a different loadmark
    /// version on that node?).
    #[error("task {task} sent a result that is not a report: {error}")]
    NotAReport { task: u32, error: String },
    /// No task sent its result back: srun's own messages (on stderr) say why.
    #[error("no task reported a result: missing segments {missing} (srun {status}); see srun's messages above")]
    NoResult { missing: String, status: String },
    /// The results could not be merged (the message says why).
    #[error("{error} (srun {status}{})", if *.cancelled { ", cancelled" } else { "" })]
    Merge {
        error: String,
        status: String,
        cancelled: bool,
    },
}

impl SlurmError {
    /// The task count and the start time are the user's to fix; the rest is the run's.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            SlurmError::NoTasks | SlurmError::Start(_) | SlurmError::PlanTooLong { .. }
        )
    }
}

/// Linux's limit on one argument of a command, its terminating NUL included (32 pages).
const MAX_ARG_STRLEN: usize = 32 * 4096;

/// The command line every task runs: the worker on its share (`env/N`: its index from
/// SLURM_PROCID), all starting at `start`, all naming the run `run_id`.
pub fn worker_command(
    exe: &std::path::Path,
    plan_json: String,
    tasks: u32,
    start: &str,
    run_id: &str,
) -> Vec<OsString> {
    vec![
        exe.into(),
        "worker".into(),
        "--plan-json".into(),
        plan_json.into(),
        "--segment".into(),
        format!("env/{tasks}").into(),
        "--start-at".into(),
        start.into(),
        "--run-id".into(),
        run_id.into(),
    ]
}

/// Runs `plan` as `how.tasks` srun tasks and merges what they report; the flag says whether
/// the run was cut short (`stop` was asked while srun ran: what came back is merged, partial).
pub fn run(
    plan: &Plan,
    how: &SlurmRun,
    stop: &StopHandle,
    observer: &mut dyn Observer,
) -> Result<(Report, bool), SlurmError> {
    let tasks = how.tasks;
    if tasks == 0 {
        return Err(SlurmError::NoTasks);
    }
    // Starting a step takes a fraction of a second on an idle cluster, seconds on a busy one.
    let (_, start) = parse_start(how.start_at.as_deref().unwrap_or("+3s"))?;
    let run_id = how
        .run_id
        .clone()
        .unwrap_or_else(|| format!("slurm-{start}"));
    let plan_json = serde_json::to_string(plan)?;
    if plan_json.len() >= MAX_ARG_STRLEN {
        return Err(SlurmError::PlanTooLong {
            bytes: plan_json.len(),
            limit: MAX_ARG_STRLEN - 1,
        });
    }
    let srun = Srun {
        program: how.program.clone(),
        tasks,
        worker: worker_command(&how.exe, plan_json, tasks, &start, &run_id),
        extra: how.srun_args.clone(),
    };
    observer.event(&Event::SrunStarting {
        tasks,
        start: &start,
    });
    let stop = stop.clone();
    let outcome = loadmark_cluster::slurm::run(&srun, move || stop.is_stopped())?;
    let merged = merge_outcome(&outcome, tasks, observer)?;
    Ok((merged, outcome.cancelled))
}

/// The tasks' results as one report; a task whose result was cut off is told to `observer`.
fn merge_outcome(
    outcome: &SrunOutcome,
    tasks: u32,
    observer: &mut dyn Observer,
) -> Result<Report, SlurmError> {
    let mut reports = Vec::new();
    let mut names = Vec::new();
    let mut problems = Vec::new();
    for (task, got) in &outcome.results {
        match got {
            Collected::Result(json) => {
                reports.push(Report::from_json(json).map_err(|e| SlurmError::NotAReport {
                    task: *task,
                    error: e.to_string(),
                })?);
                names.push(format!("task {task}"));
            }
            Collected::Incomplete(why) => problems.push(why.clone()),
        }
    }
    for why in &problems {
        observer.event(&Event::TaskIncomplete { why });
    }
    if reports.is_empty() {
        // Worded as merge words a partial result, so a user (and a script) reads the same.
        return Err(SlurmError::NoResult {
            missing: all_segments(tasks),
            status: outcome.status.to_string(),
        });
    }
    loadmark_report::merge_with_options(
        &reports,
        &names,
        MergeOptions {
            force: false,
            allow_partial: outcome.cancelled,
        },
    )
    .map_err(|e| SlurmError::Merge {
        error: e.to_string(),
        status: outcome.status.to_string(),
        cancelled: outcome.cancelled,
    })
}

/// "0, 1, 2": every segment of a run of `tasks` tasks.
fn all_segments(tasks: u32) -> String {
    let all: Vec<String> = (0..tasks).map(|t| t.to_string()).collect();
    all.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::os::unix::process::ExitStatusExt;

    struct Heard(Vec<String>);
    impl Observer for Heard {
        fn event(&mut self, event: &Event<'_>) {
            self.0.push(format!("{event:?}"));
        }
    }

    #[test]
    fn every_task_runs_the_worker_on_its_share() {
        let argv = worker_command(
            std::path::Path::new("/bin/lm"),
            "{}".into(),
            4,
            "2026-12-01T10:00:00Z",
            "r1",
        );
        let argv: Vec<&str> = argv.iter().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(
            argv,
            [
                "/bin/lm",
                "worker",
                "--plan-json",
                "{}",
                "--segment",
                "env/4",
                "--start-at",
                "2026-12-01T10:00:00Z",
                "--run-id",
                "r1"
            ]
        );
    }

    #[test]
    fn a_plan_too_long_for_one_argument_is_refused_before_srun() {
        let how = SlurmRun {
            tasks: 2,
            start_at: None,
            run_id: None,
            program: "/nonexistent/srun".into(),
            exe: "/nonexistent/loadmark".into(),
            srun_args: Vec::new(),
        };
        let mut plan = test_plan();
        plan.request.body = vec![b'x'; 200_000];
        let mut heard = Heard(Vec::new());
        let e = run(&plan, &how, &StopHandle::new(), &mut heard).unwrap_err();
        assert!(e.is_usage(), "{e}");
        let SlurmError::PlanTooLong { bytes, limit } = e else {
            panic!("{e}")
        };
        assert!(bytes > 200_000 && limit == 131_071, "{bytes} {limit}");
        assert!(heard.0.is_empty(), "nothing started: {:?}", heard.0);
    }

    #[test]
    fn no_task_is_refused_before_anything_starts() {
        let how = SlurmRun {
            tasks: 0,
            start_at: None,
            run_id: None,
            program: "/nonexistent/srun".into(),
            exe: "/nonexistent/loadmark".into(),
            srun_args: Vec::new(),
        };
        let plan = test_plan();
        let mut heard = Heard(Vec::new());
        let e = run(&plan, &how, &StopHandle::new(), &mut heard).unwrap_err();
        assert!(matches!(e, SlurmError::NoTasks) && e.is_usage());
        assert!(heard.0.is_empty(), "nothing said: {:?}", heard.0);
    }

    #[test]
    fn no_result_names_every_missing_segment_and_cut_off_tasks_are_told() {
        let mut results = BTreeMap::new();
        results.insert(1, Collected::Incomplete("task 1: result cut off".into()));
        let outcome = SrunOutcome {
            results,
            other: Vec::new(),
            status: std::process::ExitStatus::from_raw(1 << 8),
            cancelled: false,
        };
        let mut heard = Heard(Vec::new());
        let e = merge_outcome(&outcome, 3, &mut heard).unwrap_err();
        assert_eq!(
            e.to_string(),
            "no task reported a result: missing segments 0, 1, 2 (srun exit status: 1); see srun's messages above"
        );
        assert!(!e.is_usage());
        assert_eq!(heard.0.len(), 1);
        assert!(heard.0[0].contains("task 1: result cut off"));
    }

    #[test]
    fn a_task_result_that_is_not_a_report_is_named() {
        let mut results = BTreeMap::new();
        results.insert(2, Collected::Result("{\"not\": \"a report\"}".into()));
        let outcome = SrunOutcome {
            results,
            other: Vec::new(),
            status: std::process::ExitStatus::from_raw(0),
            cancelled: false,
        };
        let e = merge_outcome(&outcome, 3, &mut Heard(Vec::new())).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("task 2 sent a result that is not a report: "),
            "{e}"
        );
    }

    fn test_plan() -> Plan {
        crate::bench::tests::plan_for("http://127.0.0.1:1/")
    }
}
