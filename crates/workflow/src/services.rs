//! The plan's services while its steps run: started before the first step that needs them
//! and stopped after the last (the schedule is `loadmark_plan::ServicePlan`'s), watched
//! around every step, monitored like targets, and stopped in reverse order whatever happens
//! (an error, Ctrl-C: the guard's drop stops what still runs).

use std::path::Path;
use std::time::Duration;

use loadmark_launch::{launch, LaunchError, Launched};
use loadmark_monitor::{Monitor, MonitorError, ProcessSeries};
use loadmark_plan::ServicePlan;
use loadmark_report::{ServerUsage, ServiceUsage, UsageSample};

use crate::launch::{launch_spec, LaunchSpecError};
use crate::{Event, Observer};

/// How many of a dead service's log lines its note quotes.
const NOTE_LOG_LINES: usize = 5;

/// Why a service could not be started, monitored or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The service's launch block is wrong (see [`LaunchSpecError`]).
    #[error(transparent)]
    Spec(#[from] LaunchSpecError),
    /// The service did not start or become ready: its log's last lines say why.
    #[error("step {step} needs service {name} running")]
    Start {
        step: usize,
        name: String,
        #[source]
        source: Box<LaunchError>,
    },
    /// The service's process could not be watched (it ended, or /proc is not readable).
    #[error("monitoring service {name} (pid {pid})")]
    Monitor {
        name: String,
        pid: u32,
        #[source]
        source: MonitorError,
    },
    /// The service could not be stopped cleanly.
    #[error("stopping service {name}")]
    Stop {
        name: String,
        #[source]
        source: Box<LaunchError>,
    },
}

impl ServiceError {
    /// Only a launch block that is wrong is the plan's to fix.
    pub fn is_usage(&self) -> bool {
        matches!(self, ServiceError::Spec(_))
    }
}

/// A service that is not running when a step needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    pub fn start_before(
        &mut self,
        index: usize,
        step_number: usize,
        log_dir: &Path,
        exe: Option<&Path>,
        observer: &mut dyn Observer,
    ) -> Result<(), ServiceError> {
        for &s in &self.plan.start_before[index] {
            let service = &self.plan.services[s];
            observer.event(&Event::ServiceStarting {
                name: &service.name,
                command: &service.launch.command,
            });
            let spec = launch_spec(&service.name, &service.launch, log_dir, exe)?;
            let launched = launch(&spec).map_err(|source| ServiceError::Start {
                step: step_number,
                name: service.name.clone(),
                source: Box::new(source),
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
                let gone = Gone {
                    what: format!("service {name} (pid {pid}) {how}"),
                    last_words: last_words(&log, &lines),
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
    ) -> Result<Vec<(String, Monitor)>, ServiceError> {
        let Some(interval) = interval else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for &s in &self.plan.needed[index] {
            if let Some(server) = &self.running[s] {
                let name = self.plan.services[s].name.clone();
                let pid = server.pid();
                match Monitor::start(pid, interval) {
                    Ok(m) => out.push((name, m)),
                    Err(source) => return Err(ServiceError::Monitor { name, pid, source }),
                }
            }
        }
        Ok(out)
    }

    /// Stops the services step `index` is the last to need, dependents first.
    pub fn stop_after(
        &mut self,
        index: usize,
        observer: &mut dyn Observer,
    ) -> Result<(), ServiceError> {
        for &s in &self.plan.stop_after[index] {
            self.stop(s, observer)?;
        }
        Ok(())
    }

    /// Stops whatever still runs, last started first.
    pub fn stop_all(&mut self, observer: &mut dyn Observer) -> Result<(), ServiceError> {
        for s in (0..self.running.len()).rev() {
            self.stop(s, observer)?;
        }
        Ok(())
    }

    fn stop(&mut self, s: usize, observer: &mut dyn Observer) -> Result<(), ServiceError> {
        if let Some(server) = self.running[s].take() {
            let name = &self.plan.services[s].name;
            observer.event(&Event::ServiceStopping { name });
            server.stop().map_err(|source| ServiceError::Stop {
                name: name.clone(),
                source: Box::new(source),
            })?;
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

/// What a dead service's note quotes of its log.
fn last_words(log: &str, lines: &[String]) -> String {
    if lines.is_empty() {
        format!("its log ({log}) is empty")
    } else {
        format!("the last lines of {log}: {}", lines.join(" / "))
    }
}

/// The usage figures of the services monitored during a step.
pub fn usages(monitors: Vec<(String, Monitor)>) -> Vec<ServiceUsage> {
    monitors
        .into_iter()
        .filter_map(|(name, m)| {
            let series = m.stop();
            usage(&series).map(|usage| ServiceUsage { name, usage })
        })
        .collect()
}

/// A monitored process's series as the report's usage figures (none without a sample).
pub fn usage(series: &ProcessSeries) -> Option<ServerUsage> {
    let s = series.summary()?;
    Some(ServerUsage {
        pid: series.pid,
        rss_start_bytes: s.rss_start_bytes,
        rss_peak_bytes: s.rss_peak_bytes,
        rss_end_bytes: s.rss_end_bytes,
        cpu_mean_percent: s.cpu_mean_percent,
        cpu_peak_percent: s.cpu_peak_percent,
        threads_peak: s.threads_peak,
        fds_peak: s.fds_peak,
        samples: series
            .samples
            .iter()
            .map(|x| UsageSample {
                at_ms: x.at_ms,
                cpu_percent: x.cpu_percent,
                rss_bytes: x.rss_bytes,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_services_note_quotes_its_log_or_says_it_is_empty() {
        assert_eq!(
            last_words("out/logs/cache.log", &["up".into(), "out of memory".into()]),
            "the last lines of out/logs/cache.log: up / out of memory"
        );
        assert_eq!(
            last_words("out/logs/cache.log", &[]),
            "its log (out/logs/cache.log) is empty"
        );
    }

    #[test]
    fn a_series_without_samples_has_no_usage() {
        let series = ProcessSeries {
            pid: 7,
            name: "cache".into(),
            interval_ms: 100,
            samples: Vec::new(),
            stopped_early: None,
        };
        assert!(usage(&series).is_none());
    }
}
