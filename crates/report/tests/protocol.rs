//! The protocol summary (issue 16): what carried the requests, the server's stream limit and
//! requests per connection, in JSON (valid against the published schema), text, Markdown and
//! HTML.

mod common;

use loadmark_metrics::{ConnectionSpread, HandshakeMs, QuicFigures, ZeroRttFigures};
use loadmark_plan::{Http2, Http3};
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
        quic: None,
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
        quic: None,
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
        quic: None,
    });
    let line = "HTTP/1.1, 66.7 requests per connection (min 66, median 67, max 67; 3 connections)";
    assert!(render_text(&r).contains(&format!("\n  {line}\n")));
    let html = render_html(&r);
    assert!(
        html.contains(&format!("<tr><th>Protocol</th><td>{line}</td></tr>")),
        "{html}"
    );
}

#[test]
fn an_http3_run_shows_its_quic_figures_in_text_and_json() {
    let mut r = common::report_of(2, 100, &[300, 500], 0, 0);
    r.plan.protocol.http3 = Some(Http3 {
        streams: 8,
        zero_rtt: false,
    });
    r.summary.protocol = Some(ProtocolSummary {
        used: "HTTP/3".into(),
        http2_fallback: None,
        streams_per_connection: Some(8),
        server_max_concurrent_streams: None,
        pipeline: None,
        requests_per_connection: Some(ConnectionSpread {
            connections: 2,
            min: 50,
            median: 50,
            mean: 50.0,
            max: 50,
        }),
        quic: Some(QuicFigures {
            connections: 3,
            handshake_ms: HandshakeMs {
                min: 1.5,
                mean: 2.0,
                max: 2.5,
            },
            packets_sent: 4000,
            packets_lost: 20,
            bytes_lost: 24_576,
            loss_ratio: 0.005,
            congestion_events: 3,
            cwnd_min_bytes: 12_288,
            cwnd_max_bytes: 61_440,
            rtt_mean_ms: 0.75,
            datagrams_sent: 4000,
            datagrams_received: 5000,
            datagram_mean_bytes_sent: 120.0,
            datagram_mean_bytes_received: 1100.0,
            zero_rtt: Some(ZeroRttFigures {
                connections: 1,
                accepted: 1,
                rejected: 0,
                handshake_ms: Some(HandshakeMs {
                    min: 1.0,
                    mean: 1.0,
                    max: 1.0,
                }),
                requests_early: 4,
                requests_rejected: 0,
            }),
            requests_moved_after_goaway: 2,
        }),
    });
    let json = render_json(&r);
    assert!(json.contains("\"used\": \"HTTP/3\""), "{json}");
    assert!(json.contains("\"packets_lost\": 20"), "{json}");
    assert!(json.contains("\"cwnd_max_bytes\": 61440"), "{json}");
    assert!(json.contains("\"requests_early\": 4"), "{json}");
    assert!(
        json.contains("\"requests_moved_after_goaway\": 2"),
        "{json}"
    );
    common::assert_valid_report(&json);
    assert_eq!(Report::from_json(&json).unwrap(), r, "JSON round-trips");

    let text = render_text(&r);
    assert!(
        text.contains("HTTP/3, 8 streams per connection, 50.0 requests per connection"),
        "{text}"
    );
    assert!(
        text.contains(
            "QUIC: 2 1-RTT handshakes (min 1.50ms, mean 2.00ms, max 2.50ms); 4000 packets sent, \
             20 lost (0.500%, 24.0 KiB), 3 congestion events, congestion window 12.0 KiB to \
             60.0 KiB at close, rtt 0.75ms mean"
        ),
        "{text}"
    );
    assert!(
        text.contains("UDP: 4000 datagrams sent (mean 120 B), 5000 received (mean 1100 B)"),
        "{text}"
    );
    assert!(
        text.contains(
            "0-RTT: 1 connection resumed (1 accepted, 0 rejected, handshake min 1.00ms, \
             mean 1.00ms, max 1.00ms); 4 requests sent early and answered, 0 rejected"
        ),
        "{text}"
    );
    assert!(
        text.contains("moved to a new connection after GOAWAY: 2"),
        "{text}"
    );
    let md = render_markdown(&Bundle::of_report(r));
    assert!(md.contains("QUIC: 2 1-RTT handshakes"), "{md}");
}
