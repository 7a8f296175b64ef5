//! The one-line live progress on stderr, shown only when stderr is a terminal, and a plain
//! early notice (terminal or not) when nothing has answered: a run against a server that is
//! down should say so within seconds, not after its whole duration.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use loadmark_engine::Progress;
use loadmark_plan::{Plan, Stop};

/// How long a run may go without a single response, every request failing, before the
/// notice: long enough that a slow first connect is not reported, short enough to be early.
const NOTHING_ANSWERS_AFTER: Duration = Duration::from_secs(2);

pub struct ProgressLine {
    enabled: bool,
    /// The notice that nothing answers is printed at most once, and never under --quiet.
    notice_pending: bool,
    total: Stop,
    drawn: bool,
    websocket: bool,
}

impl ProgressLine {
    pub fn new(plan: &Plan, quiet: bool) -> Self {
        ProgressLine {
            enabled: !quiet && std::io::stderr().is_terminal(),
            notice_pending: !quiet,
            total: plan.stop,
            drawn: false,
            websocket: plan.websocket.is_some(),
        }
    }

    pub fn update(&mut self, p: &Progress) {
        if self.notice_pending && p.elapsed >= NOTHING_ANSWERS_AFTER {
            if let Some(notice) = nothing_answers(p) {
                self.notice_pending = false;
                self.finish();
                eprintln!("{notice}");
            }
        }
        if !self.enabled {
            return;
        }
        let line = line(
            self.total,
            self.websocket,
            &Tally {
                elapsed: p.elapsed,
                completed: p.completed,
                failed: p.failed,
                last_second: p.last_second.map(|s| {
                    if self.websocket {
                        (s.messages_sent, s.messages_received)
                    } else {
                        (s.responses, 0)
                    }
                }),
            },
        );
        self.draw(&line);
    }

    fn draw(&mut self, line: &str) {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        self.drawn = true;
    }

    /// Clears the line so the report starts on a clean one.
    pub fn finish(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
            self.drawn = false;
        }
    }
}

/// What the progress line shows, apart from the engine's types.
struct Tally {
    elapsed: Duration,
    completed: u64,
    failed: u64,
    /// The latest whole second: responses (WebSocket: messages sent and received); `None`
    /// before the first second is over.
    last_second: Option<(u64, u64)>,
}

/// The progress line. Before the first whole second there is no rate to show: it says
/// "starting" with the counts so far instead of a `-` and zeros that read as a dead server.
fn line(total: Stop, websocket: bool, t: &Tally) -> String {
    let goal = match total {
        Stop::Duration(d) => {
            format!("{:.0}s / {:.0}s", t.elapsed.as_secs_f64(), d.as_secs_f64())
        }
        Stop::Requests(n) => format!("{} / {n} requests", t.completed),
    };
    const HINT: &str = "(Ctrl-C stops and reports)";
    let (done, unit) = if websocket {
        ("round trips", "messages")
    } else {
        ("done", "requests")
    };
    match t.last_second {
        None if t.completed == 0 && t.failed == 0 => {
            format!("  [{goal}]  starting: no {unit} ended yet  {HINT}")
        }
        None => format!(
            "  [{goal}]  starting: {} {done}  {} failed so far  {HINT}",
            t.completed, t.failed
        ),
        Some((sent, received)) if websocket => format!(
            "  [{goal}]  {sent} msg/s sent, {received} msg/s received  {} round trips  {} failed  {HINT}",
            t.completed, t.failed
        ),
        Some((rate, _)) => format!(
            "  [{goal}]  {rate} req/s  {} done  {} failed  {HINT}",
            t.completed, t.failed
        ),
    }
}

/// "Nothing answers" when every request of the final seconds failed without a response,
/// with the most frequent error's first example.
fn nothing_answers(p: &Progress) -> Option<String> {
    let t = p.totals;
    if t.responses > 0 || t.errors.total() == 0 {
        return None;
    }
    let (kind, stat) = t.errors.nonzero().max_by_key(|(_, s)| s.count)?;
    let websocket_word = if t.websocket.is_some() {
        "session"
    } else {
        "request"
    };
    Some(format!(
        "loadmark: nothing has answered after {:.0}s: all {} {websocket_word}s failed, {} as {kind} \
         errors (first: {}); the run goes on until its end (Ctrl-C stops and reports)",
        p.elapsed.as_secs_f64(),
        t.errors.total(),
        stat.count,
        stat.first_example.as_deref().unwrap_or("no message"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(ms: u64, completed: u64, failed: u64, last: Option<(u64, u64)>) -> Tally {
        Tally {
            elapsed: Duration::from_millis(ms),
            completed,
            failed,
            last_second: last,
        }
    }

    #[test]
    fn the_first_second_says_starting_with_the_counts_so_far_not_zeros() {
        let ten = Stop::Duration(Duration::from_secs(10));
        assert_eq!(
            line(ten, false, &tally(450, 0, 0, None)),
            "  [0s / 10s]  starting: no requests ended yet  (Ctrl-C stops and reports)"
        );
        assert_eq!(
            line(ten, false, &tally(900, 1234, 2, None)),
            "  [1s / 10s]  starting: 1234 done  2 failed so far  (Ctrl-C stops and reports)"
        );
        assert_eq!(
            line(ten, false, &tally(2_400, 5000, 2, Some((2500, 0)))),
            "  [2s / 10s]  2500 req/s  5000 done  2 failed  (Ctrl-C stops and reports)"
        );
        let n = Stop::Requests(100);
        assert_eq!(
            line(n, true, &tally(300, 7, 0, None)),
            "  [7 / 100 requests]  starting: 7 round trips  0 failed so far  (Ctrl-C stops and reports)"
        );
        assert_eq!(
            line(n, true, &tally(300, 0, 0, None)),
            "  [0 / 100 requests]  starting: no messages ended yet  (Ctrl-C stops and reports)"
        );
        let ws = line(n, true, &tally(1_300, 70, 1, Some((50, 49))));
        assert_eq!(
            ws,
            "  [70 / 100 requests]  50 msg/s sent, 49 msg/s received  70 round trips  1 failed  (Ctrl-C stops and reports)"
        );
    }
}
