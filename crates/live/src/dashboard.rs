//! What the terminal view shows, kept apart from the terminal: the state built from ticks
//! and the drawing of one frame. Pure, so it is tested without a terminal (`ratatui`'s test
//! backend) and the live terminal code in `tui.rs` only owns the screen and the keys.

use std::collections::VecDeque;
use std::time::Duration;

use loadmark_metrics::{Busy, SeriesPoint, Snapshot};
use loadmark_plan::{Load, Plan, Stop};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::Line;
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, Paragraph, Row, Table};
use ratatui::Frame;

use crate::Tick;
use loadmark_report::{LATE_LAG_P99_US, SATURATED_BUSY};

/// The smallest terminal the view is drawn in; below it the progress line is used (at the
/// start) or a note is shown (when the terminal shrinks during the run).
pub const MIN_SIZE: (u16, u16) = (80, 24);

/// Seconds kept for the charts: ten minutes, enough for the window a terminal can show.
const KEEP: usize = 600;

/// One second as the view shows it: the report's series point, exactly, and what the view
/// adds from that second's histograms.
#[derive(Debug, Clone)]
pub(crate) struct Row1 {
    pub point: SeriesPoint,
    /// Requests ended in this second (responses plus transport errors).
    pub ended: u64,
    /// The open loop's requested rate at this second, or the closed loop's connections.
    pub target: Option<f64>,
    pub p90_us: u64,
    pub lag_p99_us: u64,
    pub dropped: u64,
}

/// What the view knows of the run.
pub struct Dashboard {
    url: String,
    websocket: bool,
    stop: Stop,
    load: Load,
    step: u32,
    steps: u32,
    rows: VecDeque<Row1>,
    /// The latest final second's snapshot: the current latency distribution.
    current: Option<Snapshot>,
    /// Everything after warm-up: status codes, errors and their first examples.
    totals: Snapshot,
    elapsed: Duration,
    in_flight: u64,
    open_connections: u64,
    busiest_worker: Busy,
    finished: bool,
    /// The process's CPU use over the last tick, in cores (see `crate::tui::CpuClock`).
    pub(crate) cpu_cores: Option<f64>,
}

impl Dashboard {
    /// A view of plan step `step` of `steps`.
    pub fn new(plan: &Plan, step: u32, steps: u32) -> Self {
        Dashboard {
            url: plan.request.url.to_string(),
            websocket: plan.websocket.is_some(),
            stop: plan.stop,
            load: plan.load.clone(),
            step,
            steps,
            rows: VecDeque::new(),
            current: None,
            totals: Snapshot::default(),
            elapsed: Duration::ZERO,
            in_flight: 0,
            open_connections: 0,
            busiest_worker: Busy::default(),
            finished: false,
            cpu_cores: None,
        }
    }

    /// Adds a tick's final seconds.
    pub fn tick(&mut self, tick: &Tick) {
        for s in tick.seconds {
            let snap = &s.snapshot;
            let at = Duration::from_secs(s.point.second);
            let target = match &self.load {
                Load::Open { rate, .. } => rate.value_at(at),
                Load::Ramp { connections, .. } => connections.value_at(at),
                Load::Closed { connections, .. } => Some(*connections as f64),
            };
            self.rows.push_back(Row1 {
                point: s.point.clone(),
                ended: snap.completed(),
                target,
                p90_us: snap.latency.value_at_quantile(0.9),
                lag_p99_us: snap.lag.value_at_quantile(0.99),
                dropped: snap.dropped,
            });
            if self.rows.len() > KEEP {
                self.rows.pop_front();
            }
            if !s.point.warmup {
                self.totals.merge(snap);
            }
            self.current = Some(snap.clone());
        }
        self.elapsed = tick.elapsed;
        self.in_flight = tick.in_flight;
        self.open_connections = tick.open_connections;
        self.busiest_worker = tick.busiest_worker;
        self.finished |= tick.finished;
    }

    fn is_open(&self) -> bool {
        matches!(self.load, Load::Open { .. })
    }

    fn header(&self) -> Line<'static> {
        let time = match self.stop {
            Stop::Duration(d) => {
                let left = d.saturating_sub(self.elapsed);
                format!(
                    "elapsed {:.0}s / {:.0}s, remaining {:.0}s",
                    self.elapsed.as_secs_f64(),
                    d.as_secs_f64(),
                    left.as_secs_f64()
                )
            }
            Stop::Requests(n) => format!(
                "elapsed {:.0}s, {} / {n} requests",
                self.elapsed.as_secs_f64(),
                self.totals.completed()
            ),
        };
        let state = if self.finished { "finished" } else { "q stops" };
        Line::from(format!(
            " loadmark  {}  step {} of {}  {time}  [{state}]",
            self.url, self.step, self.steps
        ))
    }

    /// Draws the whole view into `frame`.
    pub fn draw(&self, frame: &mut Frame) {
        let area = frame.area();
        if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
            frame.render_widget(
                Paragraph::new(format!(
                    "loadmark: the terminal is {}x{}, the view needs {}x{}; the run goes on and the report comes at the end (q stops)",
                    area.width, area.height, MIN_SIZE.0, MIN_SIZE.1
                ))
                .wrap(ratatui::widgets::Wrap { trim: true }),
                area,
            );
            return;
        }
        let [head, charts, middle, health, recent] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(7),
            Constraint::Length(7),
            Constraint::Length(5),
            Constraint::Min(4),
        ])
        .areas(area);
        frame.render_widget(Paragraph::new(self.header()), head);
        let [rate, latency] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                .areas(charts);
        self.draw_rate(frame, rate);
        self.draw_latency(frame, latency);
        let [dist, codes] =
            Layout::horizontal([Constraint::Percentage(40), Constraint::Percentage(60)])
                .areas(middle);
        self.draw_distribution(frame, dist);
        self.draw_codes(frame, codes);
        self.draw_health(frame, health);
        self.draw_recent(frame, recent);
    }

    /// The seconds that are whole (a last partial second is no rate).
    fn whole(&self) -> impl Iterator<Item = &Row1> {
        self.rows.iter().filter(|r| r.point.partial_s.is_none())
    }

    fn window(&self) -> [f64; 2] {
        let last = self.rows.back().map_or(1, |r| r.point.second + 1) as f64;
        let first = self.rows.front().map_or(0, |r| r.point.second) as f64;
        [first, last.max(first + 1.0)]
    }

    fn draw_rate(&self, frame: &mut Frame, area: Rect) {
        let achieved: Vec<(f64, f64)> = self
            .whole()
            .map(|r| (r.point.second as f64, r.ended as f64))
            .collect();
        let requested: Vec<(f64, f64)> = if self.is_open() {
            self.whole()
                .filter_map(|r| Some((r.point.second as f64, r.target?)))
                .collect()
        } else {
            Vec::new()
        };
        let top = achieved
            .iter()
            .chain(&requested)
            .map(|p| p.1)
            .fold(1.0, f64::max)
            * 1.1;
        let mut sets = vec![Dataset::default()
            .name("achieved")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(Color::Green))
            .data(&achieved)];
        if !requested.is_empty() {
            sets.push(
                Dataset::default()
                    .name("requested")
                    .marker(Marker::Braille)
                    .graph_type(GraphType::Line)
                    .style(Style::default().fg(Color::Yellow))
                    .data(&requested),
            );
        }
        let title = if self.websocket {
            "round trips/s"
        } else {
            "requests/s: achieved vs requested"
        };
        let [x0, x1] = self.window();
        let chart = Chart::new(sets)
            .block(Block::bordered().title(title))
            .x_axis(
                Axis::default()
                    .bounds([x0, x1])
                    .labels([format!("{x0:.0}s"), format!("{x1:.0}s")]),
            )
            .y_axis(
                Axis::default()
                    .bounds([0.0, top])
                    .labels(["0".to_string(), format!("{top:.0}")]),
            );
        frame.render_widget(chart, area);
    }

    fn draw_latency(&self, frame: &mut Frame, area: Rect) {
        let ms = |us: u64| us as f64 / 1e3;
        let p50: Vec<(f64, f64)> = self
            .rows
            .iter()
            .map(|r| (r.point.second as f64, ms(r.point.latency_p50_us)))
            .collect();
        let p90: Vec<(f64, f64)> = self
            .rows
            .iter()
            .map(|r| (r.point.second as f64, ms(r.p90_us)))
            .collect();
        let p99: Vec<(f64, f64)> = self
            .rows
            .iter()
            .map(|r| (r.point.second as f64, ms(r.point.latency_p99_us)))
            .collect();
        let top = p99.iter().map(|p| p.1).fold(0.1, f64::max) * 1.1;
        let line = |name, color, data| {
            Dataset::default()
                .name(name)
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(color))
                .data(data)
        };
        let [x0, x1] = self.window();
        let chart = Chart::new(vec![
            line("p50", Color::Green, &p50),
            line("p90", Color::Yellow, &p90),
            line("p99", Color::Red, &p99),
        ])
        .block(Block::bordered().title("latency (ms) over time"))
        .x_axis(
            Axis::default()
                .bounds([x0, x1])
                .labels([format!("{x0:.0}s"), format!("{x1:.0}s")]),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, top])
                .labels(["0".to_string(), format!("{top:.1}")]),
        );
        frame.render_widget(chart, area);
    }

    fn draw_distribution(&self, frame: &mut Frame, area: Rect) {
        let mut lines = Vec::new();
        if let Some(s) = &self.current {
            let h = &s.latency;
            for (name, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)] {
                lines.push(Line::from(format!(
                    "{name:>6} {:>10}",
                    fmt_us(h.value_at_quantile(q))
                )));
            }
            lines.push(Line::from(format!("{:>6} {:>10}", "max", fmt_us(h.max()))));
        }
        let title = match self.rows.back() {
            Some(r) => format!("latency, second {}", r.point.second),
            None => "latency, last second".to_string(),
        };
        frame.render_widget(
            Paragraph::new(lines).block(Block::bordered().title(title)),
            area,
        );
    }

    fn draw_codes(&self, frame: &mut Frame, area: Rect) {
        let mut lines: Vec<Line> = self
            .totals
            .status
            .iter()
            .map(|(code, n)| Line::from(format!("{code}  {n}")))
            .collect();
        for (kind, stat) in self.totals.errors.nonzero() {
            let example = stat.first_example.as_deref().unwrap_or("");
            lines.push(Line::from(format!(
                "{kind}  {}  first: {example}",
                stat.count
            )));
        }
        if lines.is_empty() {
            lines.push(Line::from("nothing after warm-up yet"));
        }
        frame.render_widget(
            Paragraph::new(lines).block(Block::bordered().title("status codes and errors")),
            area,
        );
    }

    /// What the connections are measured against: the closed loop's connections (the ramp's
    /// now), the open loop's cap.
    fn asked(&self) -> String {
        match &self.load {
            Load::Closed { connections, .. } => format!("asked {connections}"),
            Load::Ramp { connections, .. } => {
                let now = connections.value_at(self.elapsed).unwrap_or(0.0);
                format!("asked {now:.0} now")
            }
            Load::Open {
                max_connections, ..
            } => format!("cap {max_connections}"),
        }
    }

    /// Connections (sessions) and traffic, then the client's health: whether the numbers
    /// measure the server, in the report's own terms.
    fn health_lines(&self) -> Vec<String> {
        let t = &self.totals;
        let what = if self.websocket {
            "sessions"
        } else {
            "connections"
        };
        let mut first = format!(
            "open {what} {} ({})  opened {}  in flight {}",
            self.open_connections,
            self.asked(),
            t.connections_opened,
            self.in_flight
        );
        if let Some(c) = self.cpu_cores {
            first.push_str(&format!("  client CPU {c:.2} cores"));
        }
        let mut lines = vec![first];
        if let (true, Some(r)) = (self.websocket, self.whole().last()) {
            lines.push(format!(
                "messages/s (second {}) sent {} received {}",
                r.point.second, r.point.messages_sent, r.point.messages_received
            ));
        }
        if self.is_open() {
            let lag = self.totals.lag.value_at_quantile(0.99);
            let late = if lag > LATE_LAG_P99_US {
                ": requests leave LATE"
            } else {
                ""
            };
            lines.push(format!(
                "dropped {}{}  schedule lag p99 {}{late}",
                t.dropped,
                if t.dropped > 0 {
                    " (target or --max-connections not keeping up)"
                } else {
                    ""
                },
                fmt_us(lag)
            ));
        }
        let b = self.busiest_worker;
        let pct = |share: f64| format!("{:.0}%", share * 100.0);
        let verdict = if b.so_far >= SATURATED_BUSY {
            format!(
                "client SATURATED: busiest load thread {} of a core over the run (add -t)",
                pct(b.so_far)
            )
        } else if b.recent >= SATURATED_BUSY {
            format!(
                "client saturated now: busiest load thread {} of a core ({} over the run)",
                pct(b.recent),
                pct(b.so_far)
            )
        } else {
            format!(
                "client not saturated: busiest load thread {} of a core ({} over the run)",
                pct(b.recent),
                pct(b.so_far)
            )
        };
        lines.push(verdict);
        lines
    }

    fn draw_health(&self, frame: &mut Frame, area: Rect) {
        let lines: Vec<Line> = self.health_lines().into_iter().map(Line::from).collect();
        frame.render_widget(
            Paragraph::new(lines).block(Block::bordered().title("client")),
            area,
        );
    }

    /// The last seconds, numbers as the report's series has them (the tmux test reads them).
    fn draw_recent(&self, frame: &mut Frame, area: Rect) {
        let shown = usize::from(area.height.saturating_sub(3));
        let rows: Vec<Row> = self
            .rows
            .iter()
            .rev()
            .take(shown)
            .rev()
            .map(|r| {
                let target = r.target.map_or("-".to_string(), |t| format!("{t:.0}"));
                Row::new(vec![
                    format!(
                        "{}{}",
                        r.point.second,
                        if r.point.warmup { "w" } else { "" }
                    ),
                    r.point.responses.to_string(),
                    r.point.errors.to_string(),
                    target,
                    r.point.latency_p50_us.to_string(),
                    r.point.latency_p99_us.to_string(),
                    r.dropped.to_string(),
                    r.lag_p99_us.to_string(),
                ])
            })
            .collect();
        let target = if self.is_open() { "requested" } else { "conns" };
        let widths = [Constraint::Length(9); 8];
        let table = Table::new(rows, widths)
            .header(Row::new(vec![
                "second",
                "responses",
                "errors",
                target,
                "p50 us",
                "p99 us",
                "dropped",
                "lag99 us",
            ]))
            .block(Block::bordered().title("last seconds (w: warm-up)"));
        frame.render_widget(table, area);
    }
}

fn fmt_us(us: u64) -> String {
    if us >= 1_000_000 {
        format!("{:.2} s", us as f64 / 1e6)
    } else if us >= 1_000 {
        format!("{:.2} ms", us as f64 / 1e3)
    } else {
        format!("{us} us")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadmark_metrics::Second;
    use loadmark_plan::{Profile, RequestSpec, Target as Url, Timeouts, TlsPolicy};
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn plan() -> Plan {
        Plan {
            request: RequestSpec {
                method: "GET".into(),
                url: Url::parse("http://127.0.0.1:8080/").unwrap(),
                headers: Vec::new(),
                body: Vec::new(),
                keep_alive: true,
            },
            load: Load::Open {
                rate: Profile::constant(50.0, Duration::from_secs(10)),
                threads: 1,
                max_connections: 10,
                connections: None,
            },
            stop: Stop::Duration(Duration::from_secs(10)),
            timeouts: Timeouts::default(),
            warmup: Duration::from_secs(1),
            tls: TlsPolicy::Verify,
            mix: Default::default(),
            websocket: None,
            script: None,
            protocol: Default::default(),
            checks: Vec::new(),
            scenario: None,
            scenarios: Vec::new(),
            cookies: false,
        }
    }

    fn second(n: u64, latencies_us: &[u64]) -> Second {
        let mut snapshot = Snapshot::default();
        for &us in latencies_us {
            snapshot.responses += 1;
            snapshot.status.record(200);
            snapshot.latency.record(us).unwrap();
        }
        let mut point = SeriesPoint::empty(n, n == 0);
        point.responses = snapshot.responses;
        point.latency_p50_us = snapshot.latency.value_at_quantile(0.5);
        point.latency_p99_us = snapshot.latency.value_at_quantile(0.99);
        Second { point, snapshot }
    }

    #[test]
    fn a_websocket_run_shows_sessions_and_the_message_rates_of_the_last_whole_second() {
        let mut ws = plan();
        ws.load = Load::Closed {
            connections: 3,
            threads: 1,
        };
        ws.websocket = Some(loadmark_plan::WsSpec {
            mode: loadmark_plan::WsMode::Request,
            payload: loadmark_plan::WsPayload::Message("m".into()),
            binary: false,
            interval: None,
            session_duration: None,
            ping: None,
            reply_match: None,
        });
        let mut view = Dashboard::new(&ws, 1, 1);
        let mut seconds = vec![second(0, &[100]), second(1, &[100])];
        seconds[1].point.messages_sent = 120;
        seconds[1].point.messages_received = 118;
        view.tick(&Tick {
            elapsed: Duration::from_secs(2),
            seconds: &seconds,
            open_connections: 3,
            ..Tick::default()
        });
        let text = screen(&view, 120, 40);
        assert!(text.contains("open sessions 3 (asked 3)"), "{text}");
        assert!(
            text.contains("messages/s (second 1) sent 120 received 118"),
            "{text}"
        );
        assert!(text.contains("client not saturated"), "{text}");
    }

    fn screen(view: &Dashboard, w: u16, h: u16) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| view.draw(f)).unwrap();
        let buf = t.backend().buffer().clone();
        let mut out = String::new();
        for y in 0..h {
            for x in 0..w {
                out.push_str(buf[(x, y)].symbol());
            }
            out.push('\n');
        }
        out
    }

    #[test]
    fn the_last_seconds_show_the_series_numbers_and_a_small_terminal_gets_a_note() {
        let mut view = Dashboard::new(&plan(), 2, 3);
        let seconds = [second(0, &[100, 200]), second(1, &[300, 400, 5_000])];
        view.tick(&Tick {
            elapsed: Duration::from_secs(2),
            seconds: &seconds,
            in_flight: 1,
            open_connections: 4,
            busiest_worker: Busy {
                so_far: 0.4,
                recent: 0.95,
            },
            finished: false,
            measured: None,
        });
        let text = screen(&view, 100, 30);
        assert!(text.contains("step 2 of 3"), "{text}");
        assert!(text.contains("remaining 8s"), "{text}");
        let p50 = seconds[1].point.latency_p50_us.to_string();
        let row = text
            .lines()
            .find(|l| l.trim_start_matches('│').starts_with("1 "))
            .unwrap_or_else(|| panic!("a row for second 1: {text}"));
        let cells: Vec<&str> = row.trim_matches(['│', ' ']).split_whitespace().collect();
        assert_eq!(cells[..5], ["1", "3", "0", "50", p50.as_str()], "{row}");
        assert!(text.contains("0w "), "the warm-up second is marked: {text}");
        assert!(
            text.contains("200  3"),
            "status codes after warm-up only: {text}"
        );
        assert!(
            text.contains("open connections 4 (cap 10)  opened 0  in flight 1"),
            "{text}"
        );
        assert!(
            text.contains("client saturated now: busiest load thread 95% of a core (40% over"),
            "{text}"
        );
        assert!(text.contains("dropped 0  schedule lag p99 0 us"), "{text}");
        // The smallest view still shows the header, the health and a row of the last seconds.
        let least = screen(&view, 80, 24);
        assert!(least.contains("step 2 of 3"), "{least}");
        assert!(least.contains("client saturated now"), "{least}");
        assert!(least.contains("│1         3 "), "{least}");
        let small = screen(&view, 60, 10);
        assert!(small.contains("the view needs 80x24"), "{small}");
    }
}
