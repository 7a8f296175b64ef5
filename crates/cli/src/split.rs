//! One run over several machines: `--segment`, `--start-at`, `--tag-requests`, `--slurm N`
//! on `run` and `ws`, and the hidden `worker` command that srun (or a Kubernetes pod) runs.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use loadmark_cluster::frame::frame;
use loadmark_plan::Plan;
use loadmark_report::Report;

use crate::args::ReportFlags;
use crate::UsageError;

/// Flags of a split run, shared by `run` and `ws`.
#[derive(Args, Debug, Clone, Default)]
pub struct SplitFlags {
    /// Run one share of the run: INDEX/COUNT (0-based, e.g. 3/8), INDEX/W0:W1:... for machines
    /// of different sizes (0/2:1:1 is half), or 'env', 'env/COUNT', 'env/W0:W1:...' to take
    /// INDEX from SLURM_PROCID or JOB_COMPLETION_INDEX (and COUNT from SLURM_NTASKS)
    #[arg(long = "segment", value_name = "SPEC")]
    pub segment: Option<String>,

    /// When the schedule starts, the same for every segment: RFC 3339 (2026-12-01T10:00:00Z)
    /// or +DURATION from now (+5s; on one machine only, or with --slurm)
    #[arg(long = "start-at", value_name = "TIME")]
    pub start_at: Option<String>,

    /// Names the run in every segment's result [default: Slurm's job and step id, else the
    /// start time, else 'run']
    #[arg(long = "run-id", value_name = "ID")]
    pub run_id: Option<String>,

    /// Send X-Loadmark-Seq (the request's number in the whole run) and X-Loadmark-Segment
    /// headers with every request, so the server can tell who sent what
    #[arg(long = "tag-requests")]
    pub tag_requests: bool,

    /// Split the run over N Slurm tasks (srun), collect and merge their results; thresholds
    /// and --strict are checked on the merged result
    #[arg(long = "slurm", value_name = "N")]
    pub slurm: Option<u32>,

    /// Extra srun option, repeatable (e.g. --srun-arg=--partition=load)
    #[arg(long = "srun-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub srun_args: Vec<String>,
}

/// The hidden command every srun task or pod runs: one segment of a plan given as JSON,
/// its result framed on standard output.
#[derive(Args, Debug)]
pub struct WorkerArgs {
    /// The validated plan, as JSON (`loadmark k8s` and `--slurm` write it)
    #[arg(long = "plan-json", value_name = "JSON")]
    pub plan_json: Option<String>,
    /// A file holding the plan JSON (a mounted ConfigMap)
    #[arg(long = "plan-file", value_name = "FILE")]
    pub plan_file: Option<std::path::PathBuf>,
    #[arg(long = "segment", value_name = "SPEC", default_value = "env")]
    pub segment: String,
    #[arg(long = "start-at", value_name = "TIME")]
    pub start_at: Option<String>,
    #[arg(long = "run-id", value_name = "ID")]
    pub run_id: Option<String>,
}

// A segment to run, resolved from flags and the environment; the request tags.
pub(crate) use loadmark_workflow::segment::{tagged, Resolved};

/// The process's environment, as the workflow reads it.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The segment flags of `run`/`ws`, when a segment was asked for.
pub(crate) fn resolve(flags: &SplitFlags) -> Result<Option<Resolved>> {
    Ok(Resolved::from_flags(
        flags.segment.as_deref(),
        flags.start_at.as_deref(),
        flags.run_id.as_deref(),
        &env,
    )?)
}

/// The srun program: `LOADMARK_SRUN` (a test's fake srun), else `srun` on PATH.
pub(crate) fn srun_program() -> std::path::PathBuf {
    std::env::var_os("LOADMARK_SRUN").map_or_else(|| "srun".into(), Into::into)
}

/// A launcher stops its workers with SIGUSR2: srun forwards it to every task as it is,
/// whereas it answers SIGTERM by killing the step (SIGKILL: no result would come back).
/// Blocked here, before any other thread exists, and taken by one thread with `sigwait`.
fn stop_on_sigusr2() {
    // SAFETY: plain signal-mask calls on a zeroed sigset_t this function owns.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGUSR2);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let stop = crate::commands::stop_handle();
    std::thread::spawn(move || {
        let mut signal = 0;
        // SAFETY: waits on the set blocked above; `signal` is a valid out-pointer.
        if unsafe { libc::sigwait(&set, &mut signal) } == 0 {
            eprintln!("loadmark: worker stopping (the launcher was interrupted)");
            stop.stop();
        }
    });
}

/// `loadmark worker`: runs one segment and prints its framed result.
pub fn worker(args: &WorkerArgs) -> Result<ExitCode> {
    stop_on_sigusr2();
    let json = match (&args.plan_json, &args.plan_file) {
        (Some(j), None) => j.clone(),
        (None, Some(f)) => std::fs::read_to_string(f)
            .map_err(|e| UsageError(format!("--plan-file {}: cannot read it: {e}", f.display())))?,
        _ => return Err(UsageError("worker: give --plan-json or --plan-file".into()).into()),
    };
    let mut plan: Plan = serde_json::from_str(&json)
        .map_err(|e| UsageError(format!("worker: the plan JSON is not a loadmark plan: {e}")))?;
    plan.validate()?;
    crate::grpc::restore_codecs(&mut plan)?;
    let resolved = Resolved::new(
        &args.segment,
        args.start_at.as_deref(),
        args.run_id.as_deref(),
        &env,
    )?;
    let result = crate::commands::execute(
        &plan,
        &resolved.part(),
        true,
        &mut crate::live::Live::none(),
    )?;
    let start_skew = result.start_skew;
    let mut report = crate::commands::build_report(&plan, result);
    resolved.mark(&mut report, start_skew);
    crate::output::print_out(frame(&serde_json::to_string(&report)?))?;
    Ok(ExitCode::SUCCESS)
}

/// What one srun step needs: from `run`/`ws` flags, or per step of `bench --slurm`.
pub(crate) struct SlurmRun<'a> {
    pub tasks: u32,
    pub start_at: Option<&'a str>,
    pub run_id: Option<&'a str>,
    pub srun_args: &'a [String],
    pub quiet: bool,
}

impl<'a> SlurmRun<'a> {
    /// From `run`/`ws` flags; refuses `--segment` beside `--slurm`.
    pub(crate) fn from_flags(flags: &'a ReportFlags, tasks: u32) -> Result<SlurmRun<'a>> {
        if flags.split.segment.is_some() {
            return Err(UsageError(
                "--slurm and --segment: --slurm gives each task its own segment".into(),
            )
            .into());
        }
        Ok(SlurmRun {
            tasks,
            start_at: flags.split.start_at.as_deref(),
            run_id: flags.split.run_id.as_deref(),
            srun_args: &flags.split.srun_args,
            quiet: flags.quiet,
        })
    }
}

/// `--slurm N`: runs the plan as N srun tasks and merges what they report.
pub(crate) fn run_slurm(plan: &Plan, how: &SlurmRun) -> Result<(Report, bool)> {
    let run = loadmark_workflow::slurm::SlurmRun {
        tasks: how.tasks,
        start_at: how.start_at.map(str::to_string),
        run_id: how.run_id.map(str::to_string),
        program: srun_program(),
        exe: std::env::current_exe()?,
        srun_args: how.srun_args.to_vec(),
    };
    let stop = crate::commands::stop_handle();
    let mut stderr = crate::events::Stderr { quiet: how.quiet };
    Ok(loadmark_workflow::slurm::run(
        plan,
        &run,
        &stop,
        &mut stderr,
    )?)
}
