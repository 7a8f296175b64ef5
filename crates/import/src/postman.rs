//! Postman collections (v2.0 and v2.1) into scenarios: a collection with folders becomes
//! a plan with `scenarios:`, one per top-level folder (its subfolders' requests in order
//! inside it) and one for the requests at the collection's top level; `--folder` imports one
//! folder as the plan's `scenario:`, `--flatten` every request in order as one (as Postman's
//! collection runner runs them). Collection and environment variables are filled in, plain
//! script assignments become values, status assertions checks, values set from responses
//! extractions and `{{var}}` (within a scenario: each scenario has its own variables), auth
//! headers whose secrets go to the data file. Script lines that cannot be translated are
//! listed in the warnings.

mod request;
mod script;

use indexmap::IndexMap;
use serde_json::Value;

use crate::plan::{unique_names, unique_scenario_names, PlanBody, PlanDoc, ScenarioDoc, StepDoc};
use crate::secrets::Secrets;
use crate::{parse_json, ImportError, Imported, Options};

#[derive(Debug, Clone, Default)]
pub struct PostmanOptions {
    pub common: Options,
    /// Only this folder (by name, at any depth), as the plan's one scenario.
    pub folder: Option<String>,
    /// Every request in order as one scenario, instead of a scenario per folder.
    pub flatten: bool,
}

/// The requests of one scenario-to-be: a folder's, or the collection's top level's.
struct Group<'a> {
    name: String,
    items: Vec<Item<'a>>,
}

/// A request item, with what it inherits from its folders.
struct Item<'a> {
    name: String,
    item: &'a Value,
    /// The nearest auth (the item's own, else its folders', else the collection's).
    auth: Option<&'a Value>,
}

/// A collection (and its environment: text and file name) as a scenario plan.
pub fn import(
    text: &str,
    file: &str,
    env: Option<(&str, &str)>,
    opts: &PostmanOptions,
) -> Result<Imported, ImportError> {
    let doc = parse_json(text, file)?;
    check_version(&doc, file)?;
    let mut vars = variables(doc.get("variable"), "key", |_| true);
    if let Some((env_text, env_file)) = env {
        let env = parse_json(env_text, env_file)?;
        let values = env.get("values").ok_or_else(|| {
            ImportError::field(env_file, "/values", "missing: not a Postman environment")
        })?;
        let enabled = |v: &Value| v.get("enabled").and_then(Value::as_bool) != Some(false);
        vars.extend(variables(Some(values), "key", enabled));
    }
    let mut warnings = Vec::new();
    let name = doc.pointer("/info/name").and_then(Value::as_str);
    let collection = name.unwrap_or("Postman collection");
    let (groups, several) = select(&doc, collection, opts, file, &mut warnings)?;
    // Scripts that run around every request are not per-step lines: listed, not guessed.
    let events = doc.get("event");
    for line in script_lines(events, "prerequest")
        .into_iter()
        .chain(script_lines(events, "test"))
        .filter(|l| !l.trim().is_empty())
    {
        warnings.push(format!(
            "the collection's script, not translated: {}",
            line.trim()
        ));
    }
    let mut b = request::Builder::new(vars, Secrets::new(opts.common.keep_secrets));
    let mut scenarios = Vec::new();
    for group in &groups {
        b.new_scenario();
        let mut steps = Vec::new();
        for it in &group.items {
            if let Some(step) = b.step(it) {
                steps.push(StepDoc::Request(step));
            }
        }
        if steps.is_empty() {
            if several {
                warnings.push(format!(
                    "folder {:?}: no request left to send, so no scenario",
                    group.name
                ));
            }
            continue;
        }
        unique_names(&mut steps);
        scenarios.push(ScenarioDoc {
            name: group.name.clone(),
            steps,
            load: opts.common.load(),
        });
    }
    let (origin, more, columns) = b.finish();
    warnings.extend(more);
    let Some(origin) = origin.filter(|_| !scenarios.is_empty()) else {
        return Err(ImportError::Empty(format!("{file}: no request to import")));
    };
    let requests: usize = scenarios.iter().map(|s| s.steps.len()).sum();
    let (body, what) = if several {
        unique_scenario_names(&mut scenarios);
        let what = format!(
            "{requests} request(s) to {origin} in {} scenario(s), one per folder ({})",
            scenarios.len(),
            scenarios
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        (PlanBody::Scenarios(scenarios), what)
    } else {
        let steps = scenarios.pop().map(|s| s.steps).unwrap_or_default();
        (
            PlanBody::Scenario(steps),
            format!("{requests} request(s) to {origin}"),
        )
    };
    let target = url::Url::parse(&origin).ok();
    let plan = PlanDoc {
        name: opts
            .common
            .name
            .clone()
            .unwrap_or_else(|| match &opts.folder {
                Some(f) => format!("{collection} / {f}"),
                None => collection.to_string(),
            }),
        comments: vec![format!(
            "Imported from {file} by `loadmark import postman`: {what}."
        )],
        target_name: target
            .as_ref()
            .map_or("api".into(), crate::curl::target_name),
        target_url: origin,
        data: (!columns.is_empty()).then(|| opts.common.secrets_file.clone()),
        body,
        load: opts.common.load(),
        ..Default::default()
    };
    Ok(Imported {
        plan,
        warnings,
        secrets: columns,
    })
}

/// v2.0 and v2.1 (by `info.schema`); v1 (`requests`/`order` at the top) refused by name.
fn check_version(doc: &Value, file: &str) -> Result<(), ImportError> {
    let refuse = |found: &str| ImportError::Version {
        file: file.into(),
        what: "Postman collection format",
        found: found.to_string(),
        supported: "v2.0, v2.1 (export the collection again as v2.1)",
    };
    let Some(info) = doc.get("info") else {
        if doc.get("requests").is_some() || doc.get("order").is_some() {
            return Err(refuse("v1"));
        }
        return Err(ImportError::field(
            file,
            "/info",
            "missing: not a Postman collection",
        ));
    };
    let schema = info.get("schema").and_then(Value::as_str).unwrap_or("");
    match ["/v2.0.", "/v2.1."].iter().any(|v| schema.contains(v)) {
        true => Ok(()),
        false if schema.is_empty() => Err(ImportError::field(file, "/info/schema", "missing")),
        false => Err(refuse(schema)),
    }
}

/// Variables (`[{key, value}]`), enabled ones only.
fn variables(
    list: Option<&Value>,
    key: &str,
    enabled: impl Fn(&Value) -> bool,
) -> IndexMap<String, String> {
    let mut out = IndexMap::new();
    for v in list.and_then(Value::as_array).into_iter().flatten() {
        let disabled = v.get("disabled").and_then(Value::as_bool) == Some(true);
        if let (Some(k), false, true) = (v.get(key).and_then(Value::as_str), disabled, enabled(v)) {
            let value = match v.get("value") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            out.insert(k.to_string(), value);
        }
    }
    out
}

/// The lines of an item's scripts that listen to `event` (`prerequest`, `test`).
fn script_lines(events: Option<&Value>, event: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in events.and_then(Value::as_array).into_iter().flatten() {
        if e.get("listen").and_then(Value::as_str) != Some(event) {
            continue;
        }
        match e.pointer("/script/exec") {
            Some(Value::Array(lines)) => {
                out.extend(lines.iter().filter_map(Value::as_str).map(str::to_string))
            }
            Some(Value::String(text)) => out.extend(text.lines().map(str::to_string)),
            _ => {}
        }
    }
    out
}

/// The requests to import, in groups: the folder asked for, or every request (`--flatten`,
/// or a collection without folders) as one group; else a group per top-level folder and
/// one for the requests at the top level (named after the collection). The flag says
/// whether the groups are several scenarios (`scenarios:`) rather than the plan's one.
fn select<'a>(
    doc: &'a Value,
    collection: &str,
    opts: &PostmanOptions,
    file: &str,
    warnings: &mut Vec<String>,
) -> Result<(Vec<Group<'a>>, bool), ImportError> {
    let top = doc
        .get("item")
        .ok_or_else(|| ImportError::field(file, "/item", "missing"))?;
    let auth = doc.get("auth");
    if let Some(name) = &opts.folder {
        let (folder, auth) = find_folder(top, name, auth).ok_or_else(|| {
            ImportError::Empty(format!(
                "{file}: no folder {name:?}; its folders: {}",
                folder_names(top).join(", ")
            ))
        })?;
        let mut items = Vec::new();
        walk(
            folder.get("item").unwrap_or(&Value::Null),
            auth,
            warnings,
            &mut items,
        );
        return Ok((
            vec![Group {
                name: name.clone(),
                items,
            }],
            false,
        ));
    }
    let list = top.as_array().map(Vec::as_slice).unwrap_or_default();
    if opts.flatten || !list.iter().any(is_folder) {
        let mut items = Vec::new();
        walk(top, auth, warnings, &mut items);
        let name = collection.to_string();
        return Ok((vec![Group { name, items }], false));
    }
    let mut groups: Vec<Group> = Vec::new();
    // Where the top level's own requests go, once there is one.
    let mut loose: Option<usize> = None;
    for it in list {
        let one = std::slice::from_ref(it);
        let mut items = Vec::new();
        walk_slice(one, auth, warnings, &mut items);
        if is_folder(it) {
            let name = it.get("name").and_then(Value::as_str).unwrap_or("folder");
            groups.push(Group {
                name: name.to_string(),
                items,
            });
        } else {
            let at = *loose.get_or_insert_with(|| {
                groups.push(Group {
                    name: collection.to_string(),
                    items: Vec::new(),
                });
                groups.len() - 1
            });
            groups[at].items.extend(items);
        }
    }
    Ok((groups, true))
}

fn is_folder(v: &Value) -> bool {
    v.get("item").is_some_and(Value::is_array)
}

fn folder_names(items: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for it in items
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| is_folder(v))
    {
        out.push(
            it.get("name")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string(),
        );
        out.extend(folder_names(&it["item"]));
    }
    out
}

fn find_folder<'a>(
    items: &'a Value,
    name: &str,
    auth: Option<&'a Value>,
) -> Option<(&'a Value, Option<&'a Value>)> {
    for it in items
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| is_folder(v))
    {
        let auth = it.get("auth").or(auth);
        if it.get("name").and_then(Value::as_str) == Some(name) {
            return Some((it, auth));
        }
        if let Some(found) = find_folder(&it["item"], name, auth) {
            return Some(found);
        }
    }
    None
}

/// Request items in order, folders' own scripts listed as not translated.
fn walk<'a>(
    items: &'a Value,
    auth: Option<&'a Value>,
    warnings: &mut Vec<String>,
    out: &mut Vec<Item<'a>>,
) {
    let list = items.as_array().map(Vec::as_slice).unwrap_or_default();
    walk_slice(list, auth, warnings, out);
}

fn walk_slice<'a>(
    items: &'a [Value],
    auth: Option<&'a Value>,
    warnings: &mut Vec<String>,
    out: &mut Vec<Item<'a>>,
) {
    for it in items {
        let name = it
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("request")
            .to_string();
        // A folder's auth is its own; a request's is inside its request.
        let own = it.get("auth").or(it.pointer("/request/auth"));
        let auth = own.or(auth);
        if is_folder(it) {
            for line in script_lines(it.get("event"), "prerequest")
                .into_iter()
                .chain(script_lines(it.get("event"), "test"))
                .filter(|l| !l.trim().is_empty())
            {
                warnings.push(format!(
                    "folder {name:?}'s script, not translated: {}",
                    line.trim()
                ));
            }
            walk(&it["item"], auth, warnings, out);
        } else {
            out.push(Item {
                name,
                item: it,
                auth,
            });
        }
    }
}

#[cfg(test)]
mod tests;
