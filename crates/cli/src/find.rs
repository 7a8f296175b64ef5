//! `loadmark find`: a capacity search from flags. The search is the workflow crate's
//! (`loadmark_workflow::find`); this file turns flags into its options, runs each step
//! here or over Slurm, prints a line per step and the result in the format asked.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use loadmark_engine::Part;
use loadmark_report::{CapacityResult, SearchEnd};
use loadmark_workflow::find::{self, FindOptions, SearchConfig, StepVerdict};

use crate::args::{duration_arg, Format, RunArgs};
use crate::output::{check_writable, format_for, print_out, write_atomic};
use crate::UsageError;

#[derive(Args, Debug)]
pub struct FindArgs {
    /// An objective every step must meet (repeatable): 'p99 < 20ms', 'p99.9 < 100ms',
    /// 'mean < 5ms', 'errors < 0.1%' (transport errors), 'failed < 1%' (errors and
    /// non-2xx/3xx), 'rps > 1000'
    #[arg(
        long = "slo",
        value_name = "OBJECTIVE",
        required = true,
        help_heading = "Search"
    )]
    pub slo: Vec<String>,
    /// The first rate tried, requests (a scenario: iterations) per second
    #[arg(
        long = "from",
        value_name = "RATE",
        default_value = "100",
        help_heading = "Search"
    )]
    pub from: f64,
    /// The highest rate tried
    #[arg(
        long = "to",
        value_name = "RATE",
        default_value = "100000",
        help_heading = "Search"
    )]
    pub to: f64,
    /// Each rising step multiplies the rate by this
    #[arg(long = "factor", default_value = "2", help_heading = "Search")]
    pub factor: f64,
    /// The bisection stops when the last rate that met the objectives and the first that
    /// did not are this close, in percent
    #[arg(
        long = "precision",
        value_name = "PERCENT",
        default_value = "2",
        help_heading = "Search"
    )]
    pub precision: f64,
    /// The least measured time of each step (longer when the objectives need more
    /// requests: 1,522 for p99, 15,351 for p99.9)
    #[arg(long = "hold", value_parser = duration_arg, default_value = "5s", help_heading = "Search")]
    pub hold: Duration,
    /// Load without measuring before each step (whole seconds) [default: 1s]
    #[arg(long = "step-warmup", value_parser = duration_arg, help_heading = "Search")]
    pub step_warmup: Option<Duration>,
    /// No load between steps, so a queue left by an overloaded step drains
    #[arg(long = "cooldown", value_parser = duration_arg, default_value = "1s", help_heading = "Search")]
    pub cooldown: Duration,
    /// Extra runs of each of the two boundary rates, for the interval
    #[arg(long = "repeats", default_value_t = 2, help_heading = "Search")]
    pub repeats: u32,
    /// At most this many steps in all
    #[arg(long = "max-steps", default_value_t = 40, help_heading = "Search")]
    pub max_steps: usize,
    #[command(flatten)]
    pub run: RunArgs,
}

impl FindArgs {
    fn options(&self) -> Result<FindOptions> {
        let mut objectives = Vec::new();
        for (i, text) in self.slo.iter().enumerate() {
            objectives.push(find::parse_objective(text, &format!("--slo #{}", i + 1))?);
        }
        let usage = |s: &str| Err(UsageError(s.into()).into());
        if !(self.from > 0.0 && self.from.is_finite()) {
            return usage("--from: a rate above zero, e.g. 100");
        }
        if !(self.to >= self.from && self.to.is_finite()) {
            return usage("--to: a rate at least --from");
        }
        if !(self.factor > 1.0 && self.factor.is_finite()) {
            return usage("--factor: above 1, e.g. 2");
        }
        if !(self.precision > 0.0 && self.precision < 100.0) {
            return usage("--precision: a percentage between 0 and 100, e.g. 2");
        }
        let r = &self.run;
        for (given, flag) in [
            (
                r.rate.is_some(),
                "-R/--rate (the search sets the rate: --from, --to)",
            ),
            (
                r.duration.is_some(),
                "-d/--duration (each step's length is --hold)",
            ),
            (r.requests.is_some(), "-n/--requests"),
            (r.stages.is_some(), "--stages"),
            (
                r.warmup.is_some(),
                "--warmup (each step's is --step-warmup)",
            ),
            (
                !r.report.thresholds.is_empty(),
                "--threshold (objectives are --slo)",
            ),
            (r.report.split.segment.is_some(), "--segment"),
        ] {
            if given {
                return usage(&format!("loadmark find does not take {flag}"));
            }
        }
        let warmup = self.step_warmup.unwrap_or(Duration::from_secs(1));
        if warmup.subsec_nanos() != 0 {
            return usage(
                "--step-warmup: whole seconds (the per-second series is aligned on them)",
            );
        }
        Ok(FindOptions {
            objectives,
            search: SearchConfig {
                from: self.from,
                to: self.to,
                factor: self.factor,
                precision: self.precision / 100.0,
                repeats: self.repeats,
                max_steps: self.max_steps.max(1),
            },
            hold: self.hold,
            warmup,
            cooldown: self.cooldown,
        })
    }
}

pub fn find(args: &mut FindArgs) -> Result<ExitCode> {
    let opts = args.options()?;
    let flags = &args.run.report;
    let output = match &flags.output {
        Some(path) => {
            let format = format_for(path, flags.format).map_err(|e| UsageError(e.to_string()))?;
            check_writable(path).map_err(|e| UsageError(format!("{e:#}")))?;
            Some((path.clone(), format))
        }
        None => None,
    };
    let stdout_format = match (&output, flags.format, flags.json) {
        (None, _, true) => Format::Json,
        (None, Some(f), _) => f,
        _ => Format::Text,
    };
    for format in std::iter::once(stdout_format).chain(output.as_ref().map(|o| o.1)) {
        render(&placeholder(), format)?;
    }
    // The template is the run's plan at --from: -t, -c, --max-connections, the protocol and
    // the request are the user's; the rate, length and warm-up are each step's.
    args.run.rate = Some(args.from);
    let body = match args.run.body_path() {
        Some(path) => Some(
            std::fs::read(&path)
                .map_err(|e| UsageError(format!("{}: cannot read it: {e}", path.display())))?,
        ),
        None => None,
    };
    let mut template = args.run.to_plan(body)?;
    let script = match &args.run.script {
        Some(path) => {
            if flags.split.slurm.is_some() {
                return Err(
                    UsageError("--script with --slurm: run it without --slurm".into()).into(),
                );
            }
            Some(crate::script::prepare(
                &mut template,
                path,
                &args.run.script_args,
            )?)
        }
        None => None,
    };
    let flags = &args.run.report;
    let stop = crate::commands::stop_handle();
    let quiet = flags.quiet;
    let mut step = 0;
    let result = find::find(
        &template,
        &opts,
        |plan| run_step(plan, flags, script.as_ref()).map_err(|e| e.into_boxed_dyn_error()),
        |verdict, point| {
            step += 1;
            if quiet {
                return;
            }
            let what = match verdict {
                StepVerdict::Met => "met".to_string(),
                StepVerdict::Broke(b) => format!("broke {}", b.join(", ")),
                StepVerdict::ClientLimited(w) => format!("client-limited: {w}"),
                StepVerdict::Late(w) => format!("not counted, runs again: {w}"),
                StepVerdict::ServerDown(w) => format!("server down: {w}"),
            };
            eprintln!(
                "loadmark find: step {step}: {:.0}/s{} → achieved {:.0}/s, p99 {}, {what}",
                point.offered,
                if point.repeat { " (repeat)" } else { "" },
                point.achieved,
                loadmark_report::format_us(point.p99_us as f64)
            );
        },
        || stop.is_stopped(),
    )?;
    print_out(render(&result, stdout_format)?)?;
    if let Some((path, format)) = output {
        write_atomic(&path, &render(&result, format)?)?;
        eprintln!("loadmark: result written to {}", path.display());
    }
    Ok(match result.end {
        SearchEnd::Found | SearchEnd::MetAtTo => ExitCode::SUCCESS,
        SearchEnd::Interrupted => ExitCode::from(crate::EXIT_INTERRUPTED),
        SearchEnd::ClientLimited => ExitCode::from(crate::EXIT_NOT_CLEAN),
        _ => ExitCode::from(crate::EXIT_RUN_FAILED),
    })
}

/// One step: here, or over `--slurm N` tasks (every worker drives its segment of the rate).
fn run_step(
    plan: &loadmark_plan::Plan,
    flags: &crate::args::ReportFlags,
    script: Option<&loadmark_script::Script>,
) -> Result<loadmark_report::Report> {
    if let Some(tasks) = flags.split.slurm {
        let how = crate::split::SlurmRun::from_flags(flags, tasks)?;
        return Ok(crate::split::run_slurm(plan, &how)?.0);
    }
    let part = Part {
        script: script.and_then(|s| s.hooks()),
        ..Part::default()
    };
    let result = crate::commands::execute(plan, &part, true, &mut crate::live::Live::none())?;
    Ok(crate::commands::build_report(plan, result))
}

fn render(r: &CapacityResult, format: Format) -> Result<String> {
    Ok(match format {
        Format::Text => loadmark_report::render_capacity_text(r),
        Format::Json => r.to_json(),
        Format::Md => loadmark_report::render_capacity_markdown(r),
        Format::Html => loadmark_report::render_capacity_html(r),
        Format::Csv | Format::CsvSummary | Format::CsvSteps => {
            return Err(UsageError(
                "loadmark find writes text, JSON, Markdown or HTML (.txt, .json, .md, .html)"
                    .into(),
            )
            .into())
        }
    })
}

/// An empty result: to check the formats asked for before any load runs.
fn placeholder() -> CapacityResult {
    CapacityResult {
        schema_version: 0,
        kind: String::new(),
        loadmark_version: String::new(),
        url: String::new(),
        unit: String::new(),
        protocol: String::new(),
        objectives: Vec::new(),
        capacity: None,
        achieved_at_capacity: None,
        interval: None,
        end: SearchEnd::Found,
        message: String::new(),
        broke_first: Vec::new(),
        knee: None,
        step_rule: String::new(),
        curve: Vec::new(),
    }
}
