//! OpenAPI 3.0/3.1 documents (YAML or JSON) into scenarios: a step per operation, in the
//! document's order, with path and query parameters and bodies from the document's examples
//! (or generated from the schemas, [`example`]), checks on the documented success codes (and,
//! asked, on the response schema's required fields), the server as the target, and security
//! schemes as `{{csv NAME}}` columns of a data file.
//!
//! Only local `$ref`s (`#/components/...`) are followed; a reference to another file or a
//! URL is refused by name, since an import reads one document and no network.

mod example;
mod request;

use indexmap::IndexMap;
use serde::de::IgnoredAny;
use serde_json::Value;

use crate::plan::{unique_names, unique_scenario_names, PlanBody, PlanDoc, ScenarioDoc, StepDoc};
use crate::{parse_yaml_or_json, pointer_token, ImportError, Imported, Options};

#[derive(Debug, Clone, Default)]
pub struct OpenApiOptions {
    pub common: Options,
    /// The service's base URL, instead of the document's servers.
    pub base_url: Option<String>,
    /// Which of the document's servers (from 1) [default: the first].
    pub server: Option<usize>,
    /// Only operations with one of these tags.
    pub tags: Vec<String>,
    /// A scenario per tag (`scenarios:`): each operation under its first tag (of those
    /// `tags` keeps), those without one under `untagged`.
    pub per_tag: bool,
    /// Only these methods (upper case), e.g. GET and HEAD for a read-only load; empty: all.
    pub methods: Vec<String>,
    /// Also check the required fields of each success response's JSON schema.
    pub check_schema: bool,
}

/// The document, for following `$ref`s.
pub struct Doc {
    root: Value,
}

impl Doc {
    pub fn new(root: Value) -> Doc {
        Doc { root }
    }

    /// What a local `$ref` (`#/components/schemas/Pet`) points at.
    pub fn lookup(&self, reference: &str) -> Option<&Value> {
        self.root.pointer(reference.strip_prefix('#')?)
    }

    /// `v`, or what its `$ref` chain ends at.
    pub fn resolve<'a>(&'a self, mut v: &'a Value) -> &'a Value {
        for _ in 0..16 {
            match v
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| self.lookup(r))
            {
                Some(target) => v = target,
                None => break,
            }
        }
        v
    }
}

const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// An OpenAPI document as a scenario plan.
pub fn import(text: &str, file: &str, opts: &OpenApiOptions) -> Result<Imported, ImportError> {
    let root = parse_yaml_or_json(text, file)?;
    check_version(&root, file)?;
    check_refs(&root, &root, file, String::new())?;
    let doc = Doc::new(root);
    let mut warnings = Vec::new();
    let (origin, base_path) = target(&doc, opts, file, &mut warnings)?;
    let mut build = request::Builder::new(&doc, opts);
    // Steps by scenario (a tag, with --per-tag; else one), in the order first met.
    let mut groups: IndexMap<String, Vec<StepDoc>> = IndexMap::new();
    let mut skipped = Vec::new();
    let mut several_tags = Vec::new();
    for (path, method) in operations(text, &doc) {
        let op = &doc.root["paths"][&path][&method];
        let upper = method.to_ascii_uppercase();
        if !wanted(op, &upper, opts) {
            skipped.push(format!("{upper} {path}"));
            continue;
        }
        let item = doc.resolve(&doc.root["paths"][&path]);
        let place = format!("{upper} {path}");
        let step = match build.step(&path, &upper, item, op, &base_path) {
            Ok(step) => step,
            Err(field) => {
                let field = format!("{field} (from the document's example)");
                warnings.push(crate::literal::left_out(&place, &field));
                continue;
            }
        };
        let group = match opts.per_tag {
            true => tag_of(op, opts, &place, &mut several_tags),
            false => String::new(),
        };
        groups
            .entry(group)
            .or_default()
            .push(StepDoc::Request(step));
    }
    if !several_tags.is_empty() {
        warnings.push(format!(
            "operations with several tags go under their first: {}",
            several_tags.join(", ")
        ));
    }
    if !skipped.is_empty() {
        warnings.push(format!(
            "left out {} operation(s) by --tag/--methods: {}",
            skipped.len(),
            skipped.join(", ")
        ));
    }
    if groups.is_empty() {
        return Err(ImportError::Empty(format!(
            "{file}: no operation left to load ({} left out by --tag/--methods)",
            skipped.len()
        )));
    }
    let mut scenarios: Vec<ScenarioDoc> = groups
        .into_iter()
        .map(|(name, mut steps)| {
            unique_names(&mut steps);
            ScenarioDoc {
                name,
                steps,
                load: opts.common.load(),
            }
        })
        .collect();
    let (secrets, more) = build.finish();
    warnings.extend(more);
    let body = match opts.per_tag {
        true => {
            unique_scenario_names(&mut scenarios);
            PlanBody::Scenarios(scenarios)
        }
        false => PlanBody::Scenario(scenarios.pop().map(|s| s.steps).unwrap_or_default()),
    };
    Ok(plan(&doc, file, opts, origin, body, secrets, warnings))
}

/// The scenario an operation goes to with --per-tag: its first tag (of those --tag keeps),
/// else `untagged`; one with several is listed in `several`.
fn tag_of(op: &Value, opts: &OpenApiOptions, place: &str, several: &mut Vec<String>) -> String {
    let tags: Vec<&str> = op
        .get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|t| opts.tags.is_empty() || opts.tags.iter().any(|w| w == t))
        .collect();
    match tags.as_slice() {
        [] => "untagged".into(),
        [one] => one.to_string(),
        [first, ..] => {
            several.push(format!("{place} ({}: under {first})", tags.join(", ")));
            first.to_string()
        }
    }
}

fn plan(
    doc: &Doc,
    file: &str,
    opts: &OpenApiOptions,
    origin: url::Url,
    body: PlanBody,
    secrets: Vec<(String, String)>,
    warnings: Vec<String>,
) -> Imported {
    let (operations, scenarios) = match &body {
        PlanBody::Scenarios(list) => (
            list.iter().map(|s| s.steps.len()).sum::<usize>(),
            format!(" in {} scenario(s), one per tag", list.len()),
        ),
        PlanBody::Scenario(steps) => (steps.len(), String::new()),
        PlanBody::Request(_) => (1, String::new()),
    };
    let title = doc.root.pointer("/info/title").and_then(Value::as_str);
    let version = doc.root.pointer("/info/version").and_then(Value::as_str);
    let target_url = origin.origin().ascii_serialization();
    let plan = PlanDoc {
        name: opts
            .common
            .name
            .clone()
            .unwrap_or_else(|| title.unwrap_or("OpenAPI operations").to_string()),
        comments: vec![format!(
            "Imported from {file} by `loadmark import openapi`: {operations} operation(s) of {} {} on {target_url}{scenarios}.",
            title.unwrap_or("the API"),
            version.unwrap_or("")
        )],
        target_name: crate::curl::target_name(&origin),
        target_url,
        data: (!secrets.is_empty()).then(|| opts.common.secrets_file.clone()),
        body,
        load: opts.common.load(),
        ..Default::default()
    };
    Imported {
        plan,
        warnings,
        secrets,
    }
}

/// OpenAPI 3.0.x and 3.1.x; Swagger 2.0 and anything else refused by name.
fn check_version(root: &Value, file: &str) -> Result<(), ImportError> {
    let refuse = |found: String| ImportError::Version {
        file: file.into(),
        what: "OpenAPI version",
        found,
        supported: "OpenAPI 3.0.x, 3.1.x (convert Swagger 2.0 with swagger2openapi)",
    };
    if let Some(v) = root.get("swagger") {
        return Err(refuse(format!("Swagger {}", scalar_text(v))));
    }
    match root.get("openapi") {
        Some(Value::String(v)) if v.starts_with("3.0") || v.starts_with("3.1") => Ok(()),
        Some(v) => Err(refuse(scalar_text(v))),
        None => Err(ImportError::field(
            file,
            "/openapi",
            "missing: not an OpenAPI document",
        )),
    }
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Every `$ref` must be local and point at something; the error names the first that is
/// not, at its JSON pointer.
fn check_refs(root: &Value, v: &Value, file: &str, at: String) -> Result<(), ImportError> {
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                let here = format!("{at}/$ref");
                let Some(pointer) = r.strip_prefix('#') else {
                    return Err(ImportError::field(
                        file,
                        &here,
                        format!("$ref {r:?}: only local references (#/components/...) are followed, not other files or URLs; bundle the document first"),
                    ));
                };
                if root.pointer(pointer).is_none() {
                    return Err(ImportError::field(
                        file,
                        &here,
                        format!("$ref {r:?} points at nothing in the document"),
                    ));
                }
            }
            for (k, child) in m {
                check_refs(root, child, file, format!("{at}/{}", pointer_token(k)))?;
            }
            Ok(())
        }
        Value::Array(list) => {
            for (i, child) in list.iter().enumerate() {
                check_refs(root, child, file, format!("{at}/{i}"))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The target: `--base-url`, else the chosen server with its variables' defaults. The
/// origin is the plan's target; a base path (`/api/v3`) is put before every step's path.
fn target(
    doc: &Doc,
    opts: &OpenApiOptions,
    file: &str,
    warnings: &mut Vec<String>,
) -> Result<(url::Url, String), ImportError> {
    let servers = doc.root.get("servers").and_then(Value::as_array);
    let text = match (&opts.base_url, servers) {
        (Some(u), _) => u.clone(),
        (None, Some(list)) if !list.is_empty() => {
            let n = opts.server.unwrap_or(1);
            let s = list.get(n.wrapping_sub(1)).ok_or_else(|| {
                ImportError::field(
                    file,
                    "/servers",
                    format!("--server {n}: the document lists {} server(s)", list.len()),
                )
            })?;
            server_url(s)
        }
        _ => {
            warnings.push("the document names no server: the plan targets http://127.0.0.1:8080 (use --base-url)".into());
            "http://127.0.0.1:8080".into()
        }
    };
    let parsed = match url::Url::parse(&text) {
        Ok(u) => u,
        Err(url::ParseError::RelativeUrlWithoutBase) => {
            warnings.push(format!("the server {text:?} is relative: the plan targets http://127.0.0.1:8080{text} (use --base-url)"));
            url::Url::parse(&format!("http://127.0.0.1:8080{text}"))
                .map_err(|e| ImportError::field(file, "/servers", format!("{text:?}: {e}")))?
        }
        Err(e) => {
            return Err(ImportError::field(
                file,
                "/servers",
                format!("{text:?}: {e}"),
            ))
        }
    };
    let base_path = parsed.path().trim_end_matches('/').to_string();
    Ok((parsed, base_path))
}

/// A server's URL with each `{variable}` replaced by its default.
fn server_url(server: &Value) -> String {
    let mut url = server
        .get("url")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if let Some(vars) = server.get("variables").and_then(Value::as_object) {
        for (name, var) in vars {
            let default = var.get("default").map(scalar_text).unwrap_or_default();
            url = url.replace(&format!("{{{name}}}"), &default);
        }
    }
    url
}

/// The operations as (path, method), in the document's order (the parsed tree sorts keys,
/// so the order is read again from the text; sorted if that fails).
fn operations(text: &str, doc: &Doc) -> Vec<(String, String)> {
    #[derive(serde::Deserialize)]
    struct Order {
        paths: IndexMap<String, IndexMap<String, IgnoredAny>>,
    }
    let ordered: Option<Order> = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).ok()
    } else {
        serde_norway::from_str(text).ok()
    };
    let pairs: Vec<(String, Vec<String>)> = match ordered {
        Some(o) => o
            .paths
            .into_iter()
            .map(|(p, ms)| (p, ms.into_keys().collect()))
            .collect(),
        None => doc
            .root
            .get("paths")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(p, item)| {
                        let keys = item.as_object().map(|i| i.keys().cloned().collect());
                        (p.clone(), keys.unwrap_or_default())
                    })
                    .collect()
            })
            .unwrap_or_default(),
    };
    pairs
        .into_iter()
        .flat_map(|(p, ms)| {
            ms.into_iter()
                .filter(|m| METHODS.contains(&m.as_str()))
                .map(move |m| (p.clone(), m))
        })
        .collect()
}

/// Whether `--tag` and `--methods` keep an operation.
fn wanted(op: &Value, method: &str, opts: &OpenApiOptions) -> bool {
    let tagged = opts.tags.is_empty()
        || op
            .get("tags")
            .and_then(Value::as_array)
            .is_some_and(|t| t.iter().any(|t| opts.tags.iter().any(|w| t == w.as_str())));
    let method_ok = opts.methods.is_empty() || opts.methods.iter().any(|m| m == method);
    tagged && method_ok
}

#[cfg(test)]
mod tests;
