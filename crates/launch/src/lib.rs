//! Starts a server under test, waits until it is ready, and stops it again.
//!
//! A benchmark plan may say how to start the system it measures. [`launch`] runs the command
//! with `sh -c` (so pipes, `&&` and variables work as typed), appends its stdout and stderr to
//! a log file, and returns once the server is ready: its port accepts connections, its health
//! URL answers 2xx, or a fixed delay passed. [`Launched::stop`] (or dropping the
//! [`Launched`]) sends SIGTERM, waits a grace period, then SIGKILLs what is left. A launch
//! that fails says which server, what happened, and shows the last lines of its log.
//!
//! ```no_run
//! use std::time::Duration;
//! use loadmark_launch::{launch, LaunchSpec, Readiness};
//!
//! let mut spec = LaunchSpec::new(
//!     "nginx",
//!     "exec nginx -c \"$PWD/nginx.conf\" -g 'daemon off;'",
//!     Readiness::Http("http://127.0.0.1:8080/".into()),
//!     "target/bench/nginx.log",
//! );
//! spec.stop_grace = Duration::from_secs(2);
//! let server = launch(&spec)?;
//! println!("nginx runs as pid {}", server.pid()); // monitor this pid's tree
//! // ... run the load ...
//! let stopped = server.stop()?;
//! assert!(stopped.graceful);
//! # Ok::<(), loadmark_launch::LaunchError>(())
//! ```
//!
//! Design decisions:
//!
//! - **One process group per server.** `sh -c` forks the real server (dash does not `exec`
//!   the last command), and servers fork workers of their own. The child is made the leader
//!   of a new process group, and every signal goes to the whole group (`kill(-pgid)`), so
//!   stopping reaches the workers and grandchildren, not only the shell. It also keeps the
//!   terminal's Ctrl-C away from the server: loadmark decides when to stop it, in order.
//!   Servers must stay in the foreground (nginx: `daemon off;`): a daemon leaves the group
//!   (`setsid`) and cannot be tracked; its shell exiting shows as [`LaunchError::ExitedEarly`].
//!   Write `exec server ...` to make the server itself the group leader and [`Launched::pid`].
//! - **Graceful means the whole group.** A stop is graceful only if the leader *and* every
//!   other process of the group exited within the grace period after SIGTERM; otherwise the
//!   group is SIGKILLed. The leader is reaped last (its exit is first observed with
//!   `waitid(WNOWAIT)`), because until it is reaped its pid, which is the group id, cannot be
//!   reused: no signal ever reaches a stranger's group. No zombies are left behind.
//! - **A lock-free registry for emergencies.** Running groups are kept in a fixed array of
//!   atomics, so [`kill_all_launched`] takes no lock and only calls `kill(2)`: safe from a
//!   Ctrl-C handler thread, and even from a real signal handler.
//! - **Fail fast, fail legibly.** Readiness is probed every 50 ms, and the child's exit is
//!   checked each time, so a server that dies on a bad config is reported at once, with its
//!   own last words. Before launching, a port that already answers is an error: otherwise a
//!   stale server would pass the readiness check and be benchmarked instead.
//! - **Logs are appended,** with a header line per launch; error messages show only the
//!   current launch's lines.
//! - **Linux only** (group members are found in /proc). If loadmark itself is SIGKILLed, the
//!   server survives (nothing can run then); `kill_all_launched` covers every other exit.

// A launch error carries the server's last log lines (~150 bytes of fields); it happens once
// per launch, never on a hot path, so boxing it would only make matching on it clumsier.
#![allow(clippy::result_large_err)]

mod log;
mod process;
mod ready;

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How many log lines error messages show.
const ERROR_LOG_LINES: usize = 10;
/// How often readiness is probed (and the child checked for an early exit).
const POLL: Duration = Duration::from_millis(50);
/// How often a stopping group is checked.
const STOP_POLL: Duration = Duration::from_millis(10);
/// How long SIGKILLed processes get to disappear from /proc (they cannot refuse).
const KILL_WAIT: Duration = Duration::from_secs(2);

/// How to start one server.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchSpec {
    /// Names the server in messages (the plan's target name).
    pub name: String,
    /// Run by `sh -c`.
    pub command: String,
    /// Added to (or overriding) loadmark's own environment.
    pub env: Vec<(String, String)>,
    /// Working directory; loadmark's own when `None`.
    pub cwd: Option<PathBuf>,
    pub ready: Readiness,
    /// How long `Port` and `Http` readiness may take (`Delay` ignores it).
    pub ready_timeout: Duration,
    /// How long the server may take to exit after SIGTERM before it is SIGKILLed.
    pub stop_grace: Duration,
    /// stdout and stderr are appended here (the file and its directory are created).
    pub log_path: PathBuf,
}

impl LaunchSpec {
    /// A spec with no extra environment, the current directory, a 30 s readiness timeout and
    /// a 5 s stop grace period.
    pub fn new(
        name: impl Into<String>,
        command: impl Into<String>,
        ready: Readiness,
        log_path: impl Into<PathBuf>,
    ) -> LaunchSpec {
        LaunchSpec {
            name: name.into(),
            command: command.into(),
            env: Vec::new(),
            cwd: None,
            ready,
            ready_timeout: Duration::from_secs(30),
            stop_grace: Duration::from_secs(5),
            log_path: log_path.into(),
        }
    }
}

/// When a launched server counts as ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// A TCP connection to this address succeeds.
    Port(SocketAddr),
    /// A GET of this `http://` URL answers 2xx.
    Http(String),
    /// This much time passed and the server is still running.
    Delay(Duration),
}

impl fmt::Display for Readiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Readiness::Port(addr) => write!(f, "a TCP connection to {addr}"),
            Readiness::Http(url) => write!(f, "GET {url} answering 2xx"),
            Readiness::Delay(delay) => write!(f, "running for {delay:?}"),
        }
    }
}

/// How a stopped server ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopInfo {
    /// The whole process group exited within the grace period after SIGTERM (or had already
    /// exited), so no SIGKILL was needed.
    pub graceful: bool,
    /// The group leader's exit code, if it exited normally.
    pub exit: Option<i32>,
    /// The signal that ended the group leader, if one did.
    pub signal: Option<i32>,
}

/// Why a launch or a stop failed. Messages name the server and, where it ran, end with the
/// last lines of its log.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// `sh` could not be started, or the working directory does not exist. Fix the `cwd`
    /// (a command that is not found is reported by `sh` as [`LaunchError::ExitedEarly`] with
    /// status 127).
    #[error("cannot start `{name}` (sh -c {command:?}): {source}")]
    Spawn {
        name: String,
        command: String,
        #[source]
        source: io::Error,
    },
    /// The server exited before it was ready: a bad command (127), bad config, port in use, or
    /// a server that daemonized. Fix: read its last log lines; keep servers in the foreground.
    #[error("`{name}` exited before it was ready ({status}){}{}", exit_hint(.status), lines(.last_lines, .log_path))]
    ExitedEarly {
        name: String,
        /// As the OS puts it: "exit status: 1", "signal: 11 (SIGSEGV)".
        status: String,
        last_lines: Vec<String>,
        log_path: PathBuf,
    },
    /// The server kept running but did not become ready in time; it was stopped. Fix: check
    /// the address or URL (is it the port the server listens on?), or raise the timeout.
    #[error("`{name}` was not ready within {timeout:?} (waited for {ready}; last attempt: {last_attempt}); it was stopped{}", lines(.last_lines, .log_path))]
    NotReady {
        name: String,
        ready: String,
        timeout: Duration,
        last_attempt: String,
        last_lines: Vec<String>,
        log_path: PathBuf,
    },
    /// Something already answers at the readiness address before the server was started (a
    /// server left from an earlier run?); it would have passed the readiness check in the
    /// new server's place. Nothing was started. Fix: stop the old server or use another port.
    #[error("something already answers {ready} before `{name}` was started (a server left running?); stop it or use another port")]
    AlreadyListening { name: String, ready: String },
    /// The readiness check cannot work as written (an https:// or malformed URL). Nothing
    /// was started. Fix the URL, or use a port check.
    #[error("`{name}`: readiness check {ready:?}: {reason}")]
    InvalidReadiness {
        name: String,
        ready: String,
        reason: String,
    },
    /// Too many servers run at once from this process. Fix: stop some first.
    #[error("cannot launch `{name}`: {limit} launched servers are already running")]
    TooMany { name: String, limit: usize },
    /// The log file could not be created or written. Nothing was started. Fix the path or its
    /// permissions.
    #[error("cannot write the log file {}: {source}", .path.display())]
    Log {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Signalling or waiting for the server failed (should not happen for our own child).
    #[error("cannot stop `{name}`: {source}")]
    Stop {
        name: String,
        #[source]
        source: io::Error,
    },
}

fn exit_hint(status: &str) -> &'static str {
    if status.ends_with("status: 127") {
        " - command not found"
    } else if status.ends_with("status: 126") {
        " - command not executable"
    } else if status.ends_with("status: 0") {
        " - servers must stay in the foreground (nginx: -g 'daemon off;')"
    } else {
        ""
    }
}

fn lines(last_lines: &[String], log_path: &Path) -> String {
    if last_lines.is_empty() {
        return format!("; it wrote nothing to {}", log_path.display());
    }
    let mut out = format!("; last lines of {}:", log_path.display());
    for line in last_lines {
        out.push_str("\n  | ");
        out.push_str(line);
    }
    out
}

/// A running server, stopped by [`Launched::stop`] or on drop.
#[derive(Debug)]
pub struct Launched {
    name: String,
    /// `None` once stopped.
    child: Option<Child>,
    slot: usize,
    log_path: PathBuf,
    log_start: u64,
    stop_grace: Duration,
}

impl Launched {
    /// The process group leader: the `sh` running the command (or the server itself when the
    /// command `exec`s it). Monitor this pid's tree to see the server.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Whether the group leader is still running (a server can crash between two steps of a
    /// sweep; check before measuring it again). The leader is not reaped by this check.
    pub fn is_running(&self) -> bool {
        self.child
            .as_ref()
            .is_some_and(|child| !process::has_exited(child.id() as i32).unwrap_or(true))
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The last `n` lines this launch wrote to its log (not those of earlier launches
    /// appended to the same file).
    pub fn last_log_lines(&self, n: usize) -> Vec<String> {
        log::last_lines(&self.log_path, self.log_start, n)
    }

    /// SIGTERM to the group, up to the grace period for every process of it to exit, then
    /// SIGKILL; reaps the leader.
    pub fn stop(mut self) -> Result<StopInfo, LaunchError> {
        self.terminate().map_err(|source| LaunchError::Stop {
            name: self.name.clone(),
            source,
        })
    }

    fn terminate(&mut self) -> io::Result<StopInfo> {
        let Some(mut child) = self.child.take() else {
            return Ok(StopInfo {
                graceful: true,
                exit: None,
                signal: None,
            });
        };
        let (graceful, status) = terminate(&mut child, self.slot, self.stop_grace)?;
        Ok(StopInfo {
            graceful,
            exit: status.code(),
            signal: status.signal(),
        })
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        let _ = self.terminate();
    }
}

/// Stops the group of `child` (see [`Launched::stop`]), frees its registry slot, and returns
/// whether the stop was graceful and the leader's status.
fn terminate(child: &mut Child, slot: usize, grace: Duration) -> io::Result<(bool, ExitStatus)> {
    let pid = child.id() as i32;
    let result = (|| -> io::Result<bool> {
        process::signal_group(pid, libc::SIGTERM)?;
        let graceful = process::poll_until(grace, STOP_POLL, || {
            Ok(process::has_exited(pid)? && process::live_members(pid).is_empty())
        })?;
        // Also after a graceful exit: anything forked since the last look goes too. The
        // leader is not reaped yet, so the group id is still ours.
        process::signal_group(pid, libc::SIGKILL)?;
        Ok(graceful)
    })();
    if result.is_err() {
        let _ = process::signal_group(pid, libc::SIGKILL);
    }
    // Whatever happened above, the leader must be dead before it is waited for, or the wait
    // could hang; it is not reaped yet, so its pid is still ours to signal.
    let _ = child.kill();
    process::release(slot);
    let status = child.wait()?;
    let graceful = result?;
    // SIGKILLed processes vanish almost at once, but not synchronously; wait for them so that
    // "stopped" means their ports are closed and their memory is free.
    process::poll_until(KILL_WAIT, STOP_POLL, || {
        Ok(process::live_members(pid).is_empty())
    })?;
    Ok((graceful, status))
}

/// Kills (SIGKILL) every process group launched by this process and not yet stopped.
///
/// Takes no lock and only calls `kill(2)`, so it is safe from a Ctrl-C handler thread or a
/// signal handler (e.g. on a second Ctrl-C, right before exiting). The [`Launched`] values
/// stay valid: stopping or dropping them afterwards reaps the dead processes.
pub fn kill_all_launched() {
    process::kill_all();
}

/// Starts the server and returns once it is ready.
///
/// On any failure after the start (early exit, not ready in time) the server's whole
/// process group is stopped before the error is returned.
pub fn launch(spec: &LaunchSpec) -> Result<Launched, LaunchError> {
    let name = &spec.name;
    let probe = Probe::new(spec)?;
    if let Some(ready) = probe.already_answering() {
        return Err(LaunchError::AlreadyListening {
            name: name.clone(),
            ready,
        });
    }
    let spawn_error = |source| LaunchError::Spawn {
        name: name.clone(),
        command: spec.command.clone(),
        source,
    };
    if let Some(cwd) = &spec.cwd {
        if !cwd.is_dir() {
            return Err(spawn_error(io::Error::new(
                io::ErrorKind::NotFound,
                format!("working directory {} does not exist", cwd.display()),
            )));
        }
    }
    let log_error = |source| LaunchError::Log {
        path: spec.log_path.clone(),
        source,
    };
    let header = format!(
        "=== loadmark: launching `{name}`: sh -c {:?}\n",
        spec.command
    );
    let (log, log_start) = log::open(&spec.log_path, &header).map_err(log_error)?;
    let stderr = log.try_clone().map_err(log_error)?;

    let slot = process::reserve().ok_or_else(|| LaunchError::TooMany {
        name: name.clone(),
        limit: process::REGISTRY_SLOTS,
    })?;
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(&spec.command)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(stderr)
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    let child = match command.spawn() {
        Ok(child) => child,
        Err(source) => {
            process::release(slot);
            return Err(spawn_error(source));
        }
    };
    process::register(slot, child.id() as i32);
    let launched = Launched {
        name: name.clone(),
        child: Some(child),
        slot,
        log_path: spec.log_path.clone(),
        log_start,
        stop_grace: spec.stop_grace,
    };
    wait_ready(launched, spec, &probe)
}

/// Polls readiness until it succeeds, the child exits, or time runs out.
fn wait_ready(
    mut launched: Launched,
    spec: &LaunchSpec,
    probe: &Probe,
) -> Result<Launched, LaunchError> {
    let deadline = Instant::now()
        + match spec.ready {
            Readiness::Delay(delay) => delay,
            _ => spec.ready_timeout,
        };
    let pid = launched.pid() as i32;
    let mut last_attempt = String::from("none yet");
    loop {
        let exited = process::has_exited(pid).map_err(|source| LaunchError::Stop {
            name: spec.name.clone(),
            source,
        })?;
        if exited {
            return Err(exited_early(launched));
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        match probe.check(remaining) {
            Some(Ok(())) => {
                // A server that answered and died at once is not ready.
                if process::has_exited(pid).unwrap_or(false) {
                    return Err(exited_early(launched));
                }
                return Ok(launched);
            }
            Some(Err(attempt)) => last_attempt = attempt,
            // A delay: ready once it has passed with the server still running.
            None if remaining.is_zero() => return Ok(launched),
            None => {}
        }
        if remaining.is_zero() {
            // The attempt just made was the last one, at the deadline.
            let _ = launched.terminate();
            return Err(LaunchError::NotReady {
                name: spec.name.clone(),
                ready: spec.ready.to_string(),
                timeout: spec.ready_timeout,
                last_attempt,
                last_lines: launched.last_log_lines(ERROR_LOG_LINES),
                log_path: spec.log_path.clone(),
            });
        }
        std::thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now())));
    }
}

fn exited_early(mut launched: Launched) -> LaunchError {
    // The leader is gone, but its group may not be; stop that too, then read the status.
    let status = launched
        .child
        .take()
        .map(
            |mut child| match terminate(&mut child, launched.slot, launched.stop_grace) {
                Ok((_, status)) => status.to_string(),
                Err(e) => format!("status unknown: {e}"),
            },
        )
        .unwrap_or_default();
    LaunchError::ExitedEarly {
        name: launched.name.clone(),
        status,
        last_lines: launched.last_log_lines(ERROR_LOG_LINES),
        log_path: launched.log_path.clone(),
    }
}

/// A prepared readiness check.
enum Probe {
    Port(SocketAddr),
    Http(String, ready::HttpTarget),
    Delay,
}

impl Probe {
    fn new(spec: &LaunchSpec) -> Result<Probe, LaunchError> {
        Ok(match &spec.ready {
            Readiness::Port(addr) => Probe::Port(*addr),
            Readiness::Http(url) => {
                let target =
                    ready::parse_http_url(url).map_err(|reason| LaunchError::InvalidReadiness {
                        name: spec.name.clone(),
                        ready: url.clone(),
                        reason,
                    })?;
                Probe::Http(url.clone(), target)
            }
            Readiness::Delay(_) => Probe::Delay,
        })
    }

    /// One attempt, bounded by `remaining` (and a second); `None` for a delay.
    fn check(&self, remaining: Duration) -> Option<Result<(), String>> {
        let timeout = remaining.clamp(Duration::from_millis(10), Duration::from_secs(1));
        match self {
            Probe::Port(addr) => Some(ready::probe_port(*addr, timeout)),
            Probe::Http(_, target) => Some(ready::probe_http(target, timeout).and_then(|code| {
                if (200..300).contains(&code) {
                    Ok(())
                } else {
                    Err(format!("HTTP {code}"))
                }
            })),
            Probe::Delay => None,
        }
    }

    /// Describes what already passes the check before the launch, if anything does. For HTTP
    /// only a 2xx counts: a proxy that answers 502 until its backend runs is fine.
    fn already_answering(&self) -> Option<String> {
        let timeout = Duration::from_millis(200);
        match self {
            Probe::Port(addr) => ready::probe_port(*addr, timeout)
                .is_ok()
                .then(|| format!("at {addr}")),
            Probe::Http(url, target) => ready::probe_http(target, timeout)
                .is_ok_and(|code| (200..300).contains(&code))
                .then(|| format!("GET {url} with 2xx")),
            Probe::Delay => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_show_name_hint_and_log_lines() {
        let e = LaunchError::ExitedEarly {
            name: "api".into(),
            status: "exit status: 127".into(),
            last_lines: vec!["sh: 1: apid: not found".into()],
            log_path: "/tmp/api.log".into(),
        };
        assert_eq!(
            e.to_string(),
            "`api` exited before it was ready (exit status: 127) - command not found; \
             last lines of /tmp/api.log:\n  | sh: 1: apid: not found"
        );
        let e = LaunchError::NotReady {
            name: "api".into(),
            ready: Readiness::Port("127.0.0.1:9".parse().unwrap()).to_string(),
            timeout: Duration::from_millis(1500),
            last_attempt: "connect to 127.0.0.1:9: Connection refused".into(),
            last_lines: vec![],
            log_path: "/tmp/api.log".into(),
        };
        assert_eq!(
            e.to_string(),
            "`api` was not ready within 1.5s (waited for a TCP connection to 127.0.0.1:9; \
             last attempt: connect to 127.0.0.1:9: Connection refused); it was stopped; \
             it wrote nothing to /tmp/api.log"
        );
    }
}
