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

/// A port that refuses connections for as long as the socket lives: bound, never listening,
/// so no other test can take it meanwhile.
pub fn refusing_port() -> (std::net::TcpStream, u16) {
    // SAFETY: plain syscalls on a socket this function owns.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        let sock = <std::net::TcpStream as std::os::fd::FromRawFd>::from_raw_fd(fd);
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        assert_eq!(
            libc::bind(fd, &addr as *const _ as *const libc::sockaddr, len),
            0
        );
        let mut bound: libc::sockaddr_in = std::mem::zeroed();
        let mut blen = len;
        libc::getsockname(fd, &mut bound as *mut _ as *mut libc::sockaddr, &mut blen);
        (sock, u16::from_be(bound.sin_port))
    }
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
