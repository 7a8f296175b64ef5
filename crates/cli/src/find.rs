//! `loadmark find`: a capacity search from flags. The search is the workflow crate's
//! (`loadmark_workflow::find`); this file turns flags into its options, runs each step
//! here or over Slurm, prints a line per step and the result in the format asked.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use loadmark_plan::{FindSpec, LocatedObjective};
use loadmark_report::{CapacityResult, CurvePoint, SearchEnd};
use loadmark_workflow::find::{self, FindOptions, StepVerdict};

use crate::args::{duration_arg, Format, RunArgs};
use crate::output::{print_out, write_atomic};
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
        default_value_t = loadmark_plan::FIND_FROM,
        help_heading = "Search"
    )]
    pub from: f64,
    /// The highest rate tried
    #[arg(
        long = "to",
        value_name = "RATE",
        default_value_t = loadmark_plan::FIND_TO,
        help_heading = "Search"
    )]
    pub to: f64,
    /// Each rising step multiplies the rate by this
    #[arg(long = "factor", default_value_t = loadmark_plan::FIND_FACTOR, help_heading = "Search")]
    pub factor: f64,
    /// The bisection stops when the last rate that met the objectives and the first that
    /// did not are this close, in percent
    #[arg(
        long = "precision",
        value_name = "PERCENT",
        default_value_t = loadmark_plan::FIND_PRECISION,
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
    #[arg(long = "repeats", default_value_t = loadmark_plan::FIND_REPEATS, help_heading = "Search")]
    pub repeats: u32,
    /// At most this many steps in all
    #[arg(long = "max-steps", default_value_t = loadmark_plan::FIND_MAX_STEPS, help_heading = "Search")]
    pub max_steps: usize,
    #[command(flatten)]
    pub run: RunArgs,
}

impl FindArgs {
    /// The search the flags ask for, checked as a plan's `find:` is (each error names its
    /// flag), with the `run` flags a search sets itself refused.
    fn options(&self) -> Result<FindOptions> {
        let spec = FindSpec {
            slo: self
                .slo
                .iter()
                .enumerate()
                .map(|(i, text)| LocatedObjective {
                    text: text.clone(),
                    at: format!("--slo #{}", i + 1),
                })
                .collect(),
            from: self.from,
            to: self.to,
            factor: self.factor,
            precision: self.precision / 100.0,
            hold: self.hold,
            warmup: self.step_warmup.unwrap_or(loadmark_plan::FIND_WARMUP),
            cooldown: self.cooldown,
            repeats: self.repeats,
            max_steps: self.max_steps,
        };
        let usage = |s: &str| Err(UsageError(s.into()).into());
        if let Err(e) = spec.check() {
            let flag = match e.key {
                "warmup" => "step-warmup".to_string(),
                key => key.replace('_', "-"),
            };
            return usage(&format!("--{flag}: {}", e.reason));
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
        Ok(find::options_of(&spec)?)
    }
}

/// A run of a search in a line, as `find` and a `find:` plan's steps print it:
/// `2400/s (repeat) → achieved 2398/s, p99 1.2ms, met`.
pub(crate) fn run_line(verdict: &StepVerdict, point: &CurvePoint) -> String {
    let what = match verdict {
        StepVerdict::Met => "met".to_string(),
        StepVerdict::Broke(b) => format!("broke {}", b.join(", ")),
        StepVerdict::ClientLimited(w) => format!("client-limited: {w}"),
        StepVerdict::Late(w) => format!("not counted, runs again: {w}"),
        StepVerdict::ServerDown(w) => format!("server down: {w}"),
    };
    format!(
        "{:.0}/s{} → achieved {:.0}/s, p99 {}, {what}",
        point.offered,
        if point.repeat { " (repeat)" } else { "" },
        point.achieved,
        loadmark_report::format_us(point.p99_us as f64)
    )
}

pub fn find(args: &mut FindArgs) -> Result<ExitCode> {
    let opts = args.options()?;
    let output = crate::commands::output_of(&args.run.report)?;
    let flags = &args.run.report;
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
    let (mut template, script) = crate::commands::plan_from_flags(&args.run, None)?;
    if args.run.report.split.tag_requests {
        template = crate::split::tagged(&template);
    }
    let flags = &args.run.report;
    let stop = crate::commands::stop_handle();
    let quiet = flags.quiet;
    let mut step = 0;
    let result = find::find(
        &template,
        &opts,
        |plan| run_step(plan, flags, script.as_ref()).map_err(|e| e.into_boxed_dyn_error()),
        |verdict, point, _| {
            step += 1;
            if !quiet {
                eprintln!("loadmark find: step {step}: {}", run_line(verdict, point));
            }
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
    crate::commands::run_here(plan, script, true)
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
