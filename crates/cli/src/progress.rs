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
        let goal = match self.total {
            Stop::Duration(d) => {
                format!("{:.0}s / {:.0}s", p.elapsed.as_secs_f64(), d.as_secs_f64())
            }
            Stop::Requests(n) => format!("{} / {n} requests", p.completed),
        };
        if self.websocket {
            let (sent, received) = p
                .last_second
                .map_or((0, 0), |s| (s.messages_sent, s.messages_received));
            let line = format!(
                "  [{goal}]  {sent} msg/s sent, {received} msg/s received  {} round trips  {} failed  (Ctrl-C stops and reports)",
                p.completed, p.failed
            );
            self.draw(&line);
            return;
        }
        let rate = p
            .last_second
            .map_or_else(|| "-".to_string(), |s| s.responses.to_string());
        let line = format!(
            "  [{goal}]  {rate} req/s  {} done  {} failed  (Ctrl-C stops and reports)",
            p.completed, p.failed
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
