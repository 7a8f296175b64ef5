//! Daemons started by tests: their own process group, their output collected, killed on drop.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How many times [`retry_on_port_conflict`] tries: a foreign process squatting on a leased
/// port is rare, so five attempts in a row failing means something else is wrong.
const ATTEMPTS: usize = 5;

/// A process a test started, in a process group of its own, with its stdout and stderr
/// collected line by line. Dropping it (also when the test panics) SIGKILLs the whole group
/// by its id and reaps the leader, so no daemon outlives its test, and none is left for a
/// later run to trip over.
pub struct Daemon {
    name: String,
    child: Option<Child>,
    output: Arc<(Mutex<Output>, Condvar)>,
}

#[derive(Default)]
struct Output {
    /// Everything the daemon wrote, stdout and stderr interleaved as they arrived. Test
    /// daemons write little; a chatty one should be sent to a log file instead.
    lines: Vec<String>,
    /// Streams not yet at end of file.
    open: usize,
}

impl Daemon {
    /// Spawns `command` as the leader of a new process group, stdin closed, stdout and stderr
    /// collected (see [`Daemon::output`]). `name` labels error messages.
    pub fn spawn(name: &str, mut command: Command) -> std::io::Result<Daemon> {
        let mut child = command
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let output = Arc::new((
            Mutex::new(Output {
                lines: Vec::new(),
                open: 2,
            }),
            Condvar::new(),
        ));
        let stdout = child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>);
        let stderr = child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>);
        for stream in [stdout, stderr].into_iter().flatten() {
            let output = output.clone();
            // Detached: it ends at end of file, once every process of the group is gone.
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    let (lock, ready) = &*output;
                    lock.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .lines
                        .push(line);
                    ready.notify_all();
                }
                let (lock, ready) = &*output;
                lock.lock().unwrap_or_else(|e| e.into_inner()).open -= 1;
                ready.notify_all();
            });
        }
        Ok(Daemon {
            name: name.to_string(),
            child: Some(child),
            output,
        })
    }

    /// The group leader's pid (and so the group id).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Everything the daemon wrote so far, one line each.
    pub fn output(&self) -> String {
        let lines = &self
            .output
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .lines;
        lines.join("\n")
    }

    /// Waits for the first output line for which `find` returns `Some`, and returns that. An
    /// `Err` (with the daemon's output, so a port conflict can be recognised by
    /// [`is_port_conflict`]) if the daemon exits first or `timeout` passes.
    pub fn wait_for_line<T>(
        &self,
        timeout: Duration,
        mut find: impl FnMut(&str) -> Option<T>,
    ) -> Result<T, String> {
        let deadline = Instant::now() + timeout;
        let (lock, ready) = &*self.output;
        let mut seen = 0;
        let mut output = lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            for line in &output.lines[seen..] {
                if let Some(found) = find(line) {
                    return Ok(found);
                }
            }
            seen = output.lines.len();
            // Both streams closed: every process of the group is gone or closed them; the
            // exit check below settles which.
            if output.open == 0 && self.exited() {
                drop(output);
                return Err(self.failure("exited"));
            }
            let now = Instant::now();
            if now >= deadline {
                drop(output);
                return Err(self.failure(&format!("wrote no expected line within {timeout:?}")));
            }
            // Woken by every new line; the bound rechecks the exit when nothing is written.
            let wait = (deadline - now).min(Duration::from_millis(50));
            output = ready
                .wait_timeout(output, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Waits until `127.0.0.1:port` accepts a connection. An `Err` with the daemon's output
    /// if it exits first (as on "Address already in use") or `timeout` passes.
    pub fn wait_for_port(&self, port: u16, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.exited() {
                return Err(self.failure("exited"));
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(self.failure(&format!("did not listen on {port} within {timeout:?}")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `signal` to the leader only (as a terminal's Ctrl-C would reach a foreground
    /// program that manages its own children).
    pub fn signal(&self, signal: i32) {
        if !self.exited() {
            // SAFETY: kill(2) on our own unreaped child; no memory involved.
            unsafe { libc::kill(self.pid() as i32, signal) };
        }
    }

    /// Waits up to `timeout` for the leader to exit on its own, then reaps it (and SIGKILLs
    /// what is left of its group). An `Err` with its output if it is still running.
    pub fn wait(mut self, timeout: Duration) -> Result<ExitStatus, String> {
        let deadline = Instant::now() + timeout;
        while !self.exited() {
            if Instant::now() >= deadline {
                return Err(self.failure(&format!("did not exit within {timeout:?}")));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(self.kill_and_reap().expect("the daemon's status"))
    }

    /// SIGTERM to the group, up to `grace` for the leader to exit, then SIGKILL to whatever is
    /// left of the group; returns the leader's status.
    pub fn stop(mut self, grace: Duration) -> ExitStatus {
        let pid = self.pid() as i32;
        signal_group(pid, libc::SIGTERM);
        let deadline = Instant::now() + grace;
        while !self.exited() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill_and_reap().expect("the daemon's status")
    }

    /// Whether the leader has exited, without reaping it: until it is reaped its pid (the
    /// group id) cannot be reused, so signalling the group never reaches a stranger.
    fn exited(&self) -> bool {
        let pid = self.pid();
        // SAFETY: siginfo_t is plain data that waitid fills in.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        // SAFETY: a valid pointer to a siginfo_t we own.
        let result = unsafe { libc::waitid(libc::P_PID, pid, &mut info, flags) };
        // SAFETY: si_pid is 0 (zeroed) when no child changed state, as WNOHANG documents.
        result != 0 || unsafe { info.si_pid() } != 0
    }

    fn kill_and_reap(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        // The leader is not reaped yet, so the group id is still ours.
        signal_group(child.id() as i32, libc::SIGKILL);
        let _ = child.kill();
        child.wait().ok()
    }

    fn failure(&self, what: &str) -> String {
        let output = self.output();
        format!(
            "`{}` (pid {}) {what}; its output:\n{}",
            self.name,
            self.pid(),
            if output.is_empty() { "(none)" } else { &output }
        )
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}

fn signal_group(pgid: i32, signal: i32) {
    if pgid > 0 {
        // SAFETY: kill(2) with a negative pid signals that group; no memory involved.
        unsafe { libc::kill(-pgid, signal) };
    }
}

/// Whether a server's output or an error message says its port was taken: the kernel's
/// "Address already in use" (nginx, Python, Rust, Slurm all quote it), or launch's refusal to
/// start where something already answers.
pub fn is_port_conflict(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    text.contains("address already in use")
        || text.contains("eaddrinuse")
        || text.contains("already answers")
}

/// Runs `attempt` until it succeeds, again (up to five times) when it failed with a port
/// conflict ([`is_port_conflict`]), and panics with its error otherwise. Each attempt must
/// lease fresh ports ([`crate::port`]) and start from scratch; a failed attempt's daemon
/// must be dropped (killed) before it returns.
pub fn retry_on_port_conflict<T>(what: &str, mut attempt: impl FnMut() -> Result<T, String>) -> T {
    for n in 1..=ATTEMPTS {
        match attempt() {
            Ok(value) => return value,
            Err(e) if n < ATTEMPTS && is_port_conflict(&e) => {
                eprintln!("{what}: port taken, retrying with another (attempt {n}): {e}");
            }
            Err(e) => panic!("{what} (attempt {n}): {e}"),
        }
    }
    unreachable!("the last attempt returns or panics")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| !s[s.rfind(')').unwrap() + 1..].trim_start().starts_with('Z'))
    }

    #[test]
    fn lines_are_found_and_the_whole_group_dies_on_drop() {
        let d =
            Daemon::spawn("pair", sh("sleep 60 & echo child=$!; echo ready >&2; wait")).unwrap();
        let child: i32 = d
            .wait_for_line(crate::PATIENCE, |l| l.strip_prefix("child=")?.parse().ok())
            .unwrap();
        d.wait_for_line(crate::PATIENCE, |l| (l == "ready").then_some(()))
            .unwrap();
        let leader = d.pid() as i32;
        assert!(alive(child) && alive(leader));
        drop(d);
        assert!(!alive(leader), "the leader is reaped");
        crate::wait_until("the grandchild to die", || !alive(child));
    }

    #[test]
    fn the_group_dies_when_the_test_panics() {
        let (tx, rx) = std::sync::mpsc::channel();
        let result = std::thread::spawn(move || {
            let d = Daemon::spawn("doomed", sh("echo up; sleep 60")).unwrap();
            d.wait_for_line(crate::PATIENCE, |l| (l == "up").then_some(()))
                .unwrap();
            tx.send(d.pid() as i32).unwrap();
            panic!("a failing test");
        })
        .join();
        assert!(result.is_err());
        let pid = rx.recv().unwrap();
        crate::wait_until("the daemon to die", || !alive(pid));
    }

    #[test]
    fn an_early_exit_is_an_error_with_the_output_and_conflicts_are_recognised() {
        let d = Daemon::spawn(
            "busy",
            sh("echo 'bind() to 127.0.0.1:80 failed (98: Address already in use)' >&2; exit 1"),
        )
        .unwrap();
        let e = d
            .wait_for_line(crate::PATIENCE, |_| None::<()>)
            .unwrap_err();
        assert!(e.starts_with("`busy` (pid "), "{e}");
        assert!(e.contains("exited; its output:\nbind() to"), "{e}");
        assert!(is_port_conflict(&e));
        let e = d.wait_for_port(1, crate::PATIENCE).unwrap_err();
        assert!(is_port_conflict(&e), "{e}");
        assert!(!is_port_conflict("permission denied"));
    }

    #[test]
    fn retries_only_port_conflicts() {
        let mut tries = 0;
        let got = retry_on_port_conflict("twice", || {
            tries += 1;
            if tries < 3 {
                Err("Address already in use (os error 98)".to_string())
            } else {
                Ok(tries)
            }
        });
        assert_eq!(got, 3);
        let other = std::panic::catch_unwind(|| {
            retry_on_port_conflict("broken", || Err::<(), _>("bad config".to_string()))
        });
        let message = other.unwrap_err();
        assert_eq!(
            message.downcast_ref::<String>().map(String::as_str),
            Some("broken (attempt 1): bad config")
        );
    }

    #[test]
    fn stop_is_polite_first() {
        let d = Daemon::spawn(
            "polite",
            sh("trap 'echo bye; exit 7' TERM; echo up; while :; do sleep 0.05; done"),
        )
        .unwrap();
        d.wait_for_line(crate::PATIENCE, |l| (l == "up").then_some(()))
            .unwrap();
        let status = d.stop(crate::PATIENCE);
        assert_eq!(status.code(), Some(7));
    }
}
