//! [`Tui`]: the full-screen terminal view (`--tui`), drawn on stderr's terminal.
//!
//! The run's main thread draws a frame on each tick (once or twice a second), from the final
//! seconds it is handed: the load threads never wait on it. A small thread reads keys: q or
//! Ctrl-C (which raw mode delivers as a key, not a signal) calls `on_quit`, which the CLI
//! makes stop the run as a Ctrl-C does, report written, exit 130.

use std::io::{IsTerminal, Stderr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadmark_plan::Plan;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::crossterm::{cursor, execute};
use ratatui::Terminal;

use crate::dashboard::{Dashboard, MIN_SIZE};
use crate::Tick;

/// Why the view is not shown: the CLI says so once and shows the progress line instead.
#[derive(Debug, thiserror::Error)]
pub enum NoTui {
    #[error("stderr is not a terminal")]
    NotATerminal,
    #[error("the terminal is {0}x{1}; the view needs at least {w}x{h}", w = MIN_SIZE.0, h = MIN_SIZE.1)]
    TooSmall(u16, u16),
    #[error("the terminal cannot be set up: {0}")]
    Io(#[from] std::io::Error),
}

/// The terminal view of one process (every plan step of `bench` in turn).
pub struct Tui {
    terminal: Terminal<CrosstermBackend<Stderr>>,
    view: Option<Dashboard>,
    keys_done: Arc<AtomicBool>,
    keys: Option<std::thread::JoinHandle<()>>,
    cpu: CpuClock,
    active: bool,
}

impl Tui {
    /// Takes over the terminal (alternate screen, raw mode), or says why not.
    pub fn start(on_quit: impl Fn() + Send + 'static) -> Result<Tui, NoTui> {
        if !std::io::stderr().is_terminal() || !std::io::stdin().is_terminal() {
            return Err(NoTui::NotATerminal);
        }
        let (w, h) = terminal::size()?;
        if w < MIN_SIZE.0 || h < MIN_SIZE.1 {
            return Err(NoTui::TooSmall(w, h));
        }
        terminal::enable_raw_mode()?;
        let mut err = std::io::stderr();
        if let Err(e) = execute!(err, EnterAlternateScreen, cursor::Hide) {
            let _ = terminal::disable_raw_mode();
            return Err(e.into());
        }
        let terminal = Terminal::new(CrosstermBackend::new(std::io::stderr()))?;
        let keys_done = Arc::new(AtomicBool::new(false));
        let done = keys_done.clone();
        let keys = std::thread::Builder::new()
            .name("loadmark-keys".into())
            .spawn(move || read_keys(&done, on_quit))?;
        Ok(Tui {
            terminal,
            view: None,
            keys_done,
            keys: Some(keys),
            cpu: CpuClock::new(),
            active: true,
        })
    }

    /// A run (plan step `step` of `steps`) begins.
    pub fn begin(&mut self, plan: &Plan, step: u32, steps: u32) {
        self.view = Some(Dashboard::new(plan, step, steps));
        // Whatever was written to the screen meanwhile (bench's step lines) is painted over.
        let _ = self.terminal.clear();
        self.draw();
    }

    /// Adds a tick and draws a frame.
    pub fn tick(&mut self, tick: &Tick) {
        if let Some(v) = &mut self.view {
            v.tick(tick);
            v.cpu_cores = self.cpu.cores();
        }
        self.draw();
    }

    fn draw(&mut self) {
        if !self.active {
            return;
        }
        if let Some(v) = &self.view {
            // A failed draw (the terminal went away) leaves the run alone.
            let _ = self.terminal.draw(|f| v.draw(f));
        }
    }

    /// Gives the terminal back (also on drop): the report is printed after.
    pub fn leave(&mut self) {
        if !std::mem::replace(&mut self.active, false) {
            return;
        }
        self.keys_done.store(true, Ordering::Relaxed);
        if let Some(k) = self.keys.take() {
            let _ = k.join();
        }
        let _ = terminal::disable_raw_mode();
        let _ = execute!(std::io::stderr(), LeaveAlternateScreen, cursor::Show);
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        self.leave();
    }
}

/// Reads keys until told to stop; polls so that it notices `done` within 100 ms.
fn read_keys(done: &AtomicBool, on_quit: impl Fn()) {
    while !done.load(Ordering::Relaxed) {
        if !event::poll(Duration::from_millis(100)).unwrap_or(false) {
            continue;
        }
        let Ok(Event::Key(key)) = event::read() else {
            continue;
        };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        let ctrl_c =
            key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl_c || matches!(key.code, KeyCode::Char('q') | KeyCode::Char('Q')) {
            on_quit();
        }
    }
}

/// The process's CPU time (all threads, /proc/self/stat) between two ticks, in cores.
struct CpuClock {
    last: Option<(Instant, f64)>,
}

impl CpuClock {
    fn new() -> Self {
        CpuClock {
            last: cpu_seconds().map(|s| (Instant::now(), s)),
        }
    }

    fn cores(&mut self) -> Option<f64> {
        let now = (Instant::now(), cpu_seconds()?);
        let (then, cpu) = self.last.replace(now)?;
        let wall = now.0.duration_since(then).as_secs_f64();
        (wall > 0.0).then(|| (now.1 - cpu) / wall)
    }
}

/// utime + stime of this process, seconds (Linux counts them in 1/100 s: USER_HZ).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which may hold spaces, closed by the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}
