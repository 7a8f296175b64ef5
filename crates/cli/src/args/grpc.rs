//! `loadmark grpc`'s flags (issue 36): ghz's spellings where they do not clash with
//! loadmark's own, and the load and report flags `run` has.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::values::{at_least_one, duration_arg, size_arg};
use super::{rate_arg, ReportFlags, TlsFlags};

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    loadmark grpc 127.0.0.1:50051 --proto helloworld.proto --call helloworld.Greeter/SayHello --data '{\"name\":\"x\"}' -c 50 -d 30s\n  \
    loadmark grpc 127.0.0.1:50051 --call helloworld.Greeter/SayHello --data '{\"name\":\"x\"}' -n 10000\n  \
    loadmark grpc api.example.com:443 --tls --call helloworld.Greeter/SayHello --data '{\"name\":\"x\"}' -n 1000\n  \
    loadmark grpc localhost:50051 --cacert ca.pem --cert client.pem --key client.key --call helloworld.Greeter/SayHello -n 1000\n  \
    loadmark grpc 127.0.0.1:50051 --protoset greeter.protoset --call helloworld.Greeter.SayHello -D req.json -R 500 -d 10s -m '{\"authorization\":\"Bearer t\"}'\n  \
    loadmark grpc 127.0.0.1:50051 --proto route_guide.proto --call routeguide.RouteGuide/ListFeatures --data @rect.json --stream-call-count 10 -c 4 -n 100\n  \
    loadmark grpc 127.0.0.1:50051 --proto route_guide.proto --call routeguide.RouteGuide/RecordRoute --data '[{\"latitude\":1},{\"latitude\":2}]' --stream-call-count 20 --stream-interval 50ms -c 10 -d 30s\n\n\
    Without --proto or --protoset the server's reflection service describes the method. Each \
    call ends as one response counted by its grpc-status name (OK, UNAVAILABLE, ...; non-OK \
    ones are failed calls), or as a transport error also counted under the status a gRPC \
    client gives it (a passed --timeout is DEADLINE_EXCEEDED, a RST_STREAM goes by its code, a \
    lost connection is UNAVAILABLE). --data may hold per-call placeholders ({{seq}}, \
    {{rand_int LO HI}}, {{csv COLUMN}} of --csv FILE, ...): each call's JSON is rendered, then \
    encoded. Plaintext HTTP/2 (h2c) is spoken unless \
    --tls, an https:// target, --cacert, --cert or --skip-verify asks for TLS; ghz's --insecure \
    (plaintext) is accepted. -d is loadmark's duration: the request is --data (ghz's -d).\n\n\
    Streaming methods (the schema says which): a client or bidi stream sends the --data array's \
    messages (a single object is one message), --stream-call-count of them cycling through the \
    array, all in one body, or one per --stream-interval, until the count is sent or \
    --stream-call-duration is over; then it half-closes and waits for the trailers. A server \
    stream reads every response message to the trailers, or loadmark cancels it \
    (RST_STREAM CANCEL) after --stream-call-count messages or --stream-call-duration: such a \
    call has no grpc-status; it is counted as 'ended by loadmark', a complete call and not a \
    failure (ghz reports it as a CANCELLED error). A call's latency is its total, from its \
    HEADERS to its trailers (or the cancel); the report gives time to first response message \
    and the gap between messages apart, and the messages sent and received per call. \
    --timeout counts after --stream-call-duration (or the paced sending) is over.")]
pub struct GrpcArgs {
    /// The server, HOST:PORT
    pub target: String,

    /// The method: package.Service/Method (or package.Service.Method)
    #[arg(long = "call", help_heading = "Call")]
    pub call: String,

    /// A .proto file describing the method (repeatable), compiled at run time
    #[arg(long = "proto", help_heading = "Call", value_name = "FILE")]
    pub proto: Vec<PathBuf>,

    /// Folders the .proto files' imports are found under (comma-separated, repeatable)
    #[arg(
        short = 'i',
        long = "import-paths",
        help_heading = "Call",
        value_delimiter = ','
    )]
    pub import_paths: Vec<PathBuf>,

    /// A compiled FileDescriptorSet (protoc --descriptor_set_out --include_imports)
    #[arg(
        long = "protoset",
        help_heading = "Call",
        value_name = "FILE",
        conflicts_with = "proto"
    )]
    pub protoset: Option<PathBuf>,

    /// The request message as JSON (the proto3 JSON mapping), or @FILE [default: {}]; may
    /// hold per-call placeholders: {{seq}}, {{rand_int LO HI}}, {{rand_f LO HI}},
    /// {{segment}}, {{csv COLUMN}}
    #[arg(long = "data", help_heading = "Call", value_name = "JSON")]
    pub data: Option<String>,

    /// The request message as JSON, read from FILE
    #[arg(
        short = 'D',
        long = "data-file",
        help_heading = "Call",
        value_name = "FILE",
        conflicts_with = "data"
    )]
    pub data_file: Option<PathBuf>,

    /// A CSV file whose rows feed {{csv COLUMN}} in --data, one row per call, going round
    /// (its first line names the columns)
    #[arg(long = "csv", help_heading = "Call", value_name = "FILE")]
    pub csv: Option<PathBuf>,

    /// Metadata sent with every call, a JSON object of strings, e.g. '{"authorization":"Bearer t"}'
    #[arg(
        short = 'm',
        long = "metadata",
        help_heading = "Call",
        value_name = "JSON"
    )]
    pub metadata: Option<String>,

    /// Plaintext HTTP/2, no TLS (ghz's meaning; plaintext is the default without --tls, an
    /// https:// target or a TLS file). To skip certificate checks over TLS: --skip-verify
    #[arg(long = "insecure", help_heading = "TLS")]
    pub insecure: bool,

    /// Speak TLS (HTTP/2 over TLS, ALPN h2), verifying the server's certificate against the
    /// Mozilla roots (or --cacert) and its name against HOST; also implied by an https://
    /// target, --cacert, --cert or --skip-verify
    #[arg(long = "tls", help_heading = "TLS")]
    pub tls: bool,

    /// TLS without verifying the server's certificate chain and name (ghz's --skipTLS; the
    /// connection is still encrypted, and --cert is still presented)
    #[arg(
        long = "skip-verify",
        visible_alias = "skip-tls",
        alias = "skipTLS",
        help_heading = "TLS"
    )]
    pub skip_verify: bool,

    /// The server name TLS sends (SNI) and verifies the certificate against, instead of
    /// HOST (ghz's --cname): for a server reached by address or through another name
    #[arg(long = "cname", help_heading = "TLS", value_name = "NAME")]
    pub cname: Option<String>,

    #[command(flatten)]
    pub tls_files: TlsFlags,

    /// Concurrent connections (closed loop: each keeps --streams calls open) [default: 50]
    #[arg(short = 'c', long = "connections", help_heading = "Load", value_parser = at_least_one, allow_negative_numbers = true)]
    pub connections: Option<usize>,

    /// Calls open at once on each connection [default: 1]
    #[arg(long = "streams", help_heading = "Load", value_parser = at_least_one)]
    pub streams: Option<usize>,

    /// Open loop: this many calls per second (ghz's --rps)
    #[arg(short = 'R', long = "rate", visible_alias = "rps", value_name = "RATE", help_heading = "Load", value_parser = rate_arg)]
    pub rate: Option<f64>,

    /// A schedule, as `loadmark run` takes it: call rates (open loop), e.g.
    /// '10s:0->500,30s:500', or, with -c, connection counts (closed loop), e.g. -c 1 --stages
    /// '30s:50'. DURATION:TO ramps from the previous value (the first from -R, -c, or 0)
    #[arg(long = "stages", help_heading = "Load", value_name = "STAGES", conflicts_with_all = ["duration", "requests"])]
    pub stages: Option<String>,

    /// Stop after this long, e.g. 30s (ghz's -z). Not the request: that is --data
    #[arg(
        short = 'd',
        short_alias = 'z',
        long = "duration",
        help_heading = "Load",
        allow_hyphen_values = true
    )]
    pub duration: Option<String>,

    /// Stop after this many calls (ghz's -n)
    #[arg(short = 'n', long = "requests", visible_alias = "total", help_heading = "Load", value_parser = at_least_one)]
    pub requests: Option<usize>,

    /// Load threads [default: the usable CPUs]
    #[arg(short = 't', long = "threads", help_heading = "Load", value_parser = at_least_one)]
    pub threads: Option<usize>,

    /// Each call's deadline, sent as grpc-timeout too
    #[arg(long = "timeout", help_heading = "Load", value_parser = duration_arg, default_value = "10s")]
    pub timeout: Duration,

    /// The longest response message a call accepts, e.g. 16MiB (ghz's); a longer one ends
    /// its call as RESOURCE_EXHAUSTED [default: 4MiB, gRPC's]
    #[arg(long = "max-recv-message-size", help_heading = "Load", value_name = "BYTES", value_parser = size_arg)]
    pub max_recv_message_size: Option<usize>,

    /// Streaming calls: request messages a client or bidi stream sends; response messages after which loadmark cancels a server stream (ghz's)
    #[arg(long = "stream-call-count", visible_alias = "stream-count", help_heading = "Streams", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub stream_count: Option<u32>,

    /// Streaming calls: a client or bidi stream sends until this long, then half-closes (needs --stream-interval); a server stream is cancelled then (ghz's)
    #[arg(long = "stream-call-duration", visible_alias = "stream-duration", help_heading = "Streams", value_name = "DURATION", value_parser = duration_arg)]
    pub stream_duration: Option<Duration>,

    /// Client and bidi streams: one request message per interval, each its own DATA frame, e.g. 100ms (ghz's)
    #[arg(long = "stream-interval", help_heading = "Streams", value_name = "DURATION", value_parser = duration_arg)]
    pub stream_interval: Option<Duration>,

    #[command(flatten)]
    pub report: ReportFlags,
}
