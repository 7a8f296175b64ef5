//! The published JSON Schemas of saved results (`loadmark schema result`, `loadmark schema
//! bundle`), generated from the same types that write them, so they cannot drift apart.
//!
//! The schema describes the current [`SCHEMA_VERSION`]; older files still load (serde
//! aliases and tolerant readers in the types), but validate only against their own version's
//! schema.
//!
//! Part of the model: imports `model` siblings and `units` only, never a renderer.

use schemars::JsonSchema;

use super::bundle::Bundle;
use super::report::{Report, SCHEMA_VERSION};

pub(crate) fn schema_of<T: JsonSchema>(title: &str) -> serde_json::Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).expect("a schema serializes");
    if let Some(obj) = schema.as_object_mut() {
        obj.insert(
            "title".into(),
            format!("{title}, schema version {SCHEMA_VERSION}").into(),
        );
        obj.insert(
            "$id".into(),
            format!("loadmark:{}/v{SCHEMA_VERSION}", title.replace(' ', "-")).into(),
        );
    }
    // `schema_version` says which schema a file follows: this one, exactly.
    if let Some(v) = schema.pointer_mut("/properties/schema_version") {
        *v = serde_json::json!({
            "description": "The version of this schema the file follows; older versions load but follow their own schema.",
            "const": SCHEMA_VERSION
        });
    }
    schema
}

/// The JSON Schema of a saved run report (`loadmark run -o r.json`, `loadmark merge`).
pub fn result_schema() -> serde_json::Value {
    schema_of::<Report>("loadmark result")
}

/// The JSON Schema of a plan bundle (`loadmark bench`'s bundle.json).
pub fn bundle_schema() -> serde_json::Value {
    schema_of::<Bundle>("loadmark bundle")
}
