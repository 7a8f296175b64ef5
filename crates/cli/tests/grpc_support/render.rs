//! The gRPC figures of saved reports rendered again by `loadmark report` in Markdown, HTML
//! and CSV (issue 36), for the runs of grpc.rs against the Python grpcio server.

use super::*;

/// `loadmark report` of the saved JSON in `format`.
fn rendered(dir: &Path, report: &serde_json::Value, format: &str) -> String {
    let file = dir.join("saved.json");
    std::fs::write(&file, report.to_string()).unwrap();
    let out = loadmark()
        .args(["report", file.to_str().unwrap(), "--format", format])
        .output()
        .unwrap();
    assert!(out.status.success(), "{format}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// A unary run whose 5 calls ended UNAVAILABLE and a server stream loadmark cancelled after
/// 300 ms, rendered again from their JSON in Markdown, HTML and CSV.
pub(crate) fn renders_the_grpc_figures(
    dir: &Path,
    unary: &serde_json::Value,
    stream: &serde_json::Value,
) {
    // The request: EchoRequest{code: 14} is 2 bytes, EchoRequest{name: "t"} 3.
    let md = rendered(dir, unary, "md");
    assert!(
        md.contains(
            "| 1 target | loadmark.test.Tester/Echo | unary | 5 | 1.0 / 0.0 | 2 B | – | – | – |"
        ),
        "{md}"
    );
    assert!(
        md.contains("| 1 target | UNAVAILABLE | 5 | 100.00% | failing as asked |"),
        "{md}"
    );
    let html = rendered(dir, unary, "html");
    assert!(
        html.contains("<h2>gRPC</h2>")
            && html.contains(
                "<td>UNAVAILABLE</td><td>5</td><td>100.00%</td><td>failing as asked</td>"
            ),
        "{html}"
    );
    let csv = rendered(dir, unary, "csv-summary");
    let cells = |csv: &str| -> Vec<(String, String)> {
        let mut lines = csv.lines();
        let head: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
        let row: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
        assert_eq!(head.len(), row.len(), "{csv}");
        head.into_iter()
            .zip(row)
            .filter(|(h, _)| h.starts_with("grpc_"))
            .collect()
    };
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(h, v)| (h.to_string(), v.to_string()))
            .collect()
    };
    assert_eq!(
        cells(&csv),
        pairs(&[
            ("grpc_method", "loadmark.test.Tester/Echo"),
            ("grpc_calls", "5"),
            ("grpc_not_ok", "5"),
            ("grpc_status", "UNAVAILABLE:5"),
            ("grpc_first_messages", "UNAVAILABLE:failing as asked"),
            ("grpc_messages_sent", "5"),
            ("grpc_messages_received", "0"),
            ("grpc_request_message_bytes", "2.0"),
            ("grpc_ended_by_client", ""),
            ("grpc_first_message_p50_us", ""),
            ("grpc_first_message_p99_us", ""),
            ("grpc_message_gap_p50_us", ""),
            ("grpc_message_gap_p99_us", ""),
        ])
    );

    // The stream: 4 calls ended by loadmark, each with its first message and gaps.
    let md = rendered(dir, stream, "md");
    assert!(
        md.contains("| 1 target | loadmark.test.Tester/Tick | server streaming | 4 | 1.0 / "),
        "{md}"
    );
    assert!(md.contains("| 3 B | 4 | "), "{md}");
    assert!(
        md.contains(
            "a call's latency is the call's total, to its trailers, or to loadmark's cancel"
        ),
        "{md}"
    );
    let html = rendered(dir, stream, "html");
    assert!(
        html.contains("<td>server streaming</td><td>4</td>"),
        "{html}"
    );
    let csv = cells(&rendered(dir, stream, "csv-summary"));
    let get = |name: &str| -> u64 {
        let (_, v) = csv.iter().find(|(h, _)| h == name).unwrap();
        v.parse().unwrap_or_else(|_| panic!("{name}={v:?}"))
    };
    assert_eq!(get("grpc_ended_by_client"), 4);
    assert_eq!(get("grpc_calls"), 4);
    assert_eq!(
        get("grpc_messages_received"),
        stream["summary"]["grpc"]["messages_received"]
            .as_u64()
            .unwrap()
    );
    // A reply every 50 ms: the median gap is near it, the first message comes at once.
    let gap = get("grpc_message_gap_p50_us");
    assert!((30_000..200_000).contains(&gap), "{gap}");
    assert!(get("grpc_first_message_p50_us") < 200_000);
}
