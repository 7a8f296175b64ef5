//! `loadmark grpc --data` with per-call placeholders and `--csv` rows (issue 36): each call's
//! JSON is rendered as `run`'s templated bodies are, then encoded to protobuf; the server (a
//! real HTTP/2 server, grpc_support/h2_server.rs) sees each call's own value.

mod common;
#[path = "grpc_support/h2_server.rs"]
mod h2_server;

use common::*;
use h2_server::{bounded_run, codes, hostile_server};

use std::time::Duration;

#[test]
fn placeholders_and_csv_rows_are_rendered_per_call_and_a_bad_rendering_is_refused_first() {
    let (addr, served) = hostile_server();
    let bound = Duration::from_secs(60);
    // {{seq}}: one worker numbers its calls 0, 1, 2, ... whichever of its streams sends them.
    let (report, _) = bounded_run(
        addr,
        "Record",
        &[
            "--data",
            r#"{"name":"call-{{seq}}"}"#,
            "-t",
            "1",
            "-c",
            "2",
            "--streams",
            "2",
            "-n",
            "20",
        ],
        bound,
    );
    assert_eq!(codes(&report)[0].0, "OK");
    assert_eq!(codes(&report)[0].1, 20);
    let mut names = std::mem::take(&mut served.lock().unwrap().names);
    names.sort_by_key(|n| n[5..].parse::<u32>().unwrap_or(u32::MAX));
    let expected: Vec<String> = (0..20).map(|i| format!("call-{i}")).collect();
    assert_eq!(names, expected);

    // --csv: each call takes the next row, going round; placeholders mix.
    let dir = temp_dir("grpc", "csv");
    let csv = dir.path().join("users.csv");
    std::fs::write(&csv, "user,region\nada,eu\nbob,us\ncyd,ap\n").unwrap();
    let csv = csv.display().to_string();
    let (report, _) = bounded_run(
        addr,
        "Record",
        &[
            "--data",
            r#"{"name":"{{csv user}}@{{csv region}}#{{seq}}"}"#,
            "--csv",
            &csv,
            "-t",
            "1",
            "-c",
            "1",
            "-n",
            "6",
        ],
        bound,
    );
    assert_eq!(codes(&report)[0].1, 6);
    let names = std::mem::take(&mut served.lock().unwrap().names);
    assert_eq!(
        names,
        ["ada@eu#0", "bob@us#1", "cyd@ap#2", "ada@eu#3", "bob@us#4", "cyd@ap#5"]
    );

    // Refused before any call: a rendering that is no message of the method, a column the
    // file does not have, a --csv nothing reads.
    let refused = |data: &str, extra: &[&str], words: &str| {
        let mut args = vec!["grpc", "--call", "hostile.Hostile/Record", "--data", data];
        args.extend_from_slice(extra);
        let proto = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/grpc_support/hostile.proto");
        let out = loadmark()
            .args(&args)
            .arg(addr.to_string())
            .arg("--proto")
            .arg(proto)
            .args(["-n", "1"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{data}: {stderr}");
        assert!(stderr.contains(words), "{data}: {stderr}");
    };
    refused(
        r#"{"name":{{seq}}}"#,
        &[],
        r#"--data (as the first call renders it: {"name":0})"#,
    );
    refused(
        r#"{"name":"{{csv nope}}"}"#,
        &["--csv", &csv],
        "{{csv nope}}",
    );
    refused(
        r#"{"name":"x"}"#,
        &["--csv", &csv],
        "--data has no {{csv COLUMN}} placeholder",
    );
    let served = served.lock().unwrap();
    assert_eq!(served.calls.get("Record"), Some(&26), "{served:?}");
}
