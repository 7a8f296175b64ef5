//! Helpers shared by the binary's end-to-end tests.

#![allow(dead_code)]

pub mod mtls;
pub mod prometheus;

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

/// The built-in target speaking HTTP/2 as well (prior knowledge on the same port), on one
/// thread.
pub fn target_h2() -> RunningServer {
    start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 1,
        http2: true,
        ..Default::default()
    })
    .unwrap()
}

// Not every test binary uses every helper.
#[allow(unused_imports)]
pub use loadmark_test_support::{
    is_port_conflict, port, retry_on_port_conflict, wait_until, Daemon, HeldPort, TempDir,
};

/// A fresh, empty directory for one test (`loadmark-<suite>-<name>-XXXXXX`, made by
/// mkdtemp), removed when the returned guard drops unless the test failed.
pub fn temp_dir(suite: &str, name: &str) -> TempDir {
    TempDir::new(&format!("{suite}-{name}"))
}

/// A port that refuses connections for as long as the returned guard lives: bound, never
/// listening, so no other test can take it meanwhile.
pub fn refusing_port() -> (HeldPort, u16) {
    let held = loadmark_test_support::refusing_port();
    let port = held.port;
    (held, port)
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
