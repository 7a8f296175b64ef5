//! The one exit-code rule. Every command that measures something (`run`, `ws`,
//! `quickstart`, each step of `bench`, and `merge` for a split run) ends here with its
//! report(s), so a run against a server that is down fails the same way whichever command
//! ran it: a CI gate must never pass because the service is down (issue 42).
//!
//! From the most specific to the least, the code is:
//! 3. a threshold failed (`--threshold`, a plan's `thresholds:`): the user's own gate speaks
//!    first; a threshold of a run that measured nothing fails too ("no data");
//! 4. `--strict` and a run was not clean (client saturated, open loop overloaded);
//! 1. a run failed: nothing succeeded (no 2xx/3xx response; WebSocket: no session opened),
//!    every request failed (errors, non-2xx/3xx, responses that failed a check), a
//!    `--fail-on` class was seen, or something the reports cannot show (a plan's service
//!    died);
//! 130. interrupted (a run stopped by a signal is not judged as failed: it did not finish);
//! 0. otherwise.
//!
//! Every reason found is printed on stderr, not only the one that sets the code.

use std::process::ExitCode;

use loadmark_report::Report;

use crate::args::FailOn;
use crate::{EXIT_INTERRUPTED, EXIT_NOT_CLEAN, EXIT_RUN_FAILED, EXIT_THRESHOLDS};

/// One measured run a command produced.
pub(crate) struct Judged<'a> {
    /// How stderr names it when a command has several (`step 2`); `None` for the one run.
    pub name: Option<String>,
    pub report: &'a Report,
    /// Stopped by a signal before its end (a Slurm run's launcher may know it when the
    /// merged report does not): not judged as failed, as it did not finish.
    pub interrupted: bool,
}

impl<'a> Judged<'a> {
    /// The one run of a command.
    pub fn one(report: &'a Report) -> Self {
        Judged::named(None, report)
    }

    /// One of several runs (`step 2`), or the one when `name` is `None`.
    pub fn named(name: Option<String>, report: &'a Report) -> Self {
        Judged {
            name,
            report,
            interrupted: report.run.interrupted,
        }
    }
}

/// What a command asks of its runs besides the defaults.
#[derive(Default)]
pub(crate) struct Rules<'a> {
    pub fail_on: &'a [FailOn],
    pub strict: bool,
    /// The command was stopped by a signal (also when between two steps of a plan).
    pub interrupted: bool,
    /// Failures no report shows (a service that died before its step), in words: exit 1.
    pub other_failures: Vec<String>,
}

/// The exit code and why, one line per reason (without the `loadmark: ` prefix).
#[derive(Debug, PartialEq)]
pub(crate) struct Verdict {
    pub code: u8,
    pub reasons: Vec<String>,
}

/// Decides the exit code of `runs` under `rules`, prints the reasons on stderr, and
/// returns the code: the one place a command's outcome becomes its exit status.
pub(crate) fn exit_code(runs: &[Judged<'_>], rules: &Rules<'_>) -> ExitCode {
    let v = verdict(runs, rules);
    for reason in &v.reasons {
        eprintln!("loadmark: {reason}");
    }
    ExitCode::from(v.code)
}

/// [`exit_code`] without printing.
pub(crate) fn verdict(runs: &[Judged<'_>], rules: &Rules<'_>) -> Verdict {
    let prefix = |j: &Judged<'_>| j.name.as_ref().map_or(String::new(), |n| format!("{n}: "));
    let mut thresholds = Vec::new();
    let mut not_clean = Vec::new();
    let mut failed = Vec::new();
    for j in runs {
        let r = j.report;
        let names: Vec<String> = r
            .thresholds
            .iter()
            .filter(|t| !t.passed)
            .map(|t| t.label())
            .collect();
        if !names.is_empty() {
            thresholds.push(format!(
                "{}thresholds failed: {}",
                prefix(j),
                names.join(", ")
            ));
        }
        if rules.strict && (r.run.health.client_saturated || r.run.health.overloaded) {
            not_clean.push(format!(
                "{}the run was not clean (--strict): see the warnings above",
                prefix(j)
            ));
        }
        // A run cut short by a signal did not finish: what it measured is not a verdict.
        if !j.interrupted {
            if let Some(why) = failed_run(r, rules.fail_on) {
                failed.push(format!("{}the run failed: {why}", prefix(j)));
            }
        }
    }
    failed.extend(rules.other_failures.iter().cloned());
    let interrupted = rules.interrupted || runs.iter().any(|j| j.interrupted);
    let code = if !thresholds.is_empty() {
        EXIT_THRESHOLDS
    } else if !not_clean.is_empty() {
        EXIT_NOT_CLEAN
    } else if !failed.is_empty() {
        EXIT_RUN_FAILED
    } else if interrupted {
        EXIT_INTERRUPTED
    } else {
        0
    };
    let mut reasons = failed;
    reasons.extend(not_clean);
    reasons.extend(thresholds);
    Verdict { code, reasons }
}

/// Why a finished run counts as failed: nothing succeeded (no 2xx/3xx response; for
/// WebSocket, no session opened), every request failed ([`Report::failed`]: errors,
/// non-2xx/3xx responses, responses or replies that failed a `--check`), or a `--fail-on`
/// class was seen.
fn failed_run(report: &Report, fail_on: &[FailOn]) -> Option<String> {
    let totals = &report.totals;
    // A WebSocket run that opened no session has no WebSocket figures at all: the plan says
    // what kind of run it was.
    let ws = report.plan.websocket.is_some() || totals.websocket.is_some();
    // A gRPC call succeeded with grpc-status OK, or as a stream loadmark ended as planned;
    // its HTTP status is 200 whatever the call's outcome.
    let grpc = totals.grpc.as_deref();
    let succeeded = if ws {
        totals.websocket.as_ref().map_or(0, |w| w.sessions_opened)
    } else if let Some(g) = grpc {
        g.count("OK") + g.streams.as_ref().map_or(0, |s| s.ended_by_client)
    } else {
        totals.status.class(2) + totals.status.class(3)
    };
    let completed = report.summary.requests.completed;
    let all_failed = completed > 0 && report.failed() >= completed;
    if succeeded == 0 || all_failed {
        let what = match (succeeded, ws) {
            (0, true) => "no WebSocket session opened",
            (0, false) if grpc.is_some() => "no call succeeded (no OK grpc-status)",
            (0, false) => "no request succeeded (no 2xx/3xx response)",
            (_, true) => "every message failed",
            (_, false) => "every request failed",
        };
        let first = totals
            .errors
            .nonzero()
            .max_by_key(|(_, s)| s.count)
            .and_then(|(kind, s)| Some(format!("; {kind}: {}", s.first_example.as_deref()?)))
            .unwrap_or_default();
        let statuses: Vec<String> = totals
            .status
            .iter()
            .map(|(code, n)| format!("{n} x {code}"))
            .collect();
        let statuses = if statuses.is_empty() {
            String::new()
        } else {
            format!(" ({})", statuses.join(", "))
        };
        let checks = report
            .summary
            .checks
            .as_ref()
            .map(|c| c.failed_success_responses)
            .filter(|&n| n > 0)
            .map_or(String::new(), |n| {
                format!(
                    ", {n} {} that failed a check",
                    if ws { "replies" } else { "2xx/3xx responses" }
                )
            });
        return Some(format!(
            "{what}: {} errors, {} responses{statuses}{checks}{first}",
            totals.errors.total(),
            totals.responses
        ));
    }
    fail_on.iter().find_map(|f| {
        let (count, what) = match f {
            FailOn::Errors => (totals.errors.total(), "transport errors"),
            FailOn::Status4xx => (totals.status.class(4), "4xx responses"),
            FailOn::Status5xx => (totals.status.class(5), "5xx responses"),
            FailOn::Failed if ws => (
                report.failed(),
                "failed messages (errors and replies that failed a check)",
            ),
            FailOn::Failed => (
                report.failed(),
                "failed requests (errors, non-2xx/3xx responses and responses that failed a check)",
            ),
        };
        let flag = match f {
            FailOn::Errors => "errors",
            FailOn::Status4xx => "4xx",
            FailOn::Status5xx => "5xx",
            FailOn::Failed => "failed",
        };
        (count > 0).then(|| format!("{count} {what} (--fail-on {flag})"))
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant, UNIX_EPOCH};

    use loadmark_metrics::{Aggregate, ErrorKind, Recorder, Sample};
    use loadmark_report::{Report, RunFacts, ThresholdResult};

    use super::*;

    /// A report of `statuses` responses and `refused` connect errors.
    fn report(statuses: &[u16], refused: u64) -> Report {
        let origin = Instant::now();
        let mut recorder = Recorder::new(origin);
        for (i, &status) in statuses.iter().enumerate() {
            let ended = origin + Duration::from_millis(10 + i as u64);
            let started = ended - Duration::from_micros(300);
            recorder.record(&Sample {
                scheduled: None,
                started,
                first_byte: started + Duration::from_micros(100),
                ended,
                status,
                bytes_read: 100,
                bytes_written: 50,
            });
        }
        for _ in 0..refused {
            recorder.record_error(
                ErrorKind::Connect,
                origin + Duration::from_millis(5),
                &"connecting to 127.0.0.1:9: Connection refused (os error 111)",
            );
        }
        let mut aggregate = Aggregate::new(1, 0);
        aggregate.add(recorder.finish());
        let plan = loadmark_plan::Settings::default()
            .to_plan(
                loadmark_plan::RequestSpec {
                    method: "GET".into(),
                    url: loadmark_plan::Target::parse("http://127.0.0.1:9/").unwrap(),
                    headers: Vec::new(),
                    body: Vec::new(),
                    keep_alive: true,
                },
                1,
            )
            .unwrap();
        let facts = RunFacts {
            started_at: UNIX_EPOCH,
            elapsed: Duration::from_secs(1),
            measured: Duration::from_secs(1),
            interrupted: false,
            client_cpu_user: Duration::ZERO,
            client_cpu_system: Duration::ZERO,
            busiest_worker: 0.1,
            target_addr: "127.0.0.1:9".into(),
            contention: None,
        };
        Report::new(&plan, &facts, aggregate.finish(), Default::default())
    }

    fn failed_threshold(text: &str) -> ThresholdResult {
        ThresholdResult {
            threshold: text.into(),
            passed: false,
            actual: None,
            scenario: None,
        }
    }

    #[test]
    fn a_run_with_successes_exits_0() {
        let r = report(&[200, 200, 500], 1);
        let v = verdict(&[Judged::one(&r)], &Rules::default());
        assert_eq!(
            v,
            Verdict {
                code: 0,
                reasons: vec![]
            }
        );
    }

    #[test]
    fn nothing_answering_exits_1_whatever_the_command() {
        let dead = report(&[], 20);
        let v = verdict(&[Judged::one(&dead)], &Rules::default());
        assert_eq!(v.code, EXIT_RUN_FAILED);
        assert_eq!(
            v.reasons,
            ["the run failed: no request succeeded (no 2xx/3xx response): 20 errors, 0 responses; \
              connect: connecting to 127.0.0.1:9: Connection refused (os error 111)"]
        );
        // A plan's second step against the dead server fails the whole plan, and says which.
        let ok = report(&[200], 0);
        let v = verdict(
            &[
                Judged::named(Some("step 1".into()), &ok),
                Judged::named(Some("step 2".into()), &dead),
            ],
            &Rules::default(),
        );
        assert_eq!(v.code, EXIT_RUN_FAILED);
        assert!(
            v.reasons[0].starts_with("step 2: the run failed: no request succeeded"),
            "{v:?}"
        );
        // Every response an error status: nothing succeeded either.
        let v = verdict(&[Judged::one(&report(&[503, 503], 0))], &Rules::default());
        assert_eq!(v.code, EXIT_RUN_FAILED);
        assert!(v.reasons[0].contains("(2 x 503)"), "{v:?}");
    }

    #[test]
    fn thresholds_then_strict_then_failure_then_interruption() {
        let mut dead = report(&[], 5);
        dead.thresholds = vec![failed_threshold("p99<50ms")];
        let v = verdict(
            &[Judged::one(&dead)],
            &Rules {
                strict: true,
                ..Default::default()
            },
        );
        assert_eq!(v.code, EXIT_THRESHOLDS, "the user's gate speaks first");
        assert_eq!(v.reasons.len(), 2, "and the failure is still said: {v:?}");
        assert_eq!(v.reasons[1], "thresholds failed: p99<50ms");

        let mut busy = report(&[200], 0);
        busy.run.health.client_saturated = true;
        let v = verdict(
            &[Judged::one(&busy)],
            &Rules {
                strict: true,
                ..Default::default()
            },
        );
        assert_eq!(v.code, EXIT_NOT_CLEAN);
        let v = verdict(&[Judged::one(&busy)], &Rules::default());
        assert_eq!(v.code, 0, "not clean counts only under --strict");

        let ok = report(&[200], 0);
        let rules = Rules {
            other_failures: vec!["a service died".into()],
            ..Default::default()
        };
        assert_eq!(verdict(&[Judged::one(&ok)], &rules).code, EXIT_RUN_FAILED);

        let mut stopped = report(&[], 3);
        stopped.run.interrupted = true;
        let v = verdict(&[Judged::one(&stopped)], &Rules::default());
        assert_eq!(
            v,
            Verdict {
                code: EXIT_INTERRUPTED,
                reasons: vec![]
            },
            "not judged: it did not finish"
        );
        let rules = Rules {
            interrupted: true,
            ..Default::default()
        };
        assert_eq!(verdict(&[Judged::one(&ok)], &rules).code, EXIT_INTERRUPTED);
    }

    #[test]
    fn fail_on_names_its_class() {
        let r = report(&[200, 404, 500], 2);
        let rules = |f: &'static [FailOn]| Rules {
            fail_on: f,
            ..Default::default()
        };
        let v = verdict(&[Judged::one(&r)], &rules(&[FailOn::Status5xx]));
        assert_eq!(
            v.reasons,
            ["the run failed: 1 5xx responses (--fail-on 5xx)"]
        );
        let v = verdict(&[Judged::one(&r)], &rules(&[FailOn::Failed]));
        assert_eq!(v.code, EXIT_RUN_FAILED);
        assert!(
            v.reasons[0].starts_with("the run failed: 4 failed requests"),
            "{v:?}"
        );
        assert_eq!(
            verdict(
                &[Judged::one(&report(&[200], 0))],
                &rules(&[FailOn::Errors])
            )
            .code,
            0
        );
    }
}
