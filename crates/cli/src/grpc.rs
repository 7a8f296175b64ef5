//! `loadmark grpc` (issue 36): the method's schema found (a .proto compiled at run time, a
//! protoset, or the server's reflection), the request encoded once from JSON, and the run
//! made as `run --http2` would make it: a POST of the length-prefixed message with gRPC's
//! headers. The engine counts each call by its `grpc-status` (`loadmark_engine`'s gRPC
//! driver), so every report format and flag of `run` works as it does there.

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;
use std::time::Duration;

use std::path::PathBuf;
use std::sync::Arc;

use loadmark_grpc::{Method, Schema, Source};
use loadmark_plan::{
    parse_csv, BodyEncoder, CarriedGrpcSchema, GrpcStreaming, RenderContext, Template,
};

use crate::args::{Cli, Command, GrpcArgs};
use crate::UsageError;

pub fn grpc(mut args: GrpcArgs) -> Result<ExitCode> {
    let (target, https) = target_of(&args.target)?;
    let tls = tls_of(&args, https)?;
    if let (Some(name), None) = (&args.cname, &tls) {
        return Err(UsageError(format!(
            "--cname {name}: the server name is TLS's, and this call is plaintext; add --tls \
             (or --cacert FILE, an https:// target) to speak TLS with that name"
        ))
        .into());
    }
    let duration = match &args.duration {
        Some(text) if looks_like_data(text) => {
            return Err(UsageError(format!(
                "-d {text}: -d is loadmark's duration (ghz's -z); give the request message as \
                 --data '{text}' (or -D FILE)"
            ))
            .into())
        }
        Some(text) => Some(text.clone()),
        None => None,
    };
    let json = request_json(&args)?;
    let per_call = per_call(&json, args.csv.as_deref())?;
    let schema = if let Some(set) = &args.protoset {
        Schema::load(&Source::Protoset(set.clone()))
    } else if !args.proto.is_empty() {
        Schema::load(&Source::Proto {
            files: args.proto.clone(),
            imports: args.import_paths.clone(),
        })
    } else if let Some(policy) = &tls {
        let (host, addr) = resolved(&target)?;
        let host = args.cname.clone().unwrap_or(host);
        let timeout = args.timeout;
        let connect = async move {
            loadmark_engine::transport::connect_tls_h2(addr, &host, policy, timeout)
                .await
                .map_err(|e| e.message)
        };
        loadmark_grpc::reflection::schema_over(&target, &args.call, args.timeout, connect)
    } else {
        loadmark_grpc::reflection::schema_for(&target, &args.call, args.timeout)
    }
    .map_err(|e| UsageError(e.to_string()))?;
    let method = schema
        .method(&args.call)
        .map_err(|e| UsageError(e.to_string()))?;
    let streaming = streaming_of(&args, &method)?;
    // With placeholders, the call of seq 0 (and the first data row) is encoded now, so a
    // --data that is no message of the method is refused before any call.
    let first = match &per_call {
        Some(t) => t.first_call(),
        None => json.clone(),
    };
    let body = encoded(&method, streaming.as_ref(), &first).map_err(|e| {
        let which = if per_call.is_some() {
            format!(" (as the first call renders it: {first})")
        } else {
            String::new()
        };
        UsageError(format!("--data{which}: {e}"))
    })?;
    // The deadline counts once the call's planned streaming is over.
    let timeout = args.timeout + streaming.map_or(Duration::ZERO, |s| span(&s, &body));

    let mut argv: Vec<String> = vec![
        "loadmark".into(),
        "run".into(),
        format!(
            "{}://{target}{}",
            if tls.is_some() { "https" } else { "http" },
            method.path()
        ),
        "--http2".into(),
        "-m".into(),
        "POST".into(),
        "-H".into(),
        "content-type: application/grpc".into(),
        "-H".into(),
        "te: trailers".into(),
        "-H".into(),
        format!("grpc-timeout: {}", grpc_timeout(timeout)),
        "--timeout".into(),
        format!("{}ms", timeout.as_millis().max(1)),
    ];
    for (name, value) in metadata(args.metadata.as_deref())? {
        argv.extend(["-H".into(), format!("{name}: {value}")]);
    }
    // The run's --insecure is curl's -k: TLS without verification.
    if args.skip_verify {
        argv.push("--insecure".into());
    }
    let mut flag = |name: &str, value: Option<String>| {
        if let Some(v) = value {
            argv.extend([name.to_string(), v]);
        }
    };
    // TLS: the run's own flags (its --insecure is curl's: skip verification).
    let files = &args.tls_files;
    flag(
        "--cacert",
        files.cacert.as_ref().map(|p| p.display().to_string()),
    );
    flag(
        "--cert",
        files.cert.as_ref().map(|p| p.display().to_string()),
    );
    flag("--key", files.key.as_ref().map(|p| p.display().to_string()));
    flag("-c", args.connections.map(|c| c.to_string()));
    flag("--streams", args.streams.map(|s| s.to_string()));
    flag("-R", args.rate.map(|r| r.to_string()));
    flag("-d", duration);
    flag("-n", args.requests.map(|n| n.to_string()));
    flag("--stages", args.stages.clone());
    flag("-t", args.threads.map(|t| t.to_string()));
    let mut run = match Cli::try_parse_from(&argv) {
        Ok(Cli {
            command: Command::Run(run),
        }) => run,
        Ok(_) => unreachable!("the arguments name `run`"),
        Err(e) => {
            return Err(
                UsageError(e.kind().to_string() + ": " + &first_line(&e.to_string())).into(),
            )
        }
    };
    std::mem::swap(&mut run.report, &mut args.report);
    let mut plan = match &per_call {
        // The JSON is the body's template; each call's rendering is encoded as it is sent.
        Some(t) => {
            let mut plan = run.to_plan(Some(json.into_bytes()))?;
            plan.mix.templated = true;
            plan.mix.data = t.csv.clone();
            plan.mix.encode_body = Some(body_encoder(method, streaming));
            // srun's tasks get the plan as JSON: the schema goes with it (`restore_codecs`).
            plan.mix.grpc_schema = Some(CarriedGrpcSchema {
                call: Some(args.call.clone()),
                descriptor_set: schema.encode(),
            });
            plan
        }
        None => run.to_plan(Some(body))?,
    };
    plan.protocol.grpc = streaming;
    plan.protocol.grpc_max_receive = args.max_recv_message_size;
    plan.protocol.tls_server_name = args.cname.clone();
    crate::commands::run_plan(&plan, &run.report, None)
}

/// How each call of a streaming method streams, from the method's schema and the stream
/// flags; the flags are refused where they mean nothing (a unary method, an interval for a
/// method that takes one request).
fn streaming_of(args: &GrpcArgs, method: &Method) -> Result<Option<GrpcStreaming>> {
    let d = &method.descriptor;
    let (client_streams, server_streams) = (d.is_client_streaming(), d.is_server_streaming());
    let call = &args.call;
    let flags = [
        ("--stream-call-count", args.stream_count.is_some()),
        ("--stream-call-duration", args.stream_duration.is_some()),
        ("--stream-interval", args.stream_interval.is_some()),
    ];
    if !client_streams && !server_streams {
        if let Some((flag, _)) = flags.iter().find(|(_, given)| *given) {
            return Err(UsageError(format!(
                "{flag}: --call {call} is a unary method (one request, one response); the stream flags are for streaming methods"
            ))
            .into());
        }
        return Ok(None);
    }
    for (flag, d) in [
        ("--stream-call-duration", args.stream_duration),
        ("--stream-interval", args.stream_interval),
    ] {
        if d == Some(Duration::ZERO) {
            return Err(UsageError(format!(
                "{flag} 0: expected a duration above zero, e.g. 100ms"
            ))
            .into());
        }
    }
    if !client_streams && args.stream_interval.is_some() {
        return Err(UsageError(format!(
            "--stream-interval: --call {call} takes one request message (server streaming); the interval paces a client or bidi stream's requests. Bound the response stream with --stream-call-count or --stream-call-duration"
        ))
        .into());
    }
    if client_streams && args.stream_duration.is_some() && args.stream_interval.is_none() {
        return Err(UsageError(format!(
            "--stream-call-duration: --call {call} streams requests; sending them for a duration needs --stream-interval (without it, a call's --stream-call-count messages go in one body)"
        ))
        .into());
    }
    Ok(Some(GrpcStreaming {
        client_streams,
        server_streams,
        count: args.stream_count,
        duration: args.stream_duration,
        interval: args.stream_interval,
    }))
}

/// Each call's rendered JSON into its length-prefixed protobuf (a stream's messages for a
/// client-streaming method).
fn body_encoder(method: Method, streaming: Option<GrpcStreaming>) -> BodyEncoder {
    BodyEncoder(Arc::new(move |json, out| {
        let json = std::str::from_utf8(json).map_err(|e| e.to_string())?;
        out.extend(encoded(&method, streaming.as_ref(), json)?);
        Ok(())
    }))
}

/// A plan that came as JSON (`loadmark worker`: one srun task or Kubernetes pod): its
/// templated gRPC message's encoder and its scenario steps' codecs, made again from the
/// schema the plan carries.
pub(crate) fn restore_codecs(plan: &mut loadmark_plan::Plan) -> Result<()> {
    let Some(carried) = plan.mix.grpc_schema.clone() else {
        return Ok(());
    };
    let schema = Schema::decode(&carried.descriptor_set)
        .map_err(|e| UsageError(format!("worker: the plan's gRPC schema: {e}")))?;
    if let (Some(call), None) = (&carried.call, &plan.mix.encode_body) {
        let method = schema
            .method(call)
            .map_err(|e| UsageError(format!("worker: {e}")))?;
        plan.mix.encode_body = Some(body_encoder(method, plan.protocol.grpc));
    }
    crate::grpc_steps::restore(plan, &schema).map_err(|e| UsageError(format!("worker: {e}")))?;
    Ok(())
}

/// The request body of one call from its JSON: one length-prefixed message, or for a client
/// or bidi stream its messages (below); `Err` says why the JSON is no message of the method.
fn encoded(
    method: &Method,
    streaming: Option<&GrpcStreaming>,
    json: &str,
) -> Result<Vec<u8>, String> {
    match streaming {
        Some(spec) if spec.client_streams => stream_body(method, json, spec),
        _ => method.request_body(json).map_err(|e| e.to_string()),
    }
}

/// A client or bidi stream's request body: the `--data` array's messages (one object is one
/// message), each length-prefixed. Paced, one round of them (the connection cycles through
/// it); else `--stream-call-count` of them, cycling through the array.
fn stream_body(method: &Method, json: &str, spec: &GrpcStreaming) -> Result<Vec<u8>, String> {
    let value: serde_json::Value = serde_json::from_str(json).map_err(|e| {
        format!(
            "not JSON ({e}); expected an object, or an array of objects for a stream's messages"
        )
    })?;
    let items = match value {
        serde_json::Value::Array(items) if items.is_empty() => {
            return Err("an empty array: a stream needs at least one message".into())
        }
        serde_json::Value::Array(items) => items,
        one => vec![one],
    };
    let mut round = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let body = method
            .request_body(&item.to_string())
            .map_err(|e| format!("message {}: {e}", i + 1))?;
        round.push(body);
    }
    let n = match (spec.paced(), spec.count) {
        (false, Some(count)) => count as usize,
        _ => round.len(),
    };
    Ok(round.iter().cycle().take(n).flatten().copied().collect())
}

/// Length-prefixed messages in `body`.
fn messages_in(body: &[u8]) -> u32 {
    let (mut n, mut at) = (0, 0);
    while let Some(prefix) = body.get(at..at + 5) {
        at += 5 + u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
        n += 1;
    }
    n
}

/// How long a call streams by plan before its deadline starts counting: the duration, or
/// the paced messages' intervals.
fn span(spec: &GrpcStreaming, body: &[u8]) -> Duration {
    match (spec.duration, spec.interval.filter(|_| spec.client_streams)) {
        (Some(d), _) => d,
        (None, Some(interval)) => {
            let n = spec.count.unwrap_or_else(|| messages_in(body));
            interval * n.saturating_sub(1)
        }
        (None, None) => Duration::ZERO,
    }
}

/// `HOST:PORT`, also given as `http://HOST:PORT`, `https://HOST:PORT` (then TLS: the bool) or
/// `dns:///HOST:PORT` (grpcurl's).
fn target_of(text: &str) -> Result<(String, bool)> {
    let https = text.starts_with("https://");
    let bare = text
        .trim_start_matches("dns:///")
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .trim_end_matches('/');
    match bare.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
            Ok((bare.into(), https))
        }
        _ => Err(UsageError(format!("{text}: expected HOST:PORT, e.g. 127.0.0.1:50051")).into()),
    }
}

/// The TLS policy when the call goes over TLS (--tls, an https:// target, a TLS file or
/// --skip-verify), `None` for plaintext. ghz's --insecure is plaintext, so it is refused
/// beside anything that asks for TLS, naming --skip-verify.
fn tls_of(args: &GrpcArgs, https: bool) -> Result<Option<loadmark_plan::TlsPolicy>> {
    let files = &args.tls_files;
    let asked = [
        ("--tls", args.tls),
        ("an https:// target", https),
        ("--skip-verify", args.skip_verify),
        ("--cacert", files.cacert.is_some()),
        ("--cert", files.cert.is_some()),
    ];
    let Some((why, _)) = asked.iter().find(|(_, given)| *given) else {
        return Ok(None);
    };
    if args.insecure {
        return Err(UsageError(format!(
            "--insecure with {why}: in loadmark grpc (as in ghz) --insecure means plaintext, \
             no TLS; to speak TLS without verifying the server's certificate use --skip-verify"
        ))
        .into());
    }
    let policy = files
        .policy(args.skip_verify)
        .map_err(|e| UsageError(e.to_string()))?;
    Ok(Some(policy))
}

/// The host of `HOST:PORT` (without IPv6 brackets, as TLS verifies it) and its first address,
/// as the run resolves it.
fn resolved(target: &str) -> Result<(String, std::net::SocketAddr)> {
    use std::net::ToSocketAddrs;
    let (host, _) = target.rsplit_once(':').expect("checked by target_of");
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let addr = target
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| UsageError(format!("{target}: the host does not resolve")))?;
    Ok((host, addr))
}

/// ghz's `-d '{...}'` (its data) rather than a duration.
fn looks_like_data(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with('{') || t.starts_with('[') || t.starts_with('@') || t.starts_with('"')
}

fn request_json(args: &GrpcArgs) -> Result<String> {
    let read = |path: &std::path::Path, flag: &str| {
        std::fs::read_to_string(path)
            .map_err(|e| UsageError(format!("{flag} {}: cannot read it: {e}", path.display())))
    };
    Ok(match (&args.data, &args.data_file) {
        (Some(d), _) if d.starts_with('@') => read(std::path::Path::new(&d[1..]), "--data @FILE")?,
        (Some(d), _) => d.clone(),
        (None, Some(path)) => read(path, "-D")?,
        (None, None) => "{}".into(),
    })
}

/// `--data` with per-call placeholders (`{{seq}}`, `{{rand_int LO HI}}`, `{{csv COLUMN}}`,
/// ... as `run`'s templated bodies have them): the template, and the data file's first row.
struct PerCall {
    template: Template,
    first_row: Vec<String>,
    /// `--csv`: its rows feed `{{csv COLUMN}}`, one per call, going round.
    csv: Option<PathBuf>,
}

impl PerCall {
    /// The JSON of the run's first call (seq 0, the first row).
    fn first_call(&self) -> String {
        let mut rng = 1;
        let mut ctx = RenderContext {
            rng: &mut rng,
            seq: 0,
            row: &self.first_row,
            segment: 0,
        };
        let mut out = Vec::new();
        self.template.render(&mut ctx, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// The placeholders of `run`'s templates, as a `{{` of `--data` may open them.
const PLACEHOLDERS: [&str; 5] = ["seq", "segment", "rand_int", "rand_f", "csv"];

fn has_placeholders(json: &str) -> bool {
    let mut rest = json;
    while let Some(open) = rest.find("{{") {
        let Some(close) = rest[open..].find("}}") else {
            return false;
        };
        let inner = &rest[open + 2..open + close];
        if inner
            .split_whitespace()
            .next()
            .is_some_and(|w| PLACEHOLDERS.contains(&w))
        {
            return true;
        }
        rest = &rest[open + close + 2..];
    }
    false
}

/// The per-call template of `--data`, if it has placeholders; `None` leaves the message
/// encoded once for the whole run (no work per call). `--csv` without a `{{csv COLUMN}}` to
/// feed is refused, as its rows would go unused.
fn per_call(json: &str, csv: Option<&std::path::Path>) -> Result<Option<PerCall>> {
    let (columns, rows) = match csv {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                UsageError(format!("--csv {}: cannot read it: {e}", path.display()))
            })?;
            let (columns, rows) = parse_csv(&text)
                .map_err(|e| UsageError(format!("--csv {}: {e}", path.display())))?;
            if rows.is_empty() {
                return Err(UsageError(format!(
                    "--csv {}: no rows under its header line; each call takes the next row",
                    path.display()
                ))
                .into());
            }
            (columns, rows)
        }
        None => (Vec::new(), Vec::new()),
    };
    if !has_placeholders(json) {
        if let Some(path) = csv {
            return Err(UsageError(format!(
                "--csv {}: --data has no {{{{csv COLUMN}}}} placeholder, so the file's rows \
                 would go unused; name a column in the message, e.g. '{{\"name\":\"{{{{csv {}}}}}\"}}'",
                path.display(),
                columns.first().map_or("COLUMN", String::as_str)
            ))
            .into());
        }
        return Ok(None);
    }
    let template = Template::parse(json, "--data", &columns)
        .map_err(|e| UsageError(format!("--data: {e}")))?;
    Ok(Some(PerCall {
        template,
        first_row: rows.into_iter().next().unwrap_or_default(),
        csv: csv.map(|p| p.to_path_buf()),
    }))
}

/// `-m`'s JSON object as header pairs.
fn metadata(json: Option<&str>) -> Result<Vec<(String, String)>> {
    let Some(json) = json else {
        return Ok(Vec::new());
    };
    let bad = |why: String| {
        UsageError(format!("-m/--metadata: {why}; expected a JSON object of strings, e.g. '{{\"authorization\":\"Bearer t\"}}'"))
    };
    let value: serde_json::Value = serde_json::from_str(json).map_err(|e| bad(e.to_string()))?;
    let object = value
        .as_object()
        .ok_or_else(|| bad("not an object".into()))?;
    object
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => Ok((k.to_ascii_lowercase(), s.clone())),
            other => Ok((k.to_ascii_lowercase(), other.to_string())),
        })
        .collect()
}

/// `grpc-timeout`'s form: at most 8 digits and a unit.
fn grpc_timeout(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    if ms < 100_000_000 {
        format!("{}m", ms.max(1))
    } else {
        format!("{}S", (d.as_secs()).min(99_999_999))
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_timeouts_and_ghz_data_are_read_as_ghz_users_mean_them() {
        assert_eq!(
            target_of("127.0.0.1:50051").unwrap(),
            ("127.0.0.1:50051".to_string(), false)
        );
        assert_eq!(
            target_of("dns:///localhost:9").unwrap(),
            ("localhost:9".to_string(), false)
        );
        assert_eq!(
            target_of("https://localhost:9").unwrap(),
            ("localhost:9".to_string(), true)
        );
        assert!(target_of("localhost").is_err());
        assert!(looks_like_data("{\"name\":\"x\"}") && !looks_like_data("30s"));
        assert_eq!(grpc_timeout(std::time::Duration::from_secs(10)), "10000m");
        let pairs = metadata(Some(r#"{"Authorization":"Bearer t","n":1}"#)).unwrap();
        assert_eq!(
            pairs[0],
            ("authorization".to_string(), "Bearer t".to_string())
        );
        assert!(metadata(Some("[1]")).is_err());
        assert!(has_placeholders(r#"{"name":"{{seq}}"}"#));
        assert!(has_placeholders(r#"{"id":{{rand_int 1 9}}}"#));
        assert!(has_placeholders(r#"{"id":"{{ seq }}"}"#));
        assert!(!has_placeholders(
            r#"{"name":"{{ not a placeholder }}","x":"}}{{"}"#
        ));
        let t = per_call(r#"{"id":{{seq}},"n":"a{{seq}}"}"#, None)
            .unwrap()
            .unwrap();
        assert_eq!(t.first_call(), r#"{"id":0,"n":"a0"}"#);
        assert!(
            per_call(r#"{"n":"{{csv x}}"}"#, None).is_err(),
            "no --csv to name x"
        );
    }
}
