//! `loadmark ws`'s flags: messages, sessions and their load, beside the TLS and report flags
//! it shares with `run` (their plan is built in `plan.rs`).

use std::time::Duration;

use clap::Args;
use loadmark_plan::WsMode;

use super::values::{at_least_one, at_least_one_u64, duration_arg, header_arg, mode_arg};
use super::{check_arg, rate_arg, ReportFlags, TlsFlags};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    loadmark ws ws://127.0.0.1:8080/ws/echo --sessions 400 --session-duration 10s --interval 5ms --payload 128..4096 -d 20s\n  \
    loadmark ws ws://127.0.0.1:8080/ws/json --sessions 10 -n 2000 --message '{\"id\":{{seq}},\"lat\":{{rand_f 30 45}}}' --reply-match id\n  \
    loadmark ws wss://host/ws --interval 100ms --ping 1s\n\n\
    Round-trip latency runs from a message's intended send time (echo mode: its place on the \
    --interval schedule; request mode: when it was written) to the last byte of its answer. \
    The handshake figure (connect) covers TCP, TLS and the upgrade until the 101 was read.")]
pub struct WsArgs {
    /// The WebSocket URL (ws:// or wss://)
    pub url: String,

    /// What each session does: echo (send every --interval, match each echo), request (send,
    /// wait for the reply, repeat), send (send every --interval, count what comes back),
    /// receive (send nothing, count what arrives) [default: echo with --interval, else request]
    #[arg(long = "mode", help_heading = "Messages", value_parser = mode_arg)]
    pub mode: Option<WsMode>,

    /// Concurrent sessions (virtual users) [default: 50]
    #[arg(short = 'c', long = "sessions", help_heading = "Load", visible_alias = "connections", value_parser = at_least_one, allow_negative_numbers = true)]
    pub sessions: Option<usize>,

    /// Each session sends one message every INTERVAL on a fixed schedule (echo, send)
    #[arg(short = 'i', long = "interval", help_heading = "Messages", value_parser = duration_arg)]
    pub interval: Option<Duration>,

    /// Messages per second over all sessions, on a fixed schedule (an open loop: messages go
    /// out whether or not earlier ones were answered): each of the -c sessions sends every
    /// c/RATE, e.g. -c 20 -R 2000 is a message every 10 ms per session (echo, send)
    #[arg(short = 'R', long = "rate", value_name = "RATE", help_heading = "Messages", value_parser = rate_arg, conflicts_with = "interval")]
    pub rate: Option<f64>,

    /// Size of each message in bytes, or a range drawn uniformly per message: 1024,
    /// 128..4096, 1k..4k [default: 128]. The first 16 bytes carry the message's number
    #[arg(
        long = "payload",
        help_heading = "Messages",
        conflicts_with = "message"
    )]
    pub payload: Option<String>,

    /// A text message template instead of random payloads: {{seq}}, {{rand_int A B}},
    /// {{rand_f A B}}
    #[arg(short = 'M', long = "message", help_heading = "Messages")]
    pub message: Option<String>,

    /// Send binary frames (random bytes) instead of text frames (random letters)
    #[arg(long = "binary", help_heading = "Messages", conflicts_with = "message")]
    pub binary: bool,

    /// Request mode: a reply counts only when this JSON field equals the request's, e.g.
    /// --reply-match id with '"id":{{seq}}' in --message
    #[arg(long = "reply-match", help_heading = "Messages", value_name = "FIELD")]
    pub reply_match: Option<String>,

    /// Request mode: check every reply (repeatable), as `run --check` checks responses: a
    /// reply that fails is answered (its round trip is recorded) and counted apart from
    /// errors, with the first failing reply. A reply has a body but no status or headers:
    /// 'json /status == 200', 'body contains "ok"', 'body size > 0', 'latency < 10ms'
    #[arg(long = "check", help_heading = "Checks", value_name = "EXPR", value_parser = check_arg)]
    pub checks: Vec<loadmark_plan::Check>,

    /// Session counts over time instead of a fixed -c: DURATION:COUNT stages, ramping from
    /// -c (or 0), e.g. --stages '10s:100,30s:100,5s:0'. New sessions open every 100 ms as
    /// the count grows; surplus ones close politely (Close 1000) as it falls
    #[arg(long = "stages", help_heading = "Load", conflicts_with_all = ["duration", "requests"])]
    pub stages: Option<String>,

    /// End each session after this long and open a new one in its place (k6's VU loop)
    /// [default: sessions last the whole run]
    #[arg(long = "session-duration", help_heading = "Load", value_parser = duration_arg)]
    pub session_duration: Option<Duration>,

    /// Send a ping every PING and time its pong
    #[arg(long = "ping", help_heading = "Messages", value_parser = duration_arg)]
    pub ping: Option<Duration>,

    /// Worker threads, each with its own event loop [default: CPU cores, at most -c]
    #[arg(short = 't', long = "threads", help_heading = "Load")]
    pub threads: Option<usize>,

    /// How long to run, e.g. 30s, 2m [default: 10s unless -n is given]
    #[arg(short = 'd', long = "duration", help_heading = "Load", value_parser = duration_arg, conflicts_with = "requests")]
    pub duration: Option<Duration>,

    /// Send exactly this many messages in all, then stop
    #[arg(short = 'n', long = "messages", help_heading = "Load", visible_alias = "requests", value_parser = at_least_one_u64, allow_negative_numbers = true)]
    pub requests: Option<u64>,

    /// Add a header to the upgrade request, 'Name: value' (repeatable)
    #[arg(short = 'H', long = "header", help_heading = "Messages", value_parser = header_arg)]
    pub headers: Vec<(String, String)>,

    /// How long a message may wait for its echo or reply
    #[arg(long = "timeout", help_heading = "Load", value_parser = duration_arg, default_value = "10s")]
    pub timeout: Duration,

    /// Timeout of each handshake (TCP, TLS and upgrade) [default: --timeout]
    #[arg(long = "connect-timeout", help_heading = "Load", value_parser = duration_arg)]
    pub connect_timeout: Option<Duration>,

    /// Go through this proxy, as `run -x`: an HTTP proxy's CONNECT tunnel
    /// (http://[USER:PASSWORD@]HOST:PORT) or SOCKS5 (socks5://, socks5h://) [default:
    /// $http_proxy/$HTTP_PROXY for ws://, $https_proxy/$HTTPS_PROXY for wss://, then
    /// $ALL_PROXY; hosts on $NO_PROXY go direct, loopback is NOT exempt, as in curl]. The
    /// handshake time then includes the tunnel's set-up; the report names the proxy
    #[arg(
        short = 'x',
        long = "proxy",
        value_name = "URL",
        help_heading = "Protocol"
    )]
    pub proxy: Option<String>,

    /// Run load first for this long (whole seconds) without counting it
    #[arg(long = "warmup", help_heading = "Load", value_parser = duration_arg)]
    pub warmup: Option<Duration>,

    /// Do not verify TLS certificates (printed in the report)
    #[arg(long = "insecure", help_heading = "TLS")]
    pub insecure: bool,

    #[command(flatten)]
    pub tls: TlsFlags,

    #[command(flatten)]
    pub report: ReportFlags,
}
