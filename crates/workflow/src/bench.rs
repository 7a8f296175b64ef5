//! Running a plan file's steps (`loadmark bench`): targets are outermost in the step order,
//! each launched before its first step and stopped after its last; services start before
//! the first step that needs them and stop after the last; every step runs here or over
//! Slurm tasks, with its target and services monitored; the result is one [`Bundle`]. In a
//! `find:` plan each step is a capacity search ([`crate::find`]) whose every run goes the
//! same way (here or over every Slurm task), and the step keeps the search's result.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use loadmark_engine::{EngineError, Part, StopHandle};
use loadmark_launch::{launch, LaunchError, Launched};
use loadmark_monitor::{find_pid_by_listener, find_pid_by_name, Listener, Monitor, MonitorError};
use loadmark_plan::{AttachFile, Column, FindSpec, LoadedPlan, Plan, Step, TableStyle};
use loadmark_report::{
    reproduce_command, Bundle, BundleService, BundleStep, BundleTarget, CapacityResult,
    Environment, Report, SearchEnd, SCHEMA_VERSION,
};

use crate::find::{FindError, FindOptions, ObjectiveError};

use crate::launch::{launch_spec, LaunchSpecError};
use crate::services::{usage, usages, ServiceError, Services};
use crate::slurm::{SlurmError, SlurmRun};
use crate::{Event, Host, HostError};

/// How to run a plan's steps: what the caller's flags and environment say.
#[derive(Clone)]
pub struct BenchOptions {
    /// The plan file as the user named it (the bundle records it).
    pub plan_file: PathBuf,
    /// Keep secrets in the bundle's plan text, commands and step plans.
    pub show_secrets: bool,
    /// The step table's columns, overriding the plan's `report.columns` when not empty.
    pub columns: Vec<Column>,
    /// The step table's style, overriding the plan's `report.style`.
    pub style: Option<TableStyle>,
    /// Where each launched server's log goes (`NAME.log`).
    pub log_dir: PathBuf,
    /// The binary running the plan: `loadmark` in a launch command means it.
    pub exe: Option<PathBuf>,
    /// Run every step over Slurm tasks instead of here.
    pub slurm: Option<SlurmSteps>,
    /// The machine and build, as the bundle records them.
    pub environment: Environment,
    /// Asked to stop (Ctrl-C): the step that runs ends early, no later step starts.
    pub stop: StopHandle,
}

/// `bench --slurm N`: how each step is handed to srun.
#[derive(Debug, Clone)]
pub struct SlurmSteps {
    pub tasks: u32,
    /// The srun program.
    pub program: PathBuf,
    /// The loadmark binary every task runs as `worker`.
    pub exe: PathBuf,
    pub srun_args: Vec<String>,
}

/// Why a plan's steps stopped before the end.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A target's launch block is wrong.
    #[error(transparent)]
    LaunchSpec(#[from] LaunchSpecError),
    /// A service could not be started, monitored or stopped.
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// A target did not start or become ready: its log's last lines say why.
    #[error("step {step} needs target {name} running")]
    StartTarget {
        step: usize,
        name: String,
        #[source]
        source: Box<LaunchError>,
    },
    /// A target could not be stopped cleanly.
    #[error("stopping target {name}")]
    StopTarget {
        name: String,
        #[source]
        source: Box<LaunchError>,
    },
    /// The server an `attach:` names was not found (`at` is the field, e.g.
    /// `targets.api.attach.process`): is it running, is the name or port right?
    #[error("{at}")]
    Attach {
        at: String,
        #[source]
        source: MonitorError,
    },
    /// The target's process could not be watched.
    #[error("monitoring target {target} (pid {pid})")]
    MonitorTarget {
        target: String,
        pid: u32,
        #[source]
        source: MonitorError,
    },
    /// The caller's live outputs failed as a step began.
    #[error(transparent)]
    Host(HostError),
    /// A step's run over Slurm failed.
    #[error("step {step} over {tasks} Slurm tasks")]
    Slurm {
        step: usize,
        tasks: u32,
        #[source]
        source: SlurmError,
    },
    /// A step's run here failed before any load (an invalid plan, a host that does not
    /// resolve, too few open files).
    #[error(transparent)]
    Run(#[from] EngineError),
    /// An objective of `find.slo` cannot be used (located in the plan file).
    #[error(transparent)]
    Objective(#[from] ObjectiveError),
    /// A step's capacity search could not go on (a run of it failed before measuring).
    #[error("step {step}'s capacity search")]
    Find {
        step: usize,
        #[source]
        source: FindError,
    },
}

impl BenchError {
    /// A launch block, an invalid step plan or a Slurm flag is the user's to fix.
    pub fn is_usage(&self) -> bool {
        match self {
            BenchError::LaunchSpec(_) => true,
            BenchError::Service(e) => e.is_usage(),
            BenchError::Slurm { source, .. } => source.is_usage(),
            BenchError::Run(e) => matches!(e, EngineError::Plan(_)),
            BenchError::Objective(_) => true,
            BenchError::Find { source, .. } => match source {
                FindError::Step { source, .. } => source
                    .downcast_ref::<BenchError>()
                    .is_some_and(BenchError::is_usage),
                other => other.is_usage(),
            },
            _ => false,
        }
    }
}

/// The step's `loadmark run` command, with the plan's thresholds (which every step is
/// checked against), secrets redacted unless asked for.
pub fn command_of(plan: &Plan, show_secrets: bool, thresholds: &[String]) -> String {
    if show_secrets {
        reproduce_command(plan, thresholds)
    } else {
        reproduce_command(&plan.redacted(), thresholds)
    }
}

/// The step as the document's tables name it: its swept values, else its target.
pub fn step_name(step: &Step) -> String {
    if step.params.is_empty() {
        step.target.clone()
    } else {
        let p: Vec<String> = step
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        p.join(", ")
    }
}

/// How the bundle names the server an `attach:` watches.
fn attach_text(a: &AttachFile) -> String {
    if let Some(pid) = a.pid {
        format!("pid {pid}")
    } else if let Some(name) = &a.process {
        format!("process {name}")
    } else if let Some(path) = &a.socket {
        format!("the listener of {}", path.display())
    } else {
        a.port
            .map_or_else(String::new, |p| format!("the listener of port {p}"))
    }
}

/// The bundle before any step ran: the plan, its targets and services, the machine.
pub fn bundle_of(plan: &LoadedPlan, options: &BenchOptions) -> Bundle {
    let file = &plan.file;
    let targets = file
        .targets
        .iter()
        .map(|(name, t)| BundleTarget {
            name: name.clone(),
            url: t.url.clone(),
            labels: t
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            launch: t.launch.as_ref().map(|l| l.command.clone()),
            attach: t.attach.as_ref().map(attach_text),
        })
        .collect();
    Bundle {
        schema_version: SCHEMA_VERSION,
        // The workspace's one version: the binary's too.
        loadmark_version: env!("CARGO_PKG_VERSION").to_string(),
        name: file.name.clone(),
        description: file.description.clone(),
        plan_file: options.plan_file.display().to_string(),
        plan_text: if options.show_secrets {
            plan.text.clone()
        } else {
            loadmark_plan::redact_plan_text(&plan.text)
        },
        environment: options.environment.clone(),
        targets,
        services: plan
            .services
            .services
            .iter()
            .map(|s| BundleService {
                name: s.name.clone(),
                launch: s.launch.command.clone(),
                depends_on: s.depends_on.clone(),
            })
            .collect(),
        steps: Vec::new(),
        compare: file.compare.clone(),
        columns: if options.columns.is_empty() {
            file.report.columns.clone()
        } else {
            options.columns.clone()
        },
        style: options.style.or(file.report.style),
        interrupted: false,
        notes: Vec::new(),
    }
}

/// Sleeps `d`, waking early when a stop was asked for.
fn pause(d: Duration, stop: &StopHandle) {
    let end = Instant::now() + d;
    while Instant::now() < end && !stop.is_stopped() {
        std::thread::sleep(Duration::from_millis(20).min(end - Instant::now()));
    }
}

/// Runs every step of `plan` in order and returns the bundle of what ran. A step whose
/// services are not running is skipped with a note; a stop ends the run after the step
/// that runs (the bundle says it was interrupted).
pub fn run_steps<H: Host>(
    plan: &LoadedPlan,
    options: &BenchOptions,
    host: &mut H,
) -> Result<Bundle, BenchError> {
    // The objectives are checked before any server starts or any load is sent.
    let search = match &plan.find {
        Some(spec) => Some((spec, crate::find::options_of(spec)?)),
        None => None,
    };
    let search = search.as_ref().map(|(spec, opts)| (*spec, opts));
    let mut bundle = bundle_of(plan, options);
    let mut services = Services::new(&plan.services);
    let exe = options.exe.as_deref();
    // Targets are outermost in the step order: launch each before its first step, stop it
    // after its last.
    let mut running: Option<(String, Launched)> = None;
    for (i, step) in plan.steps.iter().enumerate() {
        if options.stop.is_stopped() {
            bundle.interrupted = true;
            break;
        }
        if running
            .as_ref()
            .is_some_and(|(name, _)| *name != step.target)
        {
            let (name, server) = running.take().expect("checked");
            stop_target(name, server)?;
        }
        services.start_before(i, step.number, &options.log_dir, exe, host)?;
        let missing = services.check(i);
        if !missing.is_empty() {
            for gone in missing {
                let note = format!(
                    "Step {} ({}) did not run: {}; {}",
                    step.number,
                    step_name(step),
                    gone.what,
                    gone.last_words
                );
                host.event(&Event::StepSkipped { note: &note });
                bundle.notes.push(note);
            }
            services.stop_after(i, host)?;
            continue;
        }
        if running.is_none() {
            if let Some((_, l)) = plan.launches.iter().find(|(n, _)| *n == step.target) {
                host.event(&Event::TargetStarting {
                    name: &step.target,
                    command: &l.command,
                });
                let spec = launch_spec(&step.target, l, &options.log_dir, exe)?;
                let server = launch(&spec).map_err(|source| BenchError::StartTarget {
                    step: step.number,
                    name: step.target.clone(),
                    source: Box::new(source),
                })?;
                running = Some((step.target.clone(), server));
            }
        }
        let server = running.as_ref().map(|(_, s)| s);
        let ran = run_step(plan, i, server, &mut services, search, options, host)?;
        let Some((done, interrupted)) = ran else {
            // Stopped before the search's first run: nothing measured.
            bundle.interrupted = true;
            break;
        };
        bundle.steps.push(done);
        services.stop_after(i, host)?;
        if interrupted {
            bundle.interrupted = true;
            break;
        }
        if i + 1 < plan.steps.len() && !plan.pause.is_zero() {
            pause(plan.pause, &options.stop);
        }
    }
    if let Some((name, server)) = running {
        stop_target(name, server)?;
    }
    services.stop_all(host)?;
    Ok(bundle)
}

fn stop_target(name: String, server: Launched) -> Result<(), BenchError> {
    match server.stop() {
        Ok(_) => Ok(()),
        Err(source) => Err(BenchError::StopTarget {
            name,
            source: Box::new(source),
        }),
    }
}

/// Runs step `index` with its target (launched, attached or neither) and services running,
/// monitored as the plan says; the flag says whether the step was interrupted. `search`: a
/// `find:` plan's search, which the step runs instead of one run (`None` when it was
/// stopped before its first run).
fn run_step<H: Host>(
    plan: &LoadedPlan,
    index: usize,
    launched: Option<&Launched>,
    services: &mut Services<'_>,
    search: Option<(&FindSpec, &FindOptions)>,
    options: &BenchOptions,
    host: &mut H,
) -> Result<Option<(BundleStep, bool)>, BenchError> {
    let step = &plan.steps[index];
    let file = &plan.file;
    let pid = match (launched, &file.targets[&step.target].attach) {
        (Some(server), _) => Some(server.pid()),
        (None, Some(a)) => attached_pid(&step.target, a)?,
        _ => None,
    };
    let monitor =
        match (pid, plan.monitor_interval) {
            (Some(pid), Some(interval)) => Some(Monitor::start(pid, interval).map_err(
                |source| BenchError::MonitorTarget {
                    target: step.target.clone(),
                    pid,
                    source,
                },
            )?),
            _ => None,
        };
    let service_monitors = services.monitor(index, plan.monitor_interval)?;
    let command = match search {
        Some((spec, _)) => crate::find::command_of(&step.plan, spec, options.show_secrets),
        None => command_of(&step.plan, options.show_secrets, &file.thresholds),
    };
    let total = plan.steps.len();
    host.event(&Event::StepBegins {
        number: step.number,
        total,
        command: &command,
    });
    host.step_begins(&step.plan, step.number, total)
        .map_err(BenchError::Host)?;
    let ran = match search {
        Some((_, opts)) => search_step(step, opts, options, host)?,
        None => {
            let (report, interrupted) = run_once(&step.plan, step.number, 0, options, host)?;
            Some((report, None, interrupted))
        }
    };
    let Some((mut report, capacity, interrupted)) = ran else {
        return Ok(None);
    };
    let server = monitor.map(Monitor::stop).as_ref().and_then(usage);
    let service_usage = usages(service_monitors);
    let notes: Vec<String> = services
        .check(index)
        .into_iter()
        .map(|gone| {
            format!(
                "{} during this step (its figures may show it); {}",
                gone.what, gone.last_words
            )
        })
        .collect();
    for note in &notes {
        host.event(&Event::StepNote {
            number: step.number,
            note,
        });
    }
    // (A search's report has its run's plan already.)
    if options.show_secrets && search.is_none() {
        report.plan = step.plan.clone();
    }
    host.event(&Event::StepDone {
        number: step.number,
        report: &report,
    });
    let done = BundleStep {
        number: step.number,
        target: step.target.clone(),
        params: step.params.clone(),
        command,
        report,
        server,
        services: service_usage,
        notes,
        capacity,
    };
    Ok(Some((done, interrupted)))
}

/// One run of `plan`: here, or over the Slurm tasks (every task its segment). `search_run`
/// numbers a search's runs (0: a plain step), so no two share a Slurm run id.
fn run_once<H: Host>(
    plan: &Plan,
    number: usize,
    search_run: usize,
    options: &BenchOptions,
    host: &mut H,
) -> Result<(Report, bool), BenchError> {
    match &options.slurm {
        Some(slurm) => slurm_step(plan, number, search_run, slurm, options, host),
        None => local_step(plan, options, host),
    }
}

/// A `find:` plan's step: the capacity search of its target, each run as [`run_once`]. The
/// report kept is the last run at the capacity (or the last run, when no rate met the
/// objectives); `None` when a stop came before the first run.
#[allow(clippy::type_complexity)]
fn search_step<H: Host>(
    step: &Step,
    opts: &FindOptions,
    options: &BenchOptions,
    host: &mut H,
) -> Result<Option<(Report, Option<CapacityResult>, bool)>, BenchError> {
    // Both the runs and what they measured go through the host, one after the other.
    let host = std::cell::RefCell::new(host);
    // The last report at each rate offered.
    let mut kept: Vec<(f64, Report)> = Vec::new();
    let mut runs = 0;
    let result = crate::find::find(
        &step.plan,
        opts,
        |plan| {
            runs += 1;
            let mut host = host.borrow_mut();
            let (report, _) = run_once(plan, step.number, runs, options, &mut **host)?;
            Ok(report)
        },
        |verdict, point, report| {
            host.borrow_mut().event(&Event::SearchStep {
                number: step.number,
                verdict,
                point,
            });
            kept.retain(|(rate, _)| *rate != point.offered);
            kept.push((point.offered, report));
        },
        || options.stop.is_stopped(),
    )
    .map_err(|source| BenchError::Find {
        step: step.number,
        source,
    })?;
    host.into_inner().event(&Event::SearchDone {
        number: step.number,
        result: &result,
    });
    let at = kept
        .iter()
        .rposition(|(rate, _)| Some(*rate) == result.capacity)
        .or(kept.len().checked_sub(1));
    let Some(at) = at else {
        return Ok(None);
    };
    let interrupted = result.end == SearchEnd::Interrupted;
    let (offered, mut report) = kept.swap_remove(at);
    if options.show_secrets {
        report.plan = crate::find::step_plan(&step.plan, offered, opts);
    }
    Ok(Some((report, Some(result), interrupted)))
}

/// A step run by the engine on this machine, its progress handed to the host.
fn local_step<H: Host>(
    plan: &Plan,
    options: &BenchOptions,
    host: &mut H,
) -> Result<(Report, bool), BenchError> {
    host.run_begins(plan);
    let result = loadmark_engine::run_part(plan, &Part::default(), &options.stop, |p| {
        host.progress(p);
    });
    host.run_ends();
    let result = result?;
    let interrupted = result.interrupted;
    Ok((host.report(plan, result), interrupted))
}

/// A step (or a run of a step's search) over Slurm tasks, named so that its segments cannot
/// be mixed with another's.
fn slurm_step<H: Host>(
    plan: &Plan,
    number: usize,
    search_run: usize,
    slurm: &SlurmSteps,
    options: &BenchOptions,
    host: &mut H,
) -> Result<(Report, bool), BenchError> {
    let run = match search_run {
        0 => String::new(),
        k => format!("search-{k}-"),
    };
    let how = SlurmRun {
        tasks: slurm.tasks,
        start_at: None,
        run_id: Some(format!("bench-step-{number}-{run}{}", std::process::id())),
        program: slurm.program.clone(),
        exe: slurm.exe.clone(),
        srun_args: slurm.srun_args.clone(),
    };
    crate::slurm::run(plan, &how, &options.stop, host).map_err(|source| BenchError::Slurm {
        step: number,
        tasks: slurm.tasks,
        source,
    })
}

/// The pid of a target's `attach:` server: given, or found by name or by what it listens on.
fn attached_pid(target: &str, a: &AttachFile) -> Result<Option<u32>, BenchError> {
    let attach = |field: &str| {
        let at = format!("targets.{target}.attach.{field}");
        move |source| BenchError::Attach { at, source }
    };
    Ok(if let Some(pid) = a.pid {
        Some(pid)
    } else if let Some(name) = &a.process {
        Some(find_pid_by_name(name).map_err(attach("process"))?)
    } else if let Some(path) = &a.socket {
        Some(find_pid_by_listener(&Listener::Unix(path.clone())).map_err(attach("socket"))?)
    } else if let Some(port) = a.port {
        Some(find_pid_by_listener(&Listener::Tcp(port)).map_err(attach("port"))?)
    } else {
        None
    })
}

#[cfg(test)]
#[path = "bench_tests.rs"]
pub(crate) mod tests;
