//! The one-line live progress on stderr, shown only when stderr is a terminal.

use std::io::{IsTerminal, Write};

use loadmark_engine::Progress;
use loadmark_plan::{Plan, Stop};

pub struct ProgressLine {
    enabled: bool,
    total: Stop,
    drawn: bool,
    websocket: bool,
}

impl ProgressLine {
    pub fn new(plan: &Plan, quiet: bool) -> Self {
        ProgressLine {
            enabled: !quiet && std::io::stderr().is_terminal(),
            total: plan.stop,
            drawn: false,
            websocket: plan.websocket.is_some(),
        }
    }

    pub fn update(&mut self, p: &Progress) {
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
