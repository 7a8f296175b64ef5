//! Helpers shared by the binary's end-to-end tests.

#![allow(dead_code)]

use std::path::PathBuf;

use loadmark_target::{start, RunningServer, ServerConfig};

/// The `loadmark` binary under test.
pub fn loadmark() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_loadmark"))
}

/// The built-in target on a free loopback port, one thread.
pub fn target() -> RunningServer {
    start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 1,
        ..Default::default()
    })
    .unwrap()
}

/// A fresh, empty directory for one test: `loadmark-<suite>-<name>-<pid>`.
pub fn temp_dir(suite: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loadmark-{suite}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A loopback port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Reads a report the binary wrote, after checking it against `loadmark schema result`: every
/// report the test suite produces must follow the published schema.
pub fn report_json(text: &str) -> Result<loadmark_report::Report, loadmark_report::ReadError> {
    assert_valid(&loadmark_report::result_schema(), text);
    loadmark_report::Report::from_json(text)
}

/// Reads a plan bundle the binary wrote, after checking it against `loadmark schema bundle`.
pub fn bundle_json(text: &str) -> Result<loadmark_report::Bundle, loadmark_report::ReadError> {
    assert_valid(&loadmark_report::bundle_schema(), text);
    loadmark_report::Bundle::from_json(text)
}

fn assert_valid(schema: &serde_json::Value, json: &str) {
    let validator = jsonschema::validator_for(schema).expect("the published schema is valid");
    let instance: serde_json::Value = serde_json::from_str(json).expect("JSON");
    let errors: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "not valid against the published schema:\n{}",
        errors.join("\n")
    );
}
