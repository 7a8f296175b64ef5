//! How the workflow's events read on stderr (`loadmark: ...`).

use loadmark_workflow::{Event, Observer};

/// Prints every event on stderr; `quiet` silences the chatter of a run that goes well (the
/// srun start line), never a note or a problem.
pub struct Stderr {
    pub quiet: bool,
}

impl Observer for Stderr {
    fn event(&mut self, event: &Event<'_>) {
        say(event, self.quiet);
    }
}

pub fn say(event: &Event<'_>, quiet: bool) {
    match event {
        Event::TargetStarting { name, command } => {
            eprintln!("loadmark: starting target {name}: {command}");
        }
        Event::ServiceStarting { name, command } => {
            eprintln!("loadmark: starting service {name}: {command}");
        }
        Event::ServiceStopping { name } => eprintln!("loadmark: stopping service {name}"),
        Event::StepSkipped { note } => eprintln!("loadmark: {note}"),
        Event::StepBegins {
            number,
            total,
            command,
        } => eprintln!("loadmark: step {number}/{total}: {command}"),
        Event::StepNote { number, note } => eprintln!("loadmark: step {number}: {note}"),
        Event::StepDone { number, report } => eprintln!(
            "loadmark: step {number}: {:.0} req/s, p99 {}, {} failed",
            report.summary.rps,
            loadmark_report::format_pct(&report.summary.latency, 99.0),
            report.failed()
        ),
        Event::SrunStarting { tasks, start } => {
            if !quiet {
                eprintln!("loadmark: srun {tasks} tasks, starting together at {start}");
            }
        }
        Event::TaskIncomplete { why } => eprintln!("loadmark: {why}"),
        Event::SearchStep {
            number,
            verdict,
            point,
        } => {
            if !quiet {
                eprintln!(
                    "loadmark: step {number}: search at {}",
                    crate::find::run_line(verdict, point)
                );
            }
        }
        Event::SearchDone { number, result } => {
            eprintln!("loadmark: step {number}: {}", result.message);
        }
        other => eprintln!("loadmark: {other:?}"),
    }
}
