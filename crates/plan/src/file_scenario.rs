//! The plan file's scenario words checked: the `scenario:` section compiled once so that its
//! errors name the step's line, the protocols its steps may speak over the targets' schemes,
//! and how the data file's rows are assigned.

use std::path::Path;

use crate::file::PlanFile;
use crate::file_steps::PlanFileError;

/// The `scenario:` section (issue 17), compiled once to find its errors (each names the step
/// by its line); `load`'s scenario words are refused without one.
pub(crate) fn scenario_of(
    file: &PlanFile,
    text: &str,
    path: &Path,
    columns: &[String],
    err: &dyn Fn(&[&str], String) -> PlanFileError,
) -> Result<Option<Vec<crate::scenario::ScenarioStepFile>>, PlanFileError> {
    let load = &file.load;
    if !file.scenarios.is_empty() {
        if file.scenario.is_some() {
            return Err(err(
                &["scenarios"],
                "give `scenario:` (one journey) or `scenarios:` (several, by name), not both"
                    .into(),
            ));
        }
        return Ok(None);
    }
    let Some(steps) = &file.scenario else {
        for (key, given) in [
            ("users", load.users.is_some()),
            ("iterations", load.iterations.is_some()),
            (
                "iterations_per_second",
                load.iterations_per_second.is_some(),
            ),
        ] {
            if given {
                return Err(err(
                    &["load", key],
                    format!("load.{key} is a scenario's word; without `scenario:` use connections, requests or rate"),
                ));
            }
        }
        if load.cookies.is_some() {
            return Err(err(
                &["load", "cookies"],
                "load.cookies: a cookie jar belongs to a scenario's virtual users; this plan has no `scenario:`".into(),
            ));
        }
        return Ok(None);
    };
    for (key, a, b) in [
        ("users", load.users.is_some(), load.connections.is_some()),
        (
            "iterations",
            load.iterations.is_some(),
            load.requests.is_some(),
        ),
        (
            "iterations_per_second",
            load.iterations_per_second.is_some(),
            load.rate.is_some(),
        ),
    ] {
        if a && b {
            return Err(err(
                &["load", key],
                format!(
                    "load.{key}: give it or its other name (connections, requests, rate), not both"
                ),
            ));
        }
    }
    refuse_beside_steps(file, err)?;
    if load.stages.is_some() && load.iterations.is_some() {
        return Err(err(
            &["load", "iterations"],
            "load.iterations: with `stages` the users ramp for the stages' time; give one or the other".into(),
        ));
    }
    crate::scenario::Scenario::compile(steps, columns).map_err(|e| {
        let (line, column) = crate::scenario::locate_step(text, e.step);
        PlanFileError {
            file: path.display().to_string(),
            line,
            column,
            message: e.message,
        }
    })?;
    one_protocol_over_tls(file, steps, &|i| {
        let (line, column) = crate::scenario::locate_step(text, i);
        PlanFileError {
            file: path.display().to_string(),
            line,
            column,
            message: String::new(),
        }
    })?;
    Ok(Some(steps.clone()))
}

/// What a plan with journeys cannot also have: a WebSocket section, `requests`, plan-wide
/// checks, pipelining.
pub(crate) fn refuse_beside_steps(
    file: &PlanFile,
    err: &dyn Fn(&[&str], String) -> PlanFileError,
) -> Result<(), PlanFileError> {
    let refuse = |keys: &[&str], what: &str| {
        Err(err(
            keys,
            format!("a scenario plan cannot have {what} (not supported with scenarios)"),
        ))
    };
    if file.websocket.is_some() {
        return refuse(&["websocket"], "`websocket`");
    }
    if !file.requests.is_empty() {
        return refuse(&["requests"], "`requests` (its steps say what to send)");
    }
    if !file.checks.is_empty() {
        return refuse(
            &["checks"],
            "plan-wide `checks` (give each step its `check:`)",
        );
    }
    if file.load.pipeline.is_some() {
        return refuse(
            &["load", "pipeline"],
            "pipelining yet (a user's steps go one at a time; use `load.http2` or a step's `protocol: h2`)",
        );
    }
    Ok(())
}

/// Over TLS the server chooses the protocol per connection (ALPN), from what the run
/// offers: a journey there speaks the plan's protocol throughout. `at(i)` locates step `i`.
pub(crate) fn one_protocol_over_tls(
    file: &PlanFile,
    steps: &[crate::scenario::ScenarioStepFile],
    at: &dyn Fn(usize) -> PlanFileError,
) -> Result<(), PlanFileError> {
    let plan_h2 = file.load.http2 == Some(true);
    let tls = file.targets.values().any(|t| t.url.starts_with("https://"));
    // A gRPC call is HTTP/2.
    let protocol = |s: &crate::scenario::ScenarioStepFile| {
        (s.request.as_ref())
            .and_then(|r| r.protocol)
            .or(s.grpc.as_ref().map(|_| crate::scenario::StepProtocol::H2))
    };
    let h3 = steps
        .iter()
        .position(|s| protocol(s) == Some(crate::scenario::StepProtocol::H3));
    if let (false, Some(i)) = (tls, h3) {
        return Err(PlanFileError {
            message: format!(
                "scenario step {}: `protocol: h3` needs an https:// target (HTTP/3 runs over \
                 QUIC, always with TLS 1.3)",
                i + 1
            ),
            ..at(i)
        });
    }
    let other = steps.iter().position(|s| {
        protocol(s).is_some_and(|p| match p {
            crate::scenario::StepProtocol::H2 => !plan_h2,
            crate::scenario::StepProtocol::H1 => plan_h2,
            // QUIC is a connection of its own, with its own ALPN: it mixes with either.
            crate::scenario::StepProtocol::H3 => false,
            // A WebSocket upgrade is HTTP/1.1: it needs the server to choose that.
            crate::scenario::StepProtocol::Ws => plan_h2,
        })
    });
    let (true, Some(i)) = (tls, other) else {
        return Ok(());
    };
    let plan = if plan_h2 { "h2" } else { "h1" };
    if steps[i].grpc.is_some() {
        return Err(PlanFileError {
            message: format!(
                "scenario step {}: a `grpc:` call speaks HTTP/2, and over https:// the server                  chooses the protocol per connection (ALPN) as the plan's ({plan}); set                  `load.http2: true` (the plan's HTTP steps then speak HTTP/2 too)",
                i + 1
            ),
            ..at(i)
        });
    }
    Err(PlanFileError {
        message: format!(
            "scenario step {}: `protocol` differs from the plan's ({plan}); over https:// the \
             server chooses the protocol per connection (ALPN), so a journey speaks one: \
             set `load.http2` and drop the step's `protocol` (steps may mix over http://; \
             `ws` steps need the plan's h1)",
            i + 1
        ),
        ..at(i)
    })
}

/// How the data file's rows are assigned: `per` as written, else per request (a plain plan)
/// or per user (a scenario); per user and per iteration need a scenario, and a scenario
/// has no "next request" to give a row to.
pub(crate) fn data_per(
    file: &PlanFile,
    err: &dyn Fn(&[&str], String) -> PlanFileError,
) -> Result<crate::plan::DataPer, PlanFileError> {
    use crate::plan::DataPer;
    let Some(data) = &file.data else {
        return Ok(DataPer::Request);
    };
    let scenario = file.scenario.is_some() || !file.scenarios.is_empty();
    match (data.per(), scenario) {
        (None, false) => Ok(DataPer::Request),
        (None, true) => Ok(DataPer::User),
        (Some(DataPer::Request), false) | (Some(DataPer::User | DataPer::Iteration), true) => {
            Ok(data.per().expect("matched"))
        }
        (Some(DataPer::Request), true) => Err(err(
            &["data", "per"],
            "data.per: a scenario takes rows per `user` or per `iteration`, not per request".into(),
        )),
        (Some(per), false) => Err(err(
            &["data", "per"],
            format!(
                "data.per: {per:?} rows need a `scenario:` (its virtual users and iterations); without one rows go per `request`"
            ),
        )),
    }
}
