//! The protocol summary (issue 16): what carried the requests, the server's stream limit and
//! requests per connection, in JSON (valid against the published schema), text, Markdown and
//! HTML.

mod common;

use loadmark_metrics::ConnectionSpread;
use loadmark_plan::Http2;
use loadmark_report::{
    render_html, render_json, render_markdown, render_text, Bundle, ProtocolSummary, Report,
};

fn http2_report() -> Report {
    let mut r = common::report_of(2, 100, &[300, 500], 0, 0);
    r.plan.protocol.http2 = Some(Http2 {
        streams: 10,
        fallback: false,
    });
    r.summary.protocol = Some(ProtocolSummary {
        used: "HTTP/2".into(),
        http2_fallback: None,
        streams_per_connection: Some(10),
        server_max_concurrent_streams: Some(4),
        pipeline: None,
        requests_per_connection: Some(ConnectionSpread {
            connections: 4,
            min: 40,
            median: 50,
            mean: 50.0,
            max: 60,
        }),
    });
    r
}

#[test]
fn the_stream_limit_and_requests_per_connection_are_in_every_form() {
    let r = http2_report();
    let json = render_json(&r);
    assert!(
        json.contains("\"server_max_concurrent_streams\": 4"),
        "{json}"
    );
    assert!(json.contains("\"median\": 50"), "{json}");
    common::assert_valid_report(&json);
    assert_eq!(Report::from_json(&json).unwrap(), r, "JSON round-trips");

    let text = render_text(&r);
    assert!(
        text.contains(
            "HTTP/2, 10 streams per connection, 50.0 requests per connection \
             (min 40, median 50, max 60; 4 connections)"
        ),
        "{text}"
    );
    assert!(
        text.contains("the server allowed 4 concurrent streams per connection"),
        "{text}"
    );

    // The page says it too, in the text's words (issue 20).
    let html = render_html(&r);
    assert!(
        html.contains(
            "<tr><th>Protocol</th><td>HTTP/2, 10 streams per connection, 50.0 requests per \
             connection (min 40, median 50, max 60; 4 connections); the server allowed 4 \
             concurrent streams per connection"
        ),
        "{html}"
    );

    let md = render_markdown(&Bundle::of_report(r));
    assert!(md.contains("## Protocol"), "{md}");
    assert!(
        md.contains("SETTINGS_MAX_CONCURRENT_STREAMS") && md.contains("median 50"),
        "{md}"
    );
}

#[test]
fn a_fallback_says_http1_was_used_and_why() {
    let mut r = http2_report();
    r.plan.protocol.http2 = Some(Http2 {
        streams: 10,
        fallback: true,
    });
    r.summary.protocol = Some(ProtocolSummary {
        used: "HTTP/1.1".into(),
        http2_fallback: Some("the server chose http/1.1 with ALPN".into()),
        streams_per_connection: None,
        server_max_concurrent_streams: None,
        pipeline: None,
        requests_per_connection: None,
    });
    let json = render_json(&r);
    common::assert_valid_report(&json);
    assert!(json.contains("\"used\": \"HTTP/1.1\""), "{json}");
    assert!(
        json.contains("\"fallback\": true"),
        "the plan keeps what was asked: {json}"
    );
    let text = render_text(&r);
    assert!(text.contains("\n  HTTP/1.1\n"), "{text}");
    assert!(
        text.contains("HTTP/2 not offered, so HTTP/1.1 was used (--http2-fallback)"),
        "{text}"
    );
    assert!(!text.contains("streams per connection"), "{text}");
    let html = render_html(&r);
    assert!(
        html.contains(
            "<tr><th>Protocol</th><td>HTTP/1.1; HTTP/2 not offered, so HTTP/1.1 was used \
             (--http2-fallback): the server chose http/1.1 with ALPN</td></tr>"
        ),
        "{html}"
    );
}

#[test]
fn merged_reports_keep_the_lowest_limit_and_drop_the_median() {
    let a = http2_report();
    let mut b = http2_report();
    b.summary
        .protocol
        .as_mut()
        .unwrap()
        .server_max_concurrent_streams = Some(2);
    let merged = loadmark_report::merge_reports(&[a, b]).unwrap();
    let p = merged.summary.protocol.unwrap();
    assert_eq!(p.used, "HTTP/2");
    assert_eq!(p.server_max_concurrent_streams, Some(2));
    assert_eq!(p.requests_per_connection, None);
}

#[test]
fn a_report_without_the_summary_still_says_what_the_plan_asked() {
    let mut r = http2_report();
    r.summary.protocol = None;
    let json = render_json(&r);
    assert!(!json.contains("\"protocol\": {\n      \"used\""), "{json}");
    let text = render_text(&r);
    assert!(text.contains("HTTP/2, 10 streams per connection"), "{text}");
    let html = render_html(&r);
    assert!(
        html.contains("<tr><th>Protocol</th><td>HTTP/2, 10 streams per connection"),
        "{html}"
    );
}

#[test]
fn a_plain_http1_run_says_its_requests_per_connection_on_the_page() {
    let mut r = common::report_of(2, 100, &[300, 500], 0, 0);
    assert!(
        !render_html(&r).contains("<th>Protocol</th>"),
        "nothing to say without the summary"
    );
    r.summary.protocol = Some(ProtocolSummary {
        used: "HTTP/1.1".into(),
        http2_fallback: None,
        streams_per_connection: None,
        server_max_concurrent_streams: None,
        pipeline: None,
        requests_per_connection: Some(ConnectionSpread {
            connections: 3,
            min: 66,
            median: 67,
            mean: 66.7,
            max: 67,
        }),
    });
    let line = "HTTP/1.1, 66.7 requests per connection (min 66, median 67, max 67; 3 connections)";
    assert!(render_text(&r).contains(&format!("\n  {line}\n")));
    let html = render_html(&r);
    assert!(
        html.contains(&format!("<tr><th>Protocol</th><td>{line}</td></tr>")),
        "{html}"
    );
}
