//! A plan's `grpc:` scenario steps made ready before any load (issue 36): the schema found
//! once per plan (the plan's `grpc: {proto, import_paths}` or `{protoset}`, else the first
//! target's server reflection, asked once per service), each step's method resolved in it
//! and its message checked against the method's input, then each step given the codec the
//! engine encodes its messages and reads its answers with. A step that names no method of
//! the schema, or whose message is no JSON of the method's input, is refused here, with the
//! plan file's line and column, before any load.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use loadmark_grpc::{Method, Schema, Source};
use loadmark_plan::{
    locate_step, BodyEncoder, CarriedGrpcSchema, GrpcCodec, LoadedPlan, Plan, ScenarioStepFile,
    StepGrpcFile,
};

use crate::UsageError;

/// Sets the codec of every `grpc:` step of `plan`'s runs, or refuses the plan.
pub fn attach(plan: &mut LoadedPlan) -> Result<()> {
    let any = plan
        .steps
        .iter()
        .any(|s| journeys(&s.plan).any(|(_, steps)| steps.iter().any(|f| f.grpc.is_some())));
    if !any {
        if plan.file.grpc.is_some() {
            return Err(at_section(
                plan,
                "`grpc:` names the schemas of `grpc:` scenario steps, and this plan has none",
            ));
        }
        return Ok(());
    }
    let base = plan
        .path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut schemas = Schemas {
        given: match &plan.file.grpc {
            Some(g) => given_schema(g, &base).map_err(|e| at_section(plan, &e))?,
            None => None,
        },
        reflected: HashMap::new(),
    };
    if schemas.given.is_none() && !plan.launches.is_empty() {
        return Err(located(
            plan,
            None,
            0,
            "the plan launches its target, which is not up before the load to answer server reflection; name the schemas in `grpc: {proto: [FILE]}` (or `{protoset: FILE}`)".into(),
        ));
    }
    let mut codecs: HashMap<String, GrpcCodec> = HashMap::new();
    let mut plans: Vec<Plan> = plan.steps.iter().map(|s| s.plan.clone()).collect();
    for run in &mut plans {
        let target = run.clone();
        for (scenario, steps) in journeys_mut(run) {
            for (i, step) in steps.iter_mut().enumerate() {
                let Some(g) = step.grpc.as_mut() else {
                    continue;
                };
                let key = format!("{}\n{}", g.call, g.message.as_deref().unwrap_or("{}"));
                let codec = match codecs.get(&key) {
                    Some(codec) => codec.clone(),
                    None => {
                        let codec = codec_of(g, &mut schemas, &target)
                            .map_err(|e| located(plan, scenario.as_deref(), i, e))?;
                        codecs.insert(key, codec.clone());
                        codec
                    }
                };
                g.codec = Some(codec);
            }
        }
    }
    // `loadmark worker` (srun's tasks, Kubernetes pods) gets each run as JSON, without the
    // codecs: the schema goes with it and the worker makes them again (`restore`).
    let carried = match &schemas.given {
        Some(given) => given.encode(),
        None => Schema::encode_all(schemas.reflected.values()),
    };
    for (step, mut run) in plan.steps.iter_mut().zip(plans) {
        if journeys(&run).any(|(_, steps)| steps.iter().any(|f| f.grpc.is_some())) {
            run.mix.grpc_schema = Some(CarriedGrpcSchema {
                call: None,
                descriptor_set: carried.clone(),
            });
        }
        step.plan = run;
    }
    Ok(())
}

/// The codec of every `grpc:` step of a plan that came as JSON, from the schema it carries
/// (checked by [`attach`] in the process that read the plan file).
pub(crate) fn restore(plan: &mut Plan, schema: &Schema) -> Result<(), String> {
    for (_, steps) in journeys_mut(plan) {
        for g in steps.iter_mut().filter_map(|s| s.grpc.as_mut()) {
            if g.codec.is_none() {
                let method = schema
                    .method(&g.call)
                    .map_err(|e| format!("grpc.call {}: {e}", g.call))?;
                g.codec = Some(codec(method));
            }
        }
    }
    Ok(())
}

/// The schemas of a plan: the files it names, or what reflection gave per service.
struct Schemas {
    given: Option<Schema>,
    reflected: HashMap<String, Schema>,
}

impl Schemas {
    fn for_call(&mut self, g: &StepGrpcFile, target: &Plan) -> Result<&Schema, String> {
        if let Some(schema) = &self.given {
            return Ok(schema);
        }
        let (service, _) = g.method()?;
        if !self.reflected.contains_key(&service) {
            let schema = reflect(&g.call, target).map_err(|e| {
                format!(
                    "{e} (without a `grpc:` section naming .proto files or a protoset, the target's server reflection describes the calls)"
                )
            })?;
            self.reflected.insert(service.clone(), schema);
        }
        Ok(&self.reflected[&service])
    }
}

/// The plan's `grpc:` files, compiled (paths relative to the plan file).
fn given_schema(g: &loadmark_plan::GrpcSchemaFile, base: &Path) -> Result<Option<Schema>, String> {
    let source = match (&g.protoset, g.proto.is_empty()) {
        (Some(_), false) => {
            return Err("grpc: give `proto` files or a `protoset`, not both".into());
        }
        (Some(set), true) => Source::Protoset(base.join(set)),
        (None, false) => Source::Proto {
            files: g.proto.iter().map(|f| base.join(f)).collect(),
            imports: g.import_paths.iter().map(|d| base.join(d)).collect(),
        },
        (None, true) if !g.import_paths.is_empty() => {
            return Err("grpc.import_paths: they hold the imports of `proto` files; name the files with `proto: [FILE]`".into());
        }
        (None, true) => return Ok(None),
    };
    Schema::load(&source)
        .map(Some)
        .map_err(|e| format!("grpc: {e}"))
}

/// The schema of `call`'s service from the reflection service of `target`'s server.
fn reflect(call: &str, target: &Plan) -> Result<Schema, String> {
    use std::net::ToSocketAddrs;
    let url = &target.request.url;
    let addr = format!("{}:{}", url.host(), url.port());
    let timeout = target.timeouts.connect.max(Duration::from_secs(5));
    if !url.scheme().is_tls() {
        return loadmark_grpc::reflection::schema_for(&addr, call, timeout)
            .map_err(|e| e.to_string());
    }
    let host = url
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let socket = addr
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("{addr}: the host does not resolve"))?;
    let policy = target.tls.clone();
    let connect = async move {
        loadmark_engine::transport::connect_tls_h2(socket, &host, &policy, timeout)
            .await
            .map_err(|e| e.message)
    };
    loadmark_grpc::reflection::schema_over(&addr, call, timeout, connect).map_err(|e| e.to_string())
}

/// The codec of one step: its method found, its message checked as the first call could
/// render it (each placeholder or variable as 0).
fn codec_of(g: &StepGrpcFile, schemas: &mut Schemas, target: &Plan) -> Result<GrpcCodec, String> {
    let schema = schemas.for_call(g, target)?;
    let method = schema
        .method(&g.call)
        .map_err(|e| format!("grpc.call {}: {e}", g.call))?;
    if method.is_streaming() {
        return Err(format!(
            "grpc.call {}: a streaming method; scenario steps make unary calls (one request, one response) — use `loadmark grpc` for streams",
            g.call
        ));
    }
    let message = g.message.as_deref().unwrap_or("{}");
    let sample = placeholders_as_zero(message);
    method.encode_json(&sample).map_err(|e| {
        let shown = if sample == message {
            String::new()
        } else {
            format!(" (rendered with each placeholder as 0: {sample})")
        };
        format!("grpc.message{shown}: {e}")
    })?;
    Ok(codec(method))
}

fn codec(method: Method) -> GrpcCodec {
    let decoder = method.clone();
    GrpcCodec {
        encode: BodyEncoder(Arc::new(move |json, out| {
            let json = std::str::from_utf8(json).map_err(|e| e.to_string())?;
            out.extend(method.request_body(json).map_err(|e| e.to_string())?);
            Ok(())
        })),
        decode: Arc::new(move |bytes| {
            let value = decoder.decode_json(bytes).map_err(|e| e.to_string())?;
            serde_json::to_vec(&value).map_err(|e| e.to_string())
        }),
    }
}

/// `text` with every `{{...}}` as `0`: what a first call could send, to check its JSON.
fn placeholders_as_zero(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let Some(close) = rest[open..].find("}}") else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push('0');
        rest = &rest[open + close + 2..];
    }
    out.push_str(rest);
    out
}

type Journey<'a> = (Option<String>, &'a [ScenarioStepFile]);

/// A run's journeys: its `scenario:`, or each of its `scenarios:` by name.
fn journeys(plan: &Plan) -> impl Iterator<Item = Journey<'_>> {
    let single = plan.scenario.as_deref().map(|s| (None, s));
    let named = plan
        .scenarios
        .iter()
        .map(|n| (Some(n.name.clone()), n.steps.as_slice()));
    single.into_iter().chain(named)
}

fn journeys_mut(plan: &mut Plan) -> Vec<(Option<String>, &mut Vec<ScenarioStepFile>)> {
    let mut out = Vec::new();
    if let Some(steps) = plan.scenario.as_mut() {
        out.push((None, steps));
    }
    for n in &mut plan.scenarios {
        out.push((Some(n.name.clone()), &mut n.steps));
    }
    out
}

/// A refusal of the plan's `grpc:` section, at its line.
fn at_section(plan: &LoadedPlan, message: &str) -> anyhow::Error {
    let line = plan
        .text
        .lines()
        .position(|l| l.starts_with("grpc:"))
        .map_or(1, |i| i + 1);
    UsageError(format!("{}:{line}:1: {message}", plan.path.display())).into()
}

/// A refusal with the plan file's place: the step's line in `scenario:`, or the named
/// scenario's step by number.
fn located(
    plan: &LoadedPlan,
    scenario: Option<&str>,
    step: usize,
    message: String,
) -> anyhow::Error {
    let file = plan.path.display();
    let text = match scenario {
        None => {
            let (line, column) = if plan.file.scenario.is_some() {
                locate_step(&plan.text, step)
            } else {
                (1, 1)
            };
            format!(
                "{file}:{line}:{column}: scenario step {}: {message}",
                step + 1
            )
        }
        Some(name) => {
            let line = plan
                .text
                .lines()
                .position(|l| l.trim_start().starts_with(&format!("{name}:")))
                .map_or(1, |i| i + 1);
            format!(
                "{file}:{line}:1: scenario {name}, step {}: {message}",
                step + 1
            )
        }
    };
    UsageError(text).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_zero_for_the_first_check() {
        assert_eq!(
            placeholders_as_zero(r#"{"n":{{rand_int 1 9}},"t":"u{{seq}}"}"#),
            r#"{"n":0,"t":"u0"}"#
        );
        assert_eq!(placeholders_as_zero("{}"), "{}");
        assert_eq!(placeholders_as_zero("{{x"), "{{x");
    }
}
