//! The terminal view (`--tui`) in a real terminal: tmux (Debian's package, installed by
//! .ci/run) runs loadmark in a detached session of a fixed size; the test reads the screen
//! with capture-pane, presses q, and checks the numbers shown against the final report.

mod common;

use std::path::Path;
use std::process::Command;

use common::{loadmark, report_json, target, temp_dir, wait_until};

/// A tmux server of its own (its socket in the test's directory), killed by PID on drop with
/// the process group of the pane's shell, whatever the test did.
struct Tmux {
    socket: std::path::PathBuf,
    server_pid: Option<i32>,
    pane_pid: Option<i32>,
}

impl Tmux {
    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket).args(["-f", "/dev/null"]);
        c
    }

    fn run(&self, args: &[&str]) -> String {
        let out = self
            .cmd()
            .args(args)
            .output()
            .expect("tmux (Debian's package; .ci/run installs it)");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Starts `shell_command` in a detached session of `width` x `height`.
    fn start(dir: &Path, width: u16, height: u16, shell_command: &str) -> Tmux {
        let mut t = Tmux {
            socket: dir.join("tmux.sock"),
            server_pid: None,
            pane_pid: None,
        };
        let (w, h) = (width.to_string(), height.to_string());
        t.run(&[
            "new-session",
            "-d",
            "-s",
            "lm",
            "-x",
            &w,
            "-y",
            &h,
            shell_command,
        ]);
        t.server_pid = t
            .run(&["display-message", "-p", "-t", "lm", "#{pid}"])
            .trim()
            .parse()
            .ok();
        t.pane_pid = t
            .run(&["display-message", "-p", "-t", "lm", "#{pane_pid}"])
            .trim()
            .parse()
            .ok();
        t
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "lm"])
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // SAFETY: kill(2) on processes this test started; no memory involved.
        unsafe {
            if let Some(p) = self.pane_pid {
                libc::kill(-p, libc::SIGKILL);
            }
            if let Some(p) = self.server_pid {
                libc::kill(p, libc::SIGKILL);
            }
        }
    }
}

/// One row of the view's "last seconds" table.
#[derive(Debug, PartialEq)]
struct Shown {
    second: u64,
    warmup: bool,
    responses: u64,
    errors: u64,
    requested: String,
    p50_us: u64,
    p99_us: u64,
}

fn rows(screen: &str) -> Vec<Shown> {
    let table = screen.split("last seconds").nth(1).unwrap_or_default();
    table
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line
                .trim_matches(|c: char| c == '│' || c.is_whitespace())
                .split_whitespace()
                .collect();
            let [second, responses, errors, requested, p50, p99, _dropped, _lag] = cells[..] else {
                return None;
            };
            let warmup = second.ends_with('w');
            Some(Shown {
                second: second.trim_end_matches('w').parse().ok()?,
                warmup,
                responses: responses.parse().ok()?,
                errors: errors.parse().ok()?,
                requested: requested.to_string(),
                p50_us: p50.parse().ok()?,
                p99_us: p99.parse().ok()?,
            })
        })
        .collect()
}

fn last_second(screen: &str) -> Option<u64> {
    rows(screen).last().map(|r| r.second)
}

#[test]
fn the_view_shows_the_reports_seconds_and_q_stops_the_run_with_its_report() {
    let server = target();
    let dir = temp_dir("tui", "tmux");
    let report = dir.join("r.json");
    let exit = dir.join("exit");
    let url = format!("http://{}/status", server.local_addr());
    // Bounded at 60 s; q ends it after a few seconds. The view draws on stderr, the pane's
    // terminal; the shell then keeps the pane (and what loadmark printed) for a while, so a
    // failure can show the screen.
    let command = format!(
        "'{}' run {url} -R 200 -t 1 -d 60s --warmup 1s --tui -o '{}'; echo $? > '{}'; sleep 60",
        env!("CARGO_BIN_EXE_loadmark"),
        report.display(),
        exit.display()
    );
    let tmux = Tmux::start(&dir, 120, 40, &command);
    // Read the screen at a few moments: once two measured seconds are shown, and again later.
    let mut screens = Vec::new();
    for at in [2, 4] {
        wait_until(&format!("second {at} on the screen"), || {
            last_second(&tmux.screen()).is_some_and(|s| s >= at)
        });
        screens.push(tmux.screen());
    }
    let screen = screens.last().unwrap();
    assert!(screen.contains("step 1 of 1"), "{screen}");
    assert!(screen.contains("remaining"), "{screen}");
    assert!(
        screen.contains("requests/s: achieved vs requested"),
        "{screen}"
    );
    assert!(
        screen.contains("200  "),
        "the status code is listed: {screen}"
    );
    tmux.run(&["send-keys", "-t", "lm", "q"]);
    wait_until("loadmark to exit after q", || {
        exit.exists() && std::fs::read_to_string(&exit).unwrap().ends_with('\n')
    });
    let code = std::fs::read_to_string(&exit).unwrap();
    let stderr = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    assert_eq!(
        code.trim(),
        "130",
        "q stops the run as Ctrl-C does: {stderr}"
    );
    let saved = report_json(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert!(saved.run.interrupted, "the report says it was stopped");
    // Every second the view showed is the report's, number for number.
    let mut checked = 0;
    for screen in &screens {
        let shown = rows(screen);
        assert!(shown.len() >= 3, "{screen}");
        for row in shown {
            let p = &saved.series[row.second as usize];
            assert_eq!(row.second, p.second);
            assert_eq!(
                (
                    row.warmup,
                    row.responses,
                    row.errors,
                    row.p50_us,
                    row.p99_us
                ),
                (
                    p.warmup,
                    p.responses,
                    p.errors,
                    p.latency_p50_us,
                    p.latency_p99_us
                ),
                "second {} as shown and as reported",
                row.second
            );
            assert_eq!(row.requested, "200");
            checked += 1;
        }
    }
    assert!(checked >= 6, "{checked} rows checked");
    drop(tmux);
    server.shutdown();
}

#[test]
fn without_a_terminal_tui_falls_back_to_the_progress_line_and_says_why() {
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    let out = loadmark()
        .args(["run", &url, "-c", "1", "-n", "50", "--tui"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--tui: stderr is not a terminal; showing the progress line instead"),
        "{stderr}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Requests"),
        "the report is printed"
    );
    server.shutdown();
}

#[test]
fn a_terminal_smaller_than_80x24_gets_the_progress_line_and_the_reason() {
    let server = target();
    let dir = temp_dir("tui", "small");
    let exit = dir.join("exit");
    let url = format!("http://{}/status", server.local_addr());
    let command = format!(
        "'{}' run {url} -c 1 -n 50 --tui >/dev/null; echo $? > '{}'; sleep 60",
        env!("CARGO_BIN_EXE_loadmark"),
        exit.display()
    );
    let tmux = Tmux::start(&dir, 70, 20, &command);
    wait_until("loadmark to end", || {
        std::fs::read_to_string(&exit).is_ok_and(|t| t.ends_with('\n'))
    });
    assert_eq!(std::fs::read_to_string(&exit).unwrap().trim(), "0");
    let screen = tmux.screen().replace('\n', "");
    assert!(
        screen.contains("the terminal is 70x20; the view needs at least 80x24"),
        "{screen}"
    );
    drop(tmux);
    server.shutdown();
}

/// What the client box says of a WebSocket run's messages: (second, sent, received).
fn message_rates(screen: &str) -> Option<(u64, u64, u64)> {
    let rest = screen.split("messages/s (second ").nth(1)?;
    let (second, rest) = rest.split_once(") sent ")?;
    let (sent, rest) = rest.split_once(" received ")?;
    let received = rest.split_whitespace().next()?.trim_end_matches('│');
    Some((
        second.parse().ok()?,
        sent.parse().ok()?,
        received.parse().ok()?,
    ))
}

/// Runs `args` under tmux with --tui and `-o report`, 120x40; the shell records the exit code.
fn start_in_tmux(dir: &Path, args: &str, report: &Path, exit: &Path) -> Tmux {
    let command = format!(
        "'{}' {args} --tui -o '{}'; echo $? > '{}'; sleep 60",
        env!("CARGO_BIN_EXE_loadmark"),
        report.display(),
        exit.display()
    );
    Tmux::start(dir, 120, 40, &command)
}

/// Presses q and waits for the exit code the shell wrote.
fn quit(tmux: &Tmux, exit: &Path) -> String {
    tmux.run(&["send-keys", "-t", "lm", "q"]);
    wait_until("loadmark to exit after q", || {
        std::fs::read_to_string(exit).is_ok_and(|t| t.ends_with('\n'))
    });
    std::fs::read_to_string(exit).unwrap().trim().to_string()
}

#[test]
fn a_websocket_view_shows_sessions_and_message_rates_as_the_report_has_them() {
    let server = target();
    let dir = temp_dir("tui", "ws");
    let (report, exit) = (dir.join("r.json"), dir.join("exit"));
    let url = format!("ws://{}/ws/echo", server.local_addr());
    // Four sessions, each echoing a message every 50 ms (about 80 a second both ways);
    // bounded at 60 s, q ends it after a few seconds.
    let tmux = start_in_tmux(
        &dir,
        &format!("ws {url} -c 4 -i 50ms -t 1 -d 60s"),
        &report,
        &exit,
    );
    // The sessions connect in the first moments; the gauge is the latest hand-over's.
    wait_until("four open sessions on the screen", || {
        tmux.screen().contains("open sessions 4 (asked 4)")
    });
    let mut shown = Vec::new();
    for at in [2, 4] {
        wait_until(&format!("the message rates of second {at}"), || {
            message_rates(&tmux.screen()).is_some_and(|(s, _, _)| s >= at)
        });
        let screen = tmux.screen();
        shown.push((message_rates(&screen).unwrap(), screen));
    }
    assert_eq!(quit(&tmux, &exit), "130", "q stops the run");
    let saved = report_json(&std::fs::read_to_string(&report).unwrap()).unwrap();
    for ((second, sent, received), screen) in &shown {
        let p = &saved.series[*second as usize];
        assert_eq!(
            (*sent, *received),
            (p.messages_sent, p.messages_received),
            "second {second} as shown and as reported: {screen}"
        );
        assert!(*sent > 0, "messages flowed in second {second}: {screen}");
        assert!(screen.contains("round trips/s"), "{screen}");
        assert!(screen.contains("client not saturated") || screen.contains("saturated now"));
    }
    drop(tmux);
    server.shutdown();
}

#[test]
fn a_bench_view_says_which_plan_step_of_how_many_is_running() {
    let server = target();
    let dir = temp_dir("tui", "bench");
    let (out, exit) = (dir.join("out"), dir.join("exit"));
    let plan = dir.join("plan.yaml");
    // Two steps of 8 s each (step 2 stays on the screen that long, against a capture every
    // few milliseconds); q stops the bench once step 2 is shown.
    std::fs::write(
        &plan,
        format!(
            "name: steps\ntargets:\n  api:\n    url: http://{}/status\nload: {{duration: 8s}}\nsweep: {{connections: [1, 2]}}\n",
            server.local_addr()
        ),
    )
    .unwrap();
    let tmux = start_in_tmux(&dir, &format!("bench '{}'", plan.display()), &out, &exit);
    wait_until("step 1 of 2 on the screen", || {
        tmux.screen().contains("step 1 of 2")
    });
    // Step 1 ends on its own after 8 s; step 2 is then drawn in the same view.
    wait_until("step 2 of 2 on the screen", || {
        tmux.screen().contains("step 2 of 2")
    });
    // Its two connections, once the first second has been handed over.
    wait_until("step 2's two open connections on the screen", || {
        let screen = tmux.screen();
        screen.contains("step 2 of 2") && screen.contains("open connections 2 (asked 2)")
    });
    assert_eq!(quit(&tmux, &exit), "130", "q stops the bench");
    drop(tmux);
    server.shutdown();
}
