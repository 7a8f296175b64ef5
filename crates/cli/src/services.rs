//! The plan's services while `loadmark bench` runs: started before the first step that needs
//! them and stopped after the last (the schedule is `loadmark_plan::ServicePlan`'s), watched
//! around every step, monitored like targets, and stopped in reverse order whatever happens
//! (an error, Ctrl-C: the guard's drop stops what still runs).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use loadmark_launch::{launch, Launched};
use loadmark_monitor::Monitor;
use loadmark_plan::ServicePlan;
use loadmark_report::ServiceUsage;

/// How many of a dead service's log lines its note quotes.
const NOTE_LOG_LINES: usize = 5;

/// A service that is not running when a step needs it.
#[derive(Debug, Clone)]
pub struct Gone {
    /// e.g. "service cache (pid 42) exited with status 3"
    pub what: String,
    /// e.g. "the last lines of out/logs/cache.log: up / out of memory"
    pub last_words: String,
}

/// The services that are running, and what became of those that died.
pub struct Services<'a> {
    plan: &'a ServicePlan,
    /// By index into `plan.services`.
    running: Vec<Option<Launched>>,
    /// Why a service that was started is gone, by index: what happened, and its last words.
    dead: Vec<Option<Gone>>,
}

impl<'a> Services<'a> {
    pub fn new(plan: &'a ServicePlan) -> Services<'a> {
        let n = plan.services.len();
        Services {
            plan,
            running: (0..n).map(|_| None).collect(),
            dead: vec![None; n],
        }
    }

    /// Starts the services step `index` (0-based) is the first to need, in order.
    pub fn start_before(&mut self, index: usize, step_number: usize, log_dir: &Path) -> Result<()> {
        for &s in &self.plan.start_before[index] {
            let service = &self.plan.services[s];
            eprintln!(
                "loadmark: starting service {}: {}",
                service.name, service.launch.command
            );
            let spec = crate::bench::launch_spec(&service.name, &service.launch, log_dir)?;
            let launched = launch(&spec).with_context(|| {
                format!("step {step_number} needs service {} running", service.name)
            })?;
            self.running[s] = Some(launched);
        }
        Ok(())
    }

    /// Notes for the services step `index` needs that are not running (each dead service is
    /// reaped here, and its note remembered for later steps).
    pub fn check(&mut self, index: usize) -> Vec<Gone> {
        let mut notes = Vec::new();
        for &s in &self.plan.needed[index] {
            if let Some(server) = self.running[s].take_if(|l| !l.is_running()) {
                let name = &self.plan.services[s].name;
                let pid = server.pid();
                let lines = server.last_log_lines(NOTE_LOG_LINES);
                let log = server.log_path().display().to_string();
                let how = match server.stop() {
                    Ok(info) => match (info.exit, info.signal) {
                        (Some(code), _) => format!("exited with status {code}"),
                        (None, Some(sig)) => format!("was ended by signal {sig}"),
                        _ => "exited".to_string(),
                    },
                    Err(e) => format!("exited ({e})"),
                };
                let quoted = if lines.is_empty() {
                    format!("its log ({log}) is empty")
                } else {
                    format!("the last lines of {log}: {}", lines.join(" / "))
                };
                let gone = Gone {
                    what: format!("service {name} (pid {pid}) {how}"),
                    last_words: quoted,
                };
                self.dead[s] = Some(gone.clone());
                notes.push(gone);
            } else if self.running[s].is_none() {
                let name = &self.plan.services[s].name;
                notes.push(self.dead[s].clone().unwrap_or_else(|| Gone {
                    what: format!("service {name} is not running"),
                    last_words: String::new(),
                }));
            }
        }
        notes
    }

    /// Monitors every service step `index` needs that runs.
    pub fn monitor(
        &self,
        index: usize,
        interval: Option<Duration>,
    ) -> Result<Vec<(String, Monitor)>> {
        let Some(interval) = interval else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for &s in &self.plan.needed[index] {
            if let Some(server) = &self.running[s] {
                let name = self.plan.services[s].name.clone();
                let pid = server.pid();
                let m = Monitor::start(pid, interval)
                    .with_context(|| format!("monitoring service {name} (pid {pid})"))?;
                out.push((name, m));
            }
        }
        Ok(out)
    }

    /// Stops the services step `index` is the last to need, dependents first.
    pub fn stop_after(&mut self, index: usize) -> Result<()> {
        for &s in &self.plan.stop_after[index] {
            self.stop(s)?;
        }
        Ok(())
    }

    /// Stops whatever still runs, last started first.
    pub fn stop_all(&mut self) -> Result<()> {
        for s in (0..self.running.len()).rev() {
            self.stop(s)?;
        }
        Ok(())
    }

    fn stop(&mut self, s: usize) -> Result<()> {
        if let Some(server) = self.running[s].take() {
            let name = &self.plan.services[s].name;
            eprintln!("loadmark: stopping service {name}");
            server
                .stop()
                .with_context(|| format!("stopping service {name}"))?;
        }
        Ok(())
    }
}

impl Drop for Services<'_> {
    /// On an error or a panic, services still stop in reverse start order.
    fn drop(&mut self) {
        while let Some(server) = self.running.iter_mut().rev().find_map(Option::take) {
            let _ = server.stop();
        }
    }
}

/// The usage figures of the services monitored during a step.
pub fn usages(monitors: Vec<(String, Monitor)>) -> Vec<ServiceUsage> {
    monitors
        .into_iter()
        .filter_map(|(name, m)| {
            let series = m.stop();
            crate::bench::usage(&series).map(|usage| ServiceUsage { name, usage })
        })
        .collect()
}
