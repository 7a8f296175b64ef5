//! What a scenario step does with its response, whatever protocol carried it: recorded into
//! the run's figures, the step's and its checks', then its extractions into the user's
//! variables. The response comes in HTTP/1.1's form (the HTTP/2 link writes its head so).

use loadmark_metrics::{Sample, StepOutcome};
use loadmark_plan::{Extract, RenderContext};

use super::{Me, ScenarioShared, StepRun};
use crate::checks::{Parsed, View, CAPTURE_LIMIT};
use crate::connection::Shared;
use crate::transport::Transport;

/// Records a response (the run's figures, the step's, its checks) and extracts the step's
/// variables; an error says which extraction failed and what the response held.
/// `response` is what was kept of it (empty unless `run.capture`) and whether it was longer.
pub(super) fn settle<T: Transport>(
    shared: &Shared<T>,
    (sc, run): (&ScenarioShared, &StepRun),
    user: &mut Me,
    sample: &Sample,
    seq: u64,
    (raw, overflow): (&[u8], bool),
) -> Result<(), String> {
    crate::settle::response(&shared.recorder, sample);
    let mut rec = shared.recorder.borrow_mut();
    let latency = sample
        .ended
        .saturating_duration_since(sample.scheduled.unwrap_or(sample.started));
    rec.scenario_in(sample.ended, sc.slot()).record_step(
        run.step.index,
        &sc.names,
        StepOutcome::Response {
            status: sample.status,
            latency_us: u64::try_from(latency.as_micros()).unwrap_or(u64::MAX),
        },
    );
    if run.checks.is_none() && run.step.extract.is_empty() && !sc.cookies {
        return Ok(());
    }
    // Status and latency checks read no bytes: nothing was kept, nothing is parsed.
    let view = View {
        status: sample.status,
        latency,
        raw,
        overflow,
        // A WebSocket reply is all body: no status line, no headers.
        message: run.protocol == loadmark_plan::StepProtocol::Ws,
    };
    let parsed = if run.capture {
        Parsed::of(&view)
    } else {
        Parsed::default()
    };
    if sc.cookies {
        let now = std::time::SystemTime::now();
        for (_, value) in parsed
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
        {
            user.jar.store(value, now);
        }
    }
    if let Some(checks) = &run.checks {
        checks.record_step(
            &view,
            &parsed,
            sample.ended,
            &mut rec,
            (run.step.index, &sc.names, sc.slot()),
            &run.global_names,
        );
    }
    drop(rec);
    if run.step.extract.is_empty() {
        return Ok(());
    }
    if overflow {
        return Err(format!(
            "status {}; the response is longer than the {} KiB extraction buffer",
            sample.status,
            CAPTURE_LIMIT / 1024
        ));
    }
    let mut json: Option<Option<serde_json::Value>> = None;
    for (k, (var, how, pointer)) in run.step.extract.iter().enumerate() {
        let value = extract(
            how,
            pointer.as_ref(),
            &run.regexes[k],
            &parsed,
            &mut json,
            (&mut user.rng, &user.vars, sc.rows.get(user.row)),
            seq,
        );
        match value {
            Some(v) if !v.bytes().any(|b| b < 0x20 || b == 0x7f) => user.vars[*var] = v,
            found => {
                let body = parsed.body.as_deref().unwrap_or(&[]);
                let why = if found.is_some() {
                    "holds a control character (not sent in a request)"
                } else {
                    "found nothing"
                };
                return Err(format!(
                    "{how} {why}; status {}, body: {}",
                    sample.status,
                    String::from_utf8_lossy(&body[..body.len().min(120)])
                ));
            }
        }
    }
    Ok(())
}

fn extract(
    how: &Extract,
    pointer: Option<&loadmark_plan::Template>,
    regex: &Option<regex::Regex>,
    parsed: &Parsed<'_>,
    json: &mut Option<Option<serde_json::Value>>,
    (rng, vars, row): (&mut u64, &[String], Option<&Vec<String>>),
    seq: u64,
) -> Option<String> {
    let body = parsed.body.as_deref()?;
    match how {
        Extract::Json(_) => {
            let mut path = Vec::new();
            let template = pointer?;
            template.render_with_vars(
                &mut RenderContext {
                    rng,
                    seq,
                    row: row.map_or(&[], Vec::as_slice),
                    segment: 0,
                },
                vars,
                &mut path,
            );
            let doc = json
                .get_or_insert_with(|| serde_json::from_slice(body).ok())
                .as_ref()?;
            match doc.pointer(std::str::from_utf8(&path).ok()?)? {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Null => None,
                other => Some(other.to_string()),
            }
        }
        Extract::Regex(_) => {
            let text = std::str::from_utf8(body).ok()?;
            let caps = regex.as_ref()?.captures(text)?;
            caps.get(1)
                .or_else(|| caps.get(0))
                .map(|m| m.as_str().to_string())
        }
        Extract::Header(name) => parsed
            .header(name)
            .and_then(|v| std::str::from_utf8(v).ok())
            .map(|v| v.trim().to_string()),
        Extract::Cookie(name) => parsed
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
            .filter_map(|(_, v)| std::str::from_utf8(v).ok())
            .find_map(|v| {
                let pair = v.split(';').next()?;
                let (k, val) = pair.split_once('=')?;
                (k.trim() == name).then(|| val.trim().to_string())
            }),
    }
}

pub(super) fn cut(s: &str) -> String {
    match s.char_indices().nth(loadmark_metrics::CHECK_EXAMPLE_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
