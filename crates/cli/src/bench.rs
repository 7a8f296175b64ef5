//! `loadmark bench plan.yaml`: runs every step of a plan file (launching, monitoring and
//! stopping servers as it says) and writes the benchmark document and its JSON bundle.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use loadmark_engine::{Progress, RunResult};
use loadmark_plan::{load_plan_file_with, LoadedPlan, Plan};
use loadmark_report::{render_markdown, Report};
use loadmark_workflow::bench::{command_of, run_steps, BenchOptions, SlurmSteps};
use loadmark_workflow::{Event, Host, HostError, Observer};

use crate::args::BenchArgs;
use crate::commands::{build_report, stop_handle};
use crate::live::Live;
use crate::output::{print_out, write_atomic};
use crate::progress::ProgressLine;
use crate::verdict::{Judged, Rules};
use crate::UsageError;

pub fn bench(args: &BenchArgs) -> Result<ExitCode> {
    let mut args = args.clone();
    let (overrides, dirs): (Vec<String>, Vec<String>) =
        args.o.iter().cloned().partition(|o| o.contains('='));
    if let Some(dir) = dirs.last() {
        args.out = PathBuf::from(dir);
    }
    let args = &args;
    let cores = loadmark_engine::usable_cpus();
    let mut plan = load_plan_file_with(&args.plan, cores, &overrides)
        .map_err(|e| UsageError(e.to_string()))?;
    // The environment's proxy (`*_PROXY`, `NO_PROXY`), as `run` honours it.
    for step in &mut plan.steps {
        step.plan.protocol.proxy =
            loadmark_plan::Proxy::for_plan(None, &step.plan, |name| std::env::var(name).ok())
                .map_err(|e| UsageError(e.to_string()))?;
    }
    if args.explain {
        let native = plan.file.to_yaml();
        if loadmark_plan::is_taurus(&std::fs::read_to_string(&args.plan).unwrap_or_default()) {
            print_out(format!(
                "# {} translated from Taurus; `loadmark bench` runs this plan\n",
                args.plan.display()
            ))?;
        }
        print_out(native)?;
        return Ok(ExitCode::SUCCESS);
    }
    let thresholds = loadmark_workflow::gate::plan_thresholds(&plan.file.thresholds, &args.plan)?;
    loadmark_workflow::gate::scenario_thresholds(&plan.file, &args.plan)?;
    if let Some(spec) = &plan.find {
        loadmark_workflow::find::options_of(spec)?;
    }
    if args.check {
        return check(&plan, args);
    }
    // gRPC steps: the schema loaded once, each step's method and message checked, before
    // any load.
    crate::grpc_steps::attach(&mut plan)?;
    let out = &args.out;
    std::fs::create_dir_all(out.join("logs"))
        .map_err(|e| UsageError(format!("--out {}: cannot create it: {e}", out.display())))?;
    crate::output::check_writable(&out.join("bundle.json"))
        .map_err(|e| UsageError(format!("{e:#}")))?;
    // Opened before the steps run (a bad store is refused first), written after them.
    let recorder = crate::history::Recorder::before_run(&args.record)?;
    let stop = stop_handle();
    let mut host = BenchHost {
        live: Live::start(&args.metrics, None, args.run_id.clone(), None)?,
        quiet: args.quiet,
        progress: None,
    };
    let exe = std::env::current_exe();
    let options = BenchOptions {
        plan_file: args.plan.clone(),
        show_secrets: args.show_secrets,
        columns: args.table.columns.clone(),
        style: args.table.style,
        log_dir: out.join("logs"),
        exe: exe.as_ref().ok().cloned(),
        slurm: match args.slurm {
            Some(tasks) => Some(SlurmSteps {
                tasks,
                program: crate::split::srun_program(),
                exe: exe?,
                srun_args: args.srun_args.clone(),
            }),
            None => None,
        },
        environment: crate::commands::environment(),
        stop,
    };
    let mut bundle = run_steps(&plan, &options, &mut host)?;
    for step in &mut bundle.steps {
        step.report.thresholds = loadmark_report::check_thresholds(&thresholds, &step.report);
    }
    host.live.finish_bundle(&bundle);
    host.live.linger();
    let md = render_markdown(&bundle);
    write_atomic(&out.join("bundle.json"), &bundle.to_json())?;
    write_atomic(&out.join("BENCHMARKS.md"), &md)?;
    eprintln!(
        "loadmark: {} of {} steps ran; wrote {} and {}",
        bundle.steps.len(),
        plan.steps.len(),
        out.join("BENCHMARKS.md").display(),
        out.join("bundle.json").display()
    );
    print_out(loadmark_report::render_steps_text(&bundle))?;
    let recorded = recorder.is_none_or(|r| r.record_bundle(&bundle, &out.join("bundle.json")));
    let last = bundle.steps.len().saturating_sub(1);
    let runs: Vec<Judged<'_>> = bundle
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| Judged {
            // A signal stops the step that runs: the last one (a Slurm step's merged
            // report may not say so itself).
            interrupted: s.report.run.interrupted || (bundle.interrupted && i == last),
            ..Judged::named(Some(format!("step {}", s.number)), &s.report)
        })
        .collect();
    // A service that died failed the steps that needed it: the document says which.
    let died = !bundle.notes.is_empty() || bundle.steps.iter().any(|s| !s.notes.is_empty());
    let code = crate::verdict::exit_code(
        &runs,
        &Rules {
            interrupted: bundle.interrupted,
            other_failures: if died {
                vec!["a service died; see the notes in BENCHMARKS.md".into()]
            } else {
                Vec::new()
            },
            ..Default::default()
        },
    );
    if !recorded && code == ExitCode::SUCCESS {
        return Ok(ExitCode::from(crate::EXIT_RUN_FAILED));
    }
    Ok(code)
}

/// `bench --check`: the steps as `loadmark run` commands, the services' order, and the
/// programs a launch command runs that are not there.
fn check(plan: &LoadedPlan, args: &BenchArgs) -> Result<ExitCode> {
    print_out(format!(
        "{}: OK, {} step{}\n",
        args.plan.display(),
        plan.steps.len(),
        if plan.steps.len() == 1 { "" } else { "s" }
    ))?;
    for step in &plan.steps {
        let command = match &plan.find {
            Some(spec) => loadmark_workflow::find::command_of(&step.plan, spec, args.show_secrets),
            None => command_of(&step.plan, args.show_secrets, &plan.file.thresholds),
        };
        print_out(format!("  {}. {command}\n", step.number))?;
    }
    if !plan.services.services.is_empty() {
        print_out("order:\n")?;
        for line in plan.services.describe(plan.steps.len()) {
            print_out(format!("  {line}\n"))?;
        }
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for missing in loadmark_workflow::launch::missing_in_plan(plan, &path) {
        eprintln!(
            "loadmark: warning: {}.command runs `{}`, which is not on PATH (nor a file); the step will fail to start it",
            missing.at, missing.program
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The binary's side of running a plan's steps: events on stderr, the live outputs, the
/// progress line of each local run, and reports that record this build.
struct BenchHost {
    live: Live,
    quiet: bool,
    progress: Option<ProgressLine>,
}

impl Observer for BenchHost {
    fn event(&mut self, event: &Event<'_>) {
        crate::events::say(event, self.quiet);
    }
}

impl Host for BenchHost {
    fn step_begins(&mut self, plan: &Plan, number: usize, total: usize) -> Result<(), HostError> {
        self.live
            .begin(
                plan,
                u32::try_from(number).unwrap_or(u32::MAX),
                u32::try_from(total).unwrap_or(u32::MAX),
            )
            .map_err(Into::into)
    }

    fn run_begins(&mut self, plan: &Plan) {
        self.progress = Some(ProgressLine::new(plan, self.quiet || self.live.has_tui()));
    }

    fn progress(&mut self, p: &Progress<'_>) {
        self.live.update(p);
        if let Some(progress) = &mut self.progress {
            progress.update(p);
        }
    }

    fn run_ends(&mut self) {
        if let Some(mut progress) = self.progress.take() {
            progress.finish();
        }
    }

    fn report(&mut self, plan: &Plan, result: RunResult) -> Report {
        build_report(plan, result)
    }
}
