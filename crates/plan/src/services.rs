//! The plan's `services:` (backends, databases, caches that stay up while the steps that
//! need them run) and `depends_on`: which steps need which services, and the pure start/stop
//! schedule the runner follows and `bench --check` prints.
//!
//! The rule: a step needs the services its target depends on, and what those depend on; a
//! service nothing depends on is needed by every step. A service starts before the first
//! step that needs it and stops after the last one, so a service another depends on is up
//! for at least as long as its dependent (its set of steps contains the dependent's). At the
//! same point, services start in dependency order and stop in the reverse order.

use std::path::Path;
use std::time::Duration;

use indexmap::IndexMap;

use crate::file::{LaunchFile, PlanFile, ReadyFile, ServiceFile};
use crate::file_steps::{Launch, PlanFileError, Ready};
use crate::target::Target;

/// A service, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Service {
    pub name: String,
    pub launch: Launch,
    /// The services it depends on, by name.
    pub depends_on: Vec<String>,
}

/// When each service starts and stops, by step index (0-based, in step order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServicePlan {
    /// Every service, each after the ones it depends on (start order).
    pub services: Vec<Service>,
    /// Per step: indices into `services` the step needs, in start order.
    pub needed: Vec<Vec<usize>>,
    /// Per step: the services to start before it, in start order.
    pub start_before: Vec<Vec<usize>>,
    /// Per step: the services to stop after it, dependents first.
    pub stop_after: Vec<Vec<usize>>,
}

impl ServicePlan {
    /// The schedule as lines for `bench --check`: `start backend`, `step 1`, `stop backend`.
    pub fn describe(&self, steps: usize) -> Vec<String> {
        let mut out = Vec::new();
        for step in 0..steps {
            for &s in self.start_before.get(step).into_iter().flatten() {
                out.push(format!("start service {}", self.services[s].name));
            }
            out.push(format!("step {}", step + 1));
            for &s in self.stop_after.get(step).into_iter().flatten() {
                out.push(format!("stop service {}", self.services[s].name));
            }
        }
        out
    }
}

/// Locates an error at some keys of the plan text.
pub(crate) type Err<'a> = dyn Fn(&[&str], String) -> PlanFileError + 'a;
/// Reads an optional duration at some keys, or says where it is wrong.
pub(crate) type Dur<'a> =
    dyn Fn(&[&str], &Option<String>) -> Result<Option<Duration>, PlanFileError> + 'a;

/// The launch fields a target's `launch` and a service share.
pub(crate) struct LaunchFields<'a> {
    pub command: &'a str,
    pub env: &'a IndexMap<String, String>,
    pub cwd: &'a Option<String>,
    pub ready: &'a ReadyFile,
    pub ready_timeout: &'a Option<String>,
    pub stop_grace: &'a Option<String>,
}

impl<'a> From<&'a LaunchFile> for LaunchFields<'a> {
    fn from(l: &'a LaunchFile) -> Self {
        LaunchFields {
            command: &l.command,
            env: &l.env,
            cwd: &l.cwd,
            ready: &l.ready,
            ready_timeout: &l.ready_timeout,
            stop_grace: &l.stop_grace,
        }
    }
}

impl<'a> From<&'a ServiceFile> for LaunchFields<'a> {
    fn from(l: &'a ServiceFile) -> Self {
        LaunchFields {
            command: &l.command,
            env: &l.env,
            cwd: &l.cwd,
            ready: &l.ready,
            ready_timeout: &l.ready_timeout,
            stop_grace: &l.stop_grace,
        }
    }
}

/// Resolves launch fields found at `at` (e.g. `["targets", "api", "launch"]`); `url` is the
/// target's URL whose port readiness defaults to, `None` for a service (which must say).
pub(crate) fn resolve_launch(
    l: LaunchFields<'_>,
    at: &[&str],
    url: Option<&str>,
    base: &Path,
    err: &Err<'_>,
    duration: &Dur<'_>,
) -> Result<Launch, PlanFileError> {
    let keys = |k: &'static str| -> Vec<&str> { at.iter().copied().chain([k]).collect() };
    let dotted = at.join(".");
    let ready = match l.ready {
        ReadyFile {
            port: Some(p),
            http: None,
            delay: None,
        } => Ready::Port(p.clone()),
        ReadyFile {
            port: None,
            http: Some(h),
            delay: None,
        } => Ready::Http(h.clone()),
        ReadyFile {
            port: None,
            http: None,
            delay: Some(d),
        } => Ready::Delay(duration(&keys("ready"), &Some(d.clone()))?.unwrap_or_default()),
        ReadyFile {
            port: None,
            http: None,
            delay: None,
        } => match url {
            Some(url) => {
                // Only the host and port matter here: either kind of URL will do.
                let t = Target::parse(url)
                    .or_else(|e| Target::parse_ws(url).map_err(|_| e))
                    .map_err(|e| err(&at[..2], format!("{}.url: {e}", at[..2].join("."))))?;
                Ready::Port(format!("{}:{}", t.host(), t.port()))
            }
            None => {
                return Err(err(
                    at,
                    format!("{dotted}.ready: a service has no URL to wait for; give one of port (host:port), http (a URL answering 2xx) or delay"),
                ))
            }
        },
        _ => {
            return Err(err(
                &keys("ready"),
                format!("{dotted}.ready: give one of port, http or delay"),
            ))
        }
    };
    Ok(Launch {
        command: l.command.to_string(),
        env: l.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        cwd: l.cwd.as_ref().map(|c| base.join(c)),
        ready,
        ready_timeout: duration(&keys("ready_timeout"), l.ready_timeout)?
            .unwrap_or(Duration::from_secs(30)),
        stop_grace: duration(&keys("stop_grace"), l.stop_grace)?.unwrap_or(Duration::from_secs(5)),
    })
}

/// Checks `services` and every `depends_on`, orders the services, and schedules them over
/// `step_targets` (each step's target name, in step order).
pub(crate) fn plan_services(
    file: &PlanFile,
    step_targets: &[&str],
    base: &Path,
    err: &Err<'_>,
    duration: &Dur<'_>,
) -> Result<ServicePlan, PlanFileError> {
    let names: Vec<&str> = file.services.keys().map(String::as_str).collect();
    let index = |name: &str| names.iter().position(|n| *n == name);
    let check = |section: &str, owner: &str, deps: &[String]| -> Result<Vec<usize>, _> {
        deps.iter()
            .map(|d| match index(d) {
                Some(i) => Ok(i),
                None if file.targets.contains_key(d) => Err(err(
                    &[section, owner, "depends_on"],
                    format!("{section}.{owner}.depends_on: {d:?} is a target; targets run one at a time, so what others need running must be a service (move it under `services:`)"),
                )),
                None => Err(err(
                    &[section, owner, "depends_on"],
                    format!(
                        "{section}.{owner}.depends_on: no service named {d:?}; {}",
                        if names.is_empty() {
                            "the plan has no `services:`".to_string()
                        } else {
                            format!("the services are {}", names.join(", "))
                        }
                    ),
                )),
            })
            .collect()
    };
    let mut deps = Vec::new();
    for (name, s) in &file.services {
        if file.targets.contains_key(name) {
            // They would share logs/NAME.log, and `depends_on` could not tell them apart.
            return Err(err(
                &["services", name],
                format!("services.{name}: a target has this name too; give the service another"),
            ));
        }
        deps.push(check("services", name, &s.depends_on)?);
    }
    // Start order: depth-first, dependencies first, in file order otherwise; a cycle is
    // named with its path.
    let mut order = Vec::new();
    let mut state = vec![0u8; names.len()]; // 0 new, 1 on the path, 2 done
    fn visit(
        i: usize,
        deps: &[Vec<usize>],
        state: &mut [u8],
        order: &mut Vec<usize>,
        path: &mut Vec<usize>,
    ) -> Result<(), Vec<usize>> {
        match state[i] {
            2 => return Ok(()),
            1 => {
                let from = path.iter().position(|&p| p == i).unwrap_or(0);
                let mut cycle = path[from..].to_vec();
                cycle.push(i);
                return Err(cycle);
            }
            _ => {}
        }
        state[i] = 1;
        path.push(i);
        for &d in &deps[i] {
            visit(d, deps, state, order, path)?;
        }
        path.pop();
        state[i] = 2;
        order.push(i);
        Ok(())
    }
    for i in 0..names.len() {
        visit(i, &deps, &mut state, &mut order, &mut Vec::new()).map_err(|cycle| {
            let first = names[cycle[0]];
            let path: Vec<&str> = cycle.iter().map(|&c| names[c]).collect();
            err(
                &["services", first, "depends_on"],
                format!(
                    "services: depends_on goes round in a circle: {}",
                    path.join(" -> ")
                ),
            )
        })?;
    }
    let mut services = Vec::new();
    for &i in &order {
        let (name, s) = file.services.get_index(i).expect("index from the map");
        let launch = resolve_launch(s.into(), &["services", name], None, base, err, duration)?;
        services.push(Service {
            name: name.clone(),
            launch,
            depends_on: s.depends_on.clone(),
        });
    }
    // Positions in start order.
    let pos = |i: usize| {
        order
            .iter()
            .position(|&o| o == i)
            .expect("every service is ordered")
    };
    let closure = |roots: Vec<usize>| -> Vec<usize> {
        let mut seen = vec![false; names.len()];
        let mut stack = roots;
        while let Some(i) = stack.pop() {
            if !std::mem::replace(&mut seen[i], true) {
                stack.extend(&deps[i]);
            }
        }
        let mut out: Vec<usize> = (0..names.len()).filter(|&i| seen[i]).map(pos).collect();
        out.sort_unstable();
        out
    };
    let depended: Vec<bool> = (0..names.len())
        .map(|i| {
            deps.iter().any(|d| d.contains(&i))
                || file
                    .targets
                    .values()
                    .any(|t| t.depends_on.iter().any(|d| index(d) == Some(i)))
        })
        .collect();
    let everywhere: Vec<usize> = (0..names.len()).filter(|&i| !depended[i]).collect();
    let mut by_target = IndexMap::new();
    for (name, t) in &file.targets {
        let mut roots = check("targets", name, &t.depends_on)?;
        roots.extend(&everywhere);
        by_target.insert(name.as_str(), closure(roots));
    }
    let needed: Vec<Vec<usize>> = step_targets
        .iter()
        .map(|t| by_target.get(t).cloned().unwrap_or_default())
        .collect();
    let n = step_targets.len();
    let mut start_before = vec![Vec::new(); n];
    let mut stop_after = vec![Vec::new(); n];
    for s in 0..services.len() {
        let steps: Vec<usize> = (0..n).filter(|&k| needed[k].contains(&s)).collect();
        if let (Some(&first), Some(&last)) = (steps.first(), steps.last()) {
            start_before[first].push(s);
            stop_after[last].push(s);
        }
    }
    for list in &mut stop_after {
        list.reverse();
    }
    Ok(ServicePlan {
        services,
        needed,
        start_before,
        stop_after,
    })
}

#[cfg(test)]
#[path = "services_tests.rs"]
mod tests;
