//! One run over several machines: `--segment`, `--start-at`, `--tag-requests`, `--slurm N`
//! on `run` and `ws`, and the hidden `worker` command that srun (or a Kubernetes pod) runs.

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Result;
use clap::Args;
use loadmark_cluster::frame::{frame, Collected};
use loadmark_engine::Part;
use loadmark_plan::{parse_duration, parse_rfc3339, Plan, Segment};
use loadmark_report::{rfc3339, MergeOptions, Report, Split};

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

/// A segment to run, resolved from flags and the environment.
pub(crate) struct Resolved {
    pub segment: Segment,
    pub start_at: Option<SystemTime>,
    pub start_text: Option<String>,
    pub run_id: String,
}

fn env_u32(name: &str) -> Option<u32> {
    std::env::var(name).ok()?.trim().parse().ok()
}

/// Parses `--segment`: `I/N`, `I/W:W`, `env`, `env/N`, `env/W:W`.
pub(crate) fn parse_segment(spec: &str) -> Result<Segment> {
    let Some(rest) = spec.strip_prefix("env") else {
        return Ok(Segment::parse(spec, "--segment")?);
    };
    let index = env_u32("SLURM_PROCID")
        .or_else(|| env_u32("JOB_COMPLETION_INDEX"))
        .ok_or_else(|| {
            UsageError(format!(
                "--segment {spec}: neither SLURM_PROCID nor JOB_COMPLETION_INDEX is set (run it under srun or in an Indexed Job, or give INDEX/COUNT)"
            ))
        })?;
    let shares = match rest.strip_prefix('/') {
        Some(shares) => shares.to_string(),
        None if rest.is_empty() => env_u32("SLURM_NTASKS")
            .ok_or_else(|| {
                UsageError(format!(
                    "--segment {spec}: SLURM_NTASKS is not set: give the count, e.g. env/8"
                ))
            })?
            .to_string(),
        None => {
            return Err(UsageError(format!(
                "--segment {spec}: expected env, env/COUNT or env/W0:W1:..."
            ))
            .into())
        }
    };
    Ok(Segment::parse(&format!("{index}/{shares}"), "--segment")?)
}

/// Parses `--start-at`: RFC 3339, or `+DURATION` from now (resolved to whole seconds, so
/// the text every segment carries is exact).
pub(crate) fn parse_start(text: &str) -> Result<(SystemTime, String)> {
    if let Some(d) = text.strip_prefix('+') {
        let d = parse_duration(d).map_err(|_| {
            UsageError(format!(
                "--start-at {text}: expected +DURATION such as +5s, or an RFC 3339 time"
            ))
        })?;
        let at = SystemTime::now() + d;
        let secs = at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() + u64::from(d.subsec_nanos() > 0));
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
        return Ok((at, rfc3339(at)));
    }
    Ok((parse_rfc3339(text, "--start-at")?, text.trim().to_string()))
}

fn default_run_id(start: Option<&str>) -> String {
    match (
        std::env::var("SLURM_JOB_ID"),
        std::env::var("SLURM_STEP_ID"),
    ) {
        (Ok(job), Ok(step)) => format!("slurm-{job}.{step}"),
        _ => start.map_or_else(|| "run".to_string(), |s| format!("start-{s}")),
    }
}

impl Resolved {
    fn new(segment: &str, start_at: Option<&str>, run_id: Option<&str>) -> Result<Resolved> {
        let segment = parse_segment(segment)?;
        let (start_at, start_text) = match start_at {
            Some(t) => {
                let (at, text) = parse_start(t)?;
                (Some(at), Some(text))
            }
            None => (None, None),
        };
        let run_id = run_id
            .map(str::to_string)
            .unwrap_or_else(|| default_run_id(start_text.as_deref()));
        Ok(Resolved {
            segment,
            start_at,
            start_text,
            run_id,
        })
    }

    pub(crate) fn part(&self) -> Part {
        Part {
            segment: self.segment.clone(),
            start_at: self.start_at,
            script: None,
        }
    }

    /// Marks a segment's report with its place in the run.
    pub(crate) fn mark(&self, report: &mut Report, skew: Option<f64>) {
        report.split = Some(Split::of_segment(
            report,
            &self.run_id,
            &self.segment,
            self.start_text.as_deref(),
            skew,
            &hostname(),
        ));
    }
}

/// The segment flags of `run`/`ws`, when a segment was asked for.
pub(crate) fn resolve(flags: &SplitFlags) -> Result<Option<Resolved>> {
    match &flags.segment {
        Some(spec) => Ok(Some(Resolved::new(
            spec,
            flags.start_at.as_deref(),
            flags.run_id.as_deref(),
        )?)),
        None if flags.start_at.is_some() => Ok(Some(Resolved::new(
            "0/1",
            flags.start_at.as_deref(),
            flags.run_id.as_deref(),
        )?)),
        None => Ok(None),
    }
}

/// `--tag-requests`: the two headers, rendered per request by the template engine.
pub(crate) fn tagged(plan: &Plan) -> Plan {
    let mut plan = plan.clone();
    let tags = [
        ("X-Loadmark-Seq".to_string(), "{{seq}}".to_string()),
        ("X-Loadmark-Segment".to_string(), "{{segment}}".to_string()),
    ];
    plan.request.headers.extend(tags.iter().cloned());
    for (_, other) in &mut plan.mix.others {
        other.headers.extend(tags.iter().cloned());
    }
    plan.mix.templated = true;
    plan
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
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
    let plan: Plan = serde_json::from_str(&json)
        .map_err(|e| UsageError(format!("worker: the plan JSON is not a loadmark plan: {e}")))?;
    plan.validate()?;
    let resolved = Resolved::new(
        &args.segment,
        args.start_at.as_deref(),
        args.run_id.as_deref(),
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
    let tasks = how.tasks;
    if tasks == 0 {
        return Err(UsageError("--slurm: expected a number of tasks, at least 1".into()).into());
    }
    // Starting a step takes a fraction of a second on an idle cluster, seconds on a busy one.
    let (_, start) = parse_start(how.start_at.unwrap_or("+3s"))?;
    let run_id = how
        .run_id
        .map_or_else(|| format!("slurm-{start}"), str::to_string);
    let exe = std::env::current_exe()?;
    let worker: Vec<OsString> = vec![
        exe.into(),
        "worker".into(),
        "--plan-json".into(),
        serde_json::to_string(plan)?.into(),
        "--segment".into(),
        format!("env/{tasks}").into(),
        "--start-at".into(),
        start.clone().into(),
        "--run-id".into(),
        run_id.into(),
    ];
    let srun = loadmark_cluster::slurm::Srun {
        program: std::env::var_os("LOADMARK_SRUN").map_or_else(|| "srun".into(), Into::into),
        tasks,
        worker,
        extra: how.srun_args.to_vec(),
    };
    if !how.quiet {
        eprintln!("loadmark: srun {tasks} tasks, starting together at {start}");
    }
    let stop = crate::commands::stop_handle();
    let outcome = loadmark_cluster::slurm::run(&srun, move || stop.is_stopped())?;
    let mut reports = Vec::new();
    let mut names = Vec::new();
    let mut problems = Vec::new();
    for (task, got) in &outcome.results {
        match got {
            Collected::Result(json) => {
                reports.push(Report::from_json(json).map_err(|e| {
                    anyhow::anyhow!("task {task} sent a result that is not a report: {e}")
                })?);
                names.push(format!("task {task}"));
            }
            Collected::Incomplete(why) => problems.push(why.clone()),
        }
    }
    for p in problems {
        eprintln!("loadmark: {p}");
    }
    if reports.is_empty() {
        // Worded as merge words a partial result, so a user (and a script) reads the same.
        let all: Vec<String> = (0..tasks).map(|t| t.to_string()).collect();
        anyhow::bail!(
            "no task reported a result: missing segments {} (srun {}); see srun's messages above",
            all.join(", "),
            outcome.status
        );
    }
    let merged = loadmark_report::merge_with_options(
        &reports,
        &names,
        MergeOptions {
            force: false,
            allow_partial: outcome.cancelled,
        },
    )
    .map_err(|e| {
        anyhow::anyhow!(
            "{e} (srun {}{})",
            outcome.status,
            if outcome.cancelled { ", cancelled" } else { "" }
        )
    })?;
    Ok((merged, outcome.cancelled))
}
