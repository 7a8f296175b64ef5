//! `loadmark grpc` (issue 36): the method's schema found (a .proto compiled at run time, a
//! protoset, or the server's reflection), the request encoded once from JSON, and the run
//! made as `run --http2` would make it: a POST of the length-prefixed message with gRPC's
//! headers. The engine counts each call by its `grpc-status` (`loadmark_engine`'s gRPC
//! driver), so every report format and flag of `run` works as it does there.

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;
use loadmark_grpc::{Schema, Source};

use crate::args::{Cli, Command, GrpcArgs};
use crate::UsageError;

pub fn grpc(mut args: GrpcArgs) -> Result<ExitCode> {
    let target = target_of(&args.target)?;
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
    let schema = if let Some(set) = &args.protoset {
        Schema::load(&Source::Protoset(set.clone()))
    } else if !args.proto.is_empty() {
        Schema::load(&Source::Proto {
            files: args.proto.clone(),
            imports: args.import_paths.clone(),
        })
    } else {
        loadmark_grpc::reflection::schema_for(&target, &args.call, args.timeout)
    }
    .map_err(|e| UsageError(e.to_string()))?;
    let method = schema
        .method(&args.call)
        .map_err(|e| UsageError(e.to_string()))?;
    if method.is_streaming() {
        return Err(UsageError(format!(
            "--call {}: a streaming method; this version of loadmark grpc makes unary calls only",
            args.call
        ))
        .into());
    }
    let json = request_json(&args)?;
    let body = method
        .request_body(&json)
        .map_err(|e| UsageError(format!("--data: {e}")))?;

    let mut argv: Vec<String> = vec![
        "loadmark".into(),
        "run".into(),
        format!("http://{target}{}", method.path()),
        "--http2".into(),
        "-m".into(),
        "POST".into(),
        "-H".into(),
        "content-type: application/grpc".into(),
        "-H".into(),
        "te: trailers".into(),
        "-H".into(),
        format!("grpc-timeout: {}", grpc_timeout(args.timeout)),
        "--timeout".into(),
        format!("{}ms", args.timeout.as_millis().max(1)),
    ];
    for (name, value) in metadata(args.metadata.as_deref())? {
        argv.extend(["-H".into(), format!("{name}: {value}")]);
    }
    let mut flag = |name: &str, value: Option<String>| {
        if let Some(v) = value {
            argv.extend([name.to_string(), v]);
        }
    };
    flag("-c", args.connections.map(|c| c.to_string()));
    flag("--streams", args.streams.map(|s| s.to_string()));
    flag("-R", args.rate.map(|r| r.to_string()));
    flag("-d", duration);
    flag("-n", args.requests.map(|n| n.to_string()));
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
    let plan = run.to_plan(Some(body))?;
    crate::commands::run_plan(&plan, &run.report, None)
}

/// `HOST:PORT`, also given as `http://HOST:PORT` or `dns:///HOST:PORT` (grpcurl's).
fn target_of(text: &str) -> Result<String> {
    let bare = text
        .trim_start_matches("dns:///")
        .trim_start_matches("http://")
        .trim_end_matches('/');
    if text.starts_with("https://") {
        return Err(UsageError(format!(
            "{text}: gRPC over TLS is not in this version of loadmark grpc; it speaks plaintext \
             HTTP/2 (h2c) to HOST:PORT"
        ))
        .into());
    }
    match bare.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => Ok(bare.into()),
        _ => Err(UsageError(format!("{text}: expected HOST:PORT, e.g. 127.0.0.1:50051")).into()),
    }
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
        assert_eq!(target_of("127.0.0.1:50051").unwrap(), "127.0.0.1:50051");
        assert_eq!(target_of("dns:///localhost:9").unwrap(), "localhost:9");
        assert!(target_of("localhost").is_err());
        assert!(looks_like_data("{\"name\":\"x\"}") && !looks_like_data("30s"));
        assert_eq!(grpc_timeout(std::time::Duration::from_secs(10)), "10000m");
        let pairs = metadata(Some(r#"{"Authorization":"Bearer t","n":1}"#)).unwrap();
        assert_eq!(
            pairs[0],
            ("authorization".to_string(), "Bearer t".to_string())
        );
        assert!(metadata(Some("[1]")).is_err());
    }
}
