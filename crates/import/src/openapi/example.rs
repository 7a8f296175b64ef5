//! Example values from JSON Schemas (OpenAPI 3.0's dialect and 3.1's JSON Schema 2020-12):
//! the schema's own example, default, const or first enum value when it has one, else a
//! value generated from its type: objects with every property, one-item arrays, strings by
//! format and length, numbers within their bounds, the first branch of `oneOf`/`anyOf`,
//! `allOf` merged.

use serde_json::{json, Map, Value};

use super::Doc;

/// Deeper than this, a (recursive) schema gives `null`: a body is an example, not a tree.
const MAX_DEPTH: usize = 8;

/// An example for `schema`; `refs` are the `$ref`s being expanded (a cycle gives `null`).
pub fn example(doc: &Doc, schema: &Value) -> Value {
    generate(doc, schema, &mut Vec::new())
}

fn generate(doc: &Doc, schema: &Value, refs: &mut Vec<String>) -> Value {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        if refs.iter().any(|x| x == r) || refs.len() >= MAX_DEPTH {
            return Value::Null;
        }
        let Some(target) = doc.lookup(r) else {
            return Value::Null;
        };
        refs.push(r.to_string());
        let v = generate(doc, target, refs);
        refs.pop();
        return v;
    }
    if let Some(v) = given(schema) {
        return v;
    }
    if let Some(list) = schema.get("allOf").and_then(Value::as_array) {
        return merge(list.iter().map(|s| generate(doc, s, refs)));
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(first) = schema.get(key).and_then(|l| l.get(0)) {
            return generate(doc, first, refs);
        }
    }
    match type_of(schema).as_str() {
        "object" => object(doc, schema, refs),
        "array" => array(doc, schema, refs),
        "integer" => number(schema, true),
        "number" => number(schema, false),
        "boolean" => Value::Bool(true),
        "null" => Value::Null,
        _ => Value::String(string(schema)),
    }
}

/// A value the schema spells out: `example`, 3.1's `examples`, `default`, `const`, `enum`.
pub fn given(schema: &Value) -> Option<Value> {
    if let Some(v) = schema.get("example") {
        return Some(v.clone());
    }
    if let Some(v) = schema.get("examples").and_then(|l| l.as_array()?.first()) {
        return Some(v.clone());
    }
    for key in ["default", "const"] {
        if let Some(v) = schema.get(key) {
            return Some(v.clone());
        }
    }
    schema
        .get("enum")
        .and_then(|l| l.as_array()?.first())
        .cloned()
}

/// The schema's type: `type` (3.1 allows a list: the first that is not `null`), else what
/// its keywords imply.
pub fn type_of(schema: &Value) -> String {
    match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null")
            .to_string(),
        _ if schema.get("properties").is_some() => "object".into(),
        _ if schema.get("items").is_some() => "array".into(),
        _ => "string".into(),
    }
}

/// `allOf`'s parts as one object (a part that is not an object wins only if it is alone).
fn merge(parts: impl Iterator<Item = Value>) -> Value {
    let mut out = Map::new();
    let mut last = Value::Null;
    for part in parts {
        match part {
            Value::Object(m) => out.extend(m),
            other => last = other,
        }
    }
    if out.is_empty() {
        last
    } else {
        Value::Object(out)
    }
}

fn object(doc: &Doc, schema: &Value, refs: &mut Vec<String>) -> Value {
    let mut out = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            // A request does not send what the server alone writes.
            if doc.resolve(prop).get("readOnly").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            out.insert(name.clone(), generate(doc, prop, refs));
        }
    }
    Value::Object(out)
}

fn array(doc: &Doc, schema: &Value, refs: &mut Vec<String>) -> Value {
    let item = schema.get("items").cloned().unwrap_or(json!({}));
    let n = schema
        .get("minItems")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .clamp(1, 3);
    Value::Array((0..n).map(|_| generate(doc, &item, refs)).collect())
}

/// The lower bound (nudged past an exclusive one), else one under the upper, else 1.
fn number(schema: &Value, integer: bool) -> Value {
    let num = |k: &str| schema.get(k).and_then(Value::as_f64);
    let flag = |k: &str| schema.get(k).and_then(Value::as_bool) == Some(true);
    let step = if integer { 1.0 } else { 0.5 };
    // 3.0 spells exclusive bounds as booleans beside minimum/maximum, 3.1 as numbers.
    let low = match (num("minimum"), num("exclusiveMinimum")) {
        (Some(m), _) if flag("exclusiveMinimum") => Some(m + step),
        (Some(m), _) => Some(m),
        (None, Some(m)) => Some(m + step),
        _ => None,
    };
    let high = match (num("maximum"), num("exclusiveMaximum")) {
        (Some(m), _) if flag("exclusiveMaximum") => Some(m - step),
        (Some(m), _) => Some(m),
        (None, Some(m)) => Some(m - step),
        _ => None,
    };
    let v = match (low, high) {
        (Some(lo), _) => lo,
        (None, Some(hi)) if hi < 1.0 => hi,
        _ => 1.0,
    };
    if integer {
        json!(v.ceil() as i64)
    } else {
        json!(v)
    }
}

/// A string of the schema's format, within its length bounds.
fn string(schema: &Value) -> String {
    let format = schema.get("format").and_then(Value::as_str).unwrap_or("");
    let base = match format {
        "date" => "2024-01-01",
        "date-time" => "2024-01-01T00:00:00Z",
        "time" => "00:00:00Z",
        "email" => "user@example.com",
        "uuid" => "3fa85f64-5717-4562-b3fc-2c963f66afa6",
        "uri" | "url" => "https://example.com/",
        "hostname" => "example.com",
        "ipv4" => "192.0.2.1",
        "ipv6" => "2001:db8::1",
        "byte" => "ZXhhbXBsZQ==",
        "binary" => "binary data",
        "password" => "password",
        _ => "string",
    };
    let mut s = base.to_string();
    let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
    while s.len() < min {
        s.push('x');
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
        s.truncate((max as usize).max(min));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(components: Value) -> Doc {
        Doc::new(json!({ "components": { "schemas": components } }))
    }

    #[test]
    fn schemas_give_values_of_their_type_within_bounds() {
        let d = doc(json!({}));
        let ex = |s: Value| example(&d, &s);
        assert_eq!(ex(json!({"type": "integer", "minimum": 5})), json!(5));
        assert_eq!(
            ex(json!({"type": "integer", "minimum": 5, "exclusiveMinimum": true})),
            json!(6)
        );
        assert_eq!(
            ex(json!({"type": "integer", "exclusiveMinimum": 0})),
            json!(1)
        );
        assert_eq!(ex(json!({"type": "number", "maximum": -2})), json!(-2.0));
        assert_eq!(
            ex(json!({"type": "string", "format": "date-time"})),
            json!("2024-01-01T00:00:00Z")
        );
        assert_eq!(
            ex(json!({"type": "string", "minLength": 8})),
            json!("stringxx")
        );
        assert_eq!(ex(json!({"type": "string", "maxLength": 3})), json!("str"));
        assert_eq!(
            ex(json!({"type": "string", "enum": ["b", "a"]})),
            json!("b")
        );
        assert_eq!(ex(json!({"type": ["null", "boolean"]})), json!(true));
        assert_eq!(
            ex(json!({"type": "array", "items": {"type": "integer"}})),
            json!([1])
        );
    }

    #[test]
    fn refs_all_of_and_one_of_are_followed_and_cycles_stop() {
        let d = doc(json!({
            "Named": {"type": "object", "properties": {"name": {"type": "string", "example": "rex"}}},
            "Pet": {"allOf": [
                {"$ref": "#/components/schemas/Named"},
                {"type": "object", "properties": {
                    "id": {"type": "integer", "readOnly": true},
                    "kind": {"oneOf": [{"type": "string", "example": "dog"}, {"type": "integer"}]},
                    "parent": {"$ref": "#/components/schemas/Pet"}
                }}
            ]}
        }));
        let v = example(&d, &json!({"$ref": "#/components/schemas/Pet"}));
        assert_eq!(v, json!({"name": "rex", "kind": "dog", "parent": null}));
    }
}
