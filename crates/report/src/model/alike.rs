//! Whether two reports measure the same thing, so that adding (`merge`) or setting them side
//! by side (`compare`) means something. The CLI refuses what differs unless `--force`, and a
//! forced result says in its own output what was forced.
//!
//! Part of the model: imports `model` siblings and `units` only, never a renderer.

use loadmark_plan::{Load, Plan};

use super::report::Report;

/// What the reports are about to be used for: merging needs the same target and request;
/// comparing needs the same kind of measurement (protocol and load model), since comparing
/// two servers, or one endpoint against another, is what it is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Merge,
    Compare,
}

fn protocol(p: &Plan) -> &'static str {
    if p.websocket.is_some() {
        "WebSocket"
    } else {
        "HTTP"
    }
}

fn load_model(p: &Plan) -> &'static str {
    match p.load {
        Load::Closed { .. } => "closed loop (-c)",
        Load::Ramp { .. } => "closed loop with a connection ramp (--stages)",
        Load::Open { .. } => "open loop (-R/--stages)",
    }
}

/// Every way `b` differs from `a` that makes the pair meaningless for `purpose`, in words
/// naming both sides (`names` are how the user knows the reports, e.g. file names). Empty
/// when they are alike.
pub fn differences(purpose: Purpose, names: (&str, &str), a: &Report, b: &Report) -> Vec<String> {
    let (pa, pb) = (&a.plan, &b.plan);
    let (na, nb) = names;
    let mut out = Vec::new();
    let mut differ = |what: &str, x: String, y: String| {
        if x != y {
            out.push(format!("{what}: {na} has {x}, {nb} has {y}"));
        }
    };
    differ("protocol", protocol(pa).into(), protocol(pb).into());
    differ("load model", load_model(pa).into(), load_model(pb).into());
    if purpose == Purpose::Merge {
        if pa.websocket.is_none() && pb.websocket.is_none() {
            differ(
                "method",
                pa.request.method.clone(),
                pb.request.method.clone(),
            );
        }
        differ(
            "URL",
            pa.request.url.to_string(),
            pb.request.url.to_string(),
        );
        differ(
            "latency definition",
            a.run.latency_definition.clone(),
            b.run.latency_definition.clone(),
        );
    }
    out
}
