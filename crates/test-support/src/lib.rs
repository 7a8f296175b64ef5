//! Test-only helpers that keep the suite from failing by chance on a busy, shared machine.
//!
//! `cargo test` runs the tests of one binary on parallel threads and, with `--workspace`,
//! other sessions on the same machine run their suites at the same time. Anything a test
//! takes from the machine (a port, a directory, a process) must therefore be either given by
//! the kernel and held, or reserved in a way every other test process respects.
//!
//! Getting a port, in order of preference:
//!
//! 1. **Let the server bind port 0 and tell you the port.** In process:
//!    `loadmark_target::start` with port 0, then `local_addr()`. As a subprocess:
//!    `loadmark serve --port 0` prints `listening on http://127.0.0.1:PORT`; start it with
//!    [`Daemon::spawn`] and read the port with [`Daemon::wait_for_line`].
//! 2. **Hold the listener** (`TcpListener::bind("127.0.0.1:0")`) and serve on it in the test
//!    itself, or hand it to the server under test. For a port that must refuse connections,
//!    [`refusing_port`] binds without listening and holds it.
//! 3. **Only when a port must be written into a config file or a plan before the server
//!    starts** (nginx, Slurm, Prometheus, a plan's `url:`): [`port`] leases one from this
//!    process's block of a range below the kernel's ephemeral range, reserved with a lock
//!    file (`flock`) that every test process respects. Something outside the suite can still
//!    sit on it, so start such servers inside [`retry_on_port_conflict`]: an attempt that
//!    failed with "Address already in use" is retried with fresh ports.
//!
//! Never bind port 0, read the port and close the socket before the server starts: another
//! test can draw the same port in between (issue 23's chance failure).
//!
//! ```no_run
//! use std::process::Command;
//! use std::time::Duration;
//! use loadmark_test_support::{port, retry_on_port_conflict, Daemon, TempDir};
//!
//! let dir = TempDir::new("nginx");
//! let nginx = retry_on_port_conflict("nginx", || {
//!     let p = port();
//!     std::fs::write(dir.join("nginx.conf"), format!("... listen 127.0.0.1:{p}; ...")).unwrap();
//!     let mut cmd = Command::new("nginx");
//!     cmd.args(["-p"]).arg(dir.path()).args(["-c", "nginx.conf", "-g", "daemon off;"]);
//!     let daemon = Daemon::spawn("nginx", cmd).map_err(|e| e.to_string())?;
//!     daemon.wait_for_port(p, Duration::from_secs(30))?; // Err holds its output
//!     Ok((daemon, p))
//! });
//! // ... test against 127.0.0.1:{nginx.1}; nginx is SIGKILLed (its whole group) on drop,
//! // even if the test panics.
//! ```

mod daemon;
mod dir;
mod ports;

pub use daemon::{is_port_conflict, retry_on_port_conflict, Daemon};
pub use dir::TempDir;
pub use ports::{port, refusing_port, HeldPort};

use std::time::{Duration, Instant};

/// How long waits for something that normally takes milliseconds may take before a test
/// fails. A loaded 2-core machine can stall a process for seconds (a link step, another
/// session's benchmark), and a test that waits longer only costs time when it fails anyway.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Polls `done` every 10 ms until it holds; panics naming `what` after [`PATIENCE`]. For
/// conditions with no signal to wait on (a process appearing in /proc, a counter reaching a
/// value); it never decides an outcome by the clock.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "timed out after {PATIENCE:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
