//! The service's schema as a table, and its `FileDescriptorProto` encoded from it for the
//! reflection service (no protobuf crate: the few fields a descriptor needs are written by
//! hand with [`super::wire`]). crates/target/proto/loadmark_target.proto is the same schema
//! as text.

use super::wire::{field_bytes, field_varint};

pub(crate) const FILE: &str = "loadmark_target.proto";
pub(crate) const PACKAGE: &str = "loadmark.target";
pub(crate) const SERVICE: &str = "loadmark.target.Target";

/// protobuf's field types used here (`FieldDescriptorProto.Type`).
const STRING: u64 = 9;
const INT64: u64 = 3;
const INT32: u64 = 5;

/// A field: name, number, type.
type Field = (&'static str, u64, u64);

/// Each message: its name and fields.
const MESSAGES: &[(&str, &[Field])] = &[
    ("Message", &[("text", 1, STRING), ("seq", 2, INT64)]),
    ("FailRequest", &[("code", 1, INT32), ("message", 2, STRING)]),
    (
        "StreamRequest",
        &[
            ("count", 1, INT32),
            ("interval_ms", 2, INT32),
            ("text", 3, STRING),
        ],
    ),
    ("Summary", &[("messages", 1, INT64), ("bytes", 2, INT64)]),
];

/// Each method: name, input, output, client streaming, server streaming.
pub(crate) const METHODS: &[(&str, &str, &str, bool, bool)] = &[
    ("Echo", "Message", "Message", false, false),
    ("Fail", "FailRequest", "Message", false, false),
    ("Stream", "StreamRequest", "Message", false, true),
    ("Collect", "Message", "Summary", true, false),
    ("Chat", "Message", "Message", true, true),
];

/// Whether reflection should answer `symbol` with the file: the package, the service, one
/// of its methods or messages.
pub(crate) fn defines(symbol: &str) -> bool {
    let Some(rest) = symbol.strip_prefix(PACKAGE) else {
        return false;
    };
    let Some(name) = rest.strip_prefix('.') else {
        return rest.is_empty();
    };
    name == "Target"
        || MESSAGES.iter().any(|(m, _)| *m == name)
        || name
            .strip_prefix("Target.")
            .is_some_and(|method| METHODS.iter().any(|(m, ..)| *m == method))
}

/// The encoded `google.protobuf.FileDescriptorProto`.
pub(crate) fn file_descriptor() -> Vec<u8> {
    let mut file = Vec::new();
    field_bytes(&mut file, 1, FILE.as_bytes());
    field_bytes(&mut file, 2, PACKAGE.as_bytes());
    for (name, fields) in MESSAGES {
        let mut message = Vec::new();
        field_bytes(&mut message, 1, name.as_bytes());
        for (field, number, kind) in *fields {
            let mut f = Vec::new();
            field_bytes(&mut f, 1, field.as_bytes());
            field_varint(&mut f, 3, *number);
            field_varint(&mut f, 4, 1); // LABEL_OPTIONAL
            field_varint(&mut f, 5, *kind);
            field_bytes(&mut f, 10, json_name(field).as_bytes());
            field_bytes(&mut message, 2, &f);
        }
        field_bytes(&mut file, 4, &message);
    }
    let mut service = Vec::new();
    field_bytes(&mut service, 1, b"Target");
    for (name, input, output, client, server) in METHODS {
        let mut m = Vec::new();
        field_bytes(&mut m, 1, name.as_bytes());
        field_bytes(&mut m, 2, format!(".{PACKAGE}.{input}").as_bytes());
        field_bytes(&mut m, 3, format!(".{PACKAGE}.{output}").as_bytes());
        if *client {
            field_varint(&mut m, 5, 1);
        }
        if *server {
            field_varint(&mut m, 6, 1);
        }
        field_bytes(&mut service, 2, &m);
    }
    field_bytes(&mut file, 6, &service);
    field_bytes(&mut file, 12, b"proto3");
    file
}

/// protoc's JSON name: `interval_ms` is `intervalMs`.
fn json_name(field: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in field.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_of_the_service_are_found_and_others_are_not() {
        for s in [
            "loadmark.target",
            "loadmark.target.Target",
            "loadmark.target.Target.Chat",
            "loadmark.target.Summary",
        ] {
            assert!(defines(s), "{s}");
        }
        for s in ["loadmark.targets", "loadmark.target.Nope", "other.Target"] {
            assert!(!defines(s), "{s}");
        }
        assert_eq!(json_name("interval_ms"), "intervalMs");
        assert!(file_descriptor().starts_with(b"\x0a\x15loadmark_target.proto"));
    }
}
