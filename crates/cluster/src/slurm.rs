//! `--slurm N`: one `srun` step of N tasks, each running one segment of the plan; every
//! task's result comes back framed on srun's labelled standard output (see `frame`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::frame::{Collected, Collector};
use crate::ClusterError;

/// An srun step that runs `worker` as `tasks` tasks.
#[derive(Debug, Clone)]
pub struct Srun {
    /// The srun program (`srun`, found on PATH, unless given).
    pub program: PathBuf,
    pub tasks: u32,
    /// The worker's command line: program and arguments, run by every task.
    pub worker: Vec<OsString>,
    /// Extra srun options from the user (`--srun-arg`), before the worker.
    pub extra: Vec<String>,
}

impl Srun {
    /// srun's arguments: N tasks spread over as many nodes as the allocation has (one per
    /// node where possible: a load generator wants a machine's network to itself), a failed
    /// task ends the step (`--kill-on-bad-exit`), output labelled by task.
    pub fn args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            format!("--ntasks={}", self.tasks).into(),
            "--spread-job".into(),
            "--kill-on-bad-exit=1".into(),
            "--label".into(),
            "--job-name=loadmark".into(),
        ];
        args.extend(self.extra.iter().map(OsString::from));
        args.extend(self.worker.iter().cloned());
        args
    }
}

/// What came back from a step.
#[derive(Debug)]
pub struct SrunOutcome {
    /// Each task's result (by task number = segment index), whole or cut off.
    pub results: BTreeMap<u32, Collected>,
    /// Output lines that were not results (a worker's errors go to stderr, which srun
    /// passes through; these are stray stdout lines).
    pub other: Vec<(u32, String)>,
    pub status: ExitStatus,
    /// The step was cancelled (`cancel` returned true) before it ended.
    pub cancelled: bool,
}

/// Runs the step and collects results. `cancel` is polled every 100 ms; once it returns true
/// srun gets SIGUSR2, which it forwards to every task as it is (SIGTERM would make srun kill
/// the step outright): workers stop, report what they measured, and srun ends, so an
/// interrupted run still merges what came back.
pub fn run(
    srun: &Srun,
    cancel: impl Fn() -> bool + Send + 'static,
) -> Result<SrunOutcome, ClusterError> {
    let mut child = Command::new(&srun.program)
        .args(srun.args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|source| ClusterError::Spawn {
            program: srun.program.display().to_string(),
            source,
        })?;
    let pid = child.id() as libc::pid_t;
    let finished = Arc::new(AtomicBool::new(false));
    let cancelled = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (finished, cancelled) = (finished.clone(), cancelled.clone());
        std::thread::spawn(move || {
            while !finished.load(Ordering::Relaxed) {
                if !cancelled.load(Ordering::Relaxed) && cancel() {
                    cancelled.store(true, Ordering::Relaxed);
                    // SAFETY: kill(2) on our own child, not reaped yet: the reader reaps
                    // it only after stopping this thread, so the PID cannot be reused.
                    unsafe {
                        libc::kill(pid, libc::SIGUSR2);
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let mut collector = Collector::new();
    let stdout = child.stdout.take().expect("piped");
    for line in BufReader::new(stdout).lines() {
        match line {
            Ok(line) => collector.feed_labelled(&line),
            Err(_) => break,
        }
    }
    // Stop the watcher before reaping, so it never signals a PID that was reused.
    finished.store(true, Ordering::Relaxed);
    let _ = watcher.join();
    let status = child.wait().map_err(|source| ClusterError::Spawn {
        program: srun.program.display().to_string(),
        source,
    })?;
    let (results, other) = collector.finish();
    Ok(SrunOutcome {
        results,
        other,
        status,
        cancelled: cancelled.load(Ordering::Relaxed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srun_line_spreads_tasks_and_kills_the_step_on_a_bad_exit() {
        let s = Srun {
            program: "srun".into(),
            tasks: 8,
            worker: vec!["/usr/bin/loadmark".into(), "worker".into()],
            extra: vec!["--partition=load".into()],
        };
        let args: Vec<String> = s
            .args()
            .iter()
            .map(|a| a.to_string_lossy().into())
            .collect();
        assert_eq!(
            args,
            [
                "--ntasks=8",
                "--spread-job",
                "--kill-on-bad-exit=1",
                "--label",
                "--job-name=loadmark",
                "--partition=load",
                "/usr/bin/loadmark",
                "worker"
            ]
        );
    }
}
