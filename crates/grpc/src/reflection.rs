//! The server reflection service (`grpc.reflection.v1.ServerReflection`, and v1alpha when
//! v1 is UNIMPLEMENTED): the files that describe a service, asked for before the load.
//!
//! The service is one bidirectional stream; loadmark sends each round's requests in one
//! request body (several length-prefixed messages, then END_STREAM) and reads the answers:
//! first `file_containing_symbol` for the service, then `file_by_filename` for every
//! dependency not yet known, until none is missing.

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::Message;

use crate::schema::{split_call, Schema};

/// Why reflection gave no schema.
#[derive(Debug, thiserror::Error)]
pub enum ReflectionError {
    /// The server could not be reached or the call failed on the way.
    #[error("server reflection at {addr}: {why}")]
    Transport { addr: String, why: String },
    /// The server answered with a gRPC status (UNIMPLEMENTED: it has no reflection; give
    /// `--proto` or `--protoset`).
    #[error("server reflection at {addr}: {status} {message}{hint}")]
    Status {
        addr: String,
        status: String,
        message: String,
        hint: &'static str,
    },
    /// The answers were not what the reflection protocol says.
    #[error("server reflection at {addr}: {why}")]
    Answer { addr: String, why: String },
}

impl ReflectionError {
    fn answer(addr: &str, why: impl Into<String>) -> Self {
        ReflectionError::Answer {
            addr: addr.into(),
            why: why.into(),
        }
    }
}

#[derive(Clone, PartialEq, Message)]
struct Request {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(oneof = "Ask", tags = "3, 4")]
    ask: Option<Ask>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Ask {
    #[prost(string, tag = "3")]
    FileByFilename(String),
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
}

#[derive(Clone, PartialEq, Message)]
struct Response {
    #[prost(oneof = "Answer", tags = "4, 7")]
    answer: Option<Answer>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Answer {
    #[prost(message, tag = "4")]
    Files(FileDescriptorResponse),
    #[prost(message, tag = "7")]
    Error(ErrorResponse),
}

#[derive(Clone, PartialEq, Message)]
struct FileDescriptorResponse {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct ErrorResponse {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

const V1: &str = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
const V1ALPHA: &str = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

/// The schema of `call`'s service, from the reflection service at `addr` (`host:port`,
/// plaintext HTTP/2), within `timeout`.
pub fn schema_for(addr: &str, call: &str, timeout: Duration) -> Result<Schema, crate::SchemaError> {
    let connect = async move {
        tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect: {e}"))
    };
    schema_over(addr, call, timeout, connect)
}

/// As [`schema_for`], over the stream `connect` opens (a TLS connection that offered `h2`,
/// with the trust and client certificate of the run): this crate speaks HTTP/2 over it and
/// leaves how to reach the server to the caller.
pub fn schema_over<S, F>(
    addr: &str,
    call: &str,
    timeout: Duration,
    connect: F,
) -> Result<Schema, crate::SchemaError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    F: std::future::Future<Output = Result<S, String>>,
{
    let (service, _) = split_call(call)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| crate::SchemaError::Proto(format!("server reflection: {e}")))?;
    let fetched = runtime.block_on(async {
        tokio::time::timeout(timeout, fetch(addr, service, connect))
            .await
            .unwrap_or_else(|_| {
                Err(ReflectionError::Transport {
                    addr: addr.into(),
                    why: format!("no answer within {timeout:?} (--timeout)"),
                })
            })
    });
    fetched.map_err(|e| crate::SchemaError::Proto(e.to_string()))
}

async fn fetch<S>(
    addr: &str,
    service: &str,
    connect: impl std::future::Future<Output = Result<S, String>>,
) -> Result<Schema, ReflectionError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let transport = |why: String| ReflectionError::Transport {
        addr: addr.into(),
        why,
    };
    let stream = connect.await.map_err(transport)?;
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .map_err(|e| transport(format!("HTTP/2: {e}")))?;
    tokio::spawn(conn);
    let mut path = V1;
    let mut asks = vec![Ask::FileContainingSymbol(service.to_string())];
    let mut files: Vec<prost_types::FileDescriptorProto> = Vec::new();
    let mut known = BTreeSet::new();
    while !asks.is_empty() {
        let answers = match round(&mut sender, addr, path, &asks).await {
            Err(ReflectionError::Status { status, .. })
                if status == "UNIMPLEMENTED" && path == V1 =>
            {
                path = V1ALPHA;
                continue;
            }
            other => other?,
        };
        asks.clear();
        for answer in answers {
            match answer.answer {
                Some(Answer::Files(f)) => {
                    for bytes in f.file_descriptor_proto {
                        let file = prost_types::FileDescriptorProto::decode(bytes.as_slice())
                            .map_err(|e| {
                                ReflectionError::answer(
                                    addr,
                                    format!("a file descriptor that does not decode: {e}"),
                                )
                            })?;
                        if known.insert(file.name().to_string()) {
                            files.push(file);
                        }
                    }
                }
                Some(Answer::Error(e)) => {
                    return Err(ReflectionError::answer(
                        addr,
                        format!("{} (code {})", e.error_message, e.error_code),
                    ))
                }
                None => {
                    return Err(ReflectionError::answer(
                        addr,
                        "an answer with neither files nor an error",
                    ))
                }
            }
        }
        // Dependencies not sent yet (servers need not send them with the file).
        let missing: BTreeSet<String> = files
            .iter()
            .flat_map(|f| f.dependency.iter().cloned())
            .filter(|d| !known.contains(d))
            .collect();
        for name in missing {
            known.insert(name.clone());
            asks.push(Ask::FileByFilename(name));
        }
    }
    Schema::from_files(files).map_err(|why| ReflectionError::answer(addr, why))
}

/// One call on the reflection stream: `asks` sent, every answer read.
async fn round(
    sender: &mut hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    addr: &str,
    path: &str,
    asks: &[Ask],
) -> Result<Vec<Response>, ReflectionError> {
    let transport = |why: String| ReflectionError::Transport {
        addr: addr.into(),
        why,
    };
    let mut body = Vec::new();
    for ask in asks {
        let message = Request {
            host: String::new(),
            ask: Some(ask.clone()),
        }
        .encode_to_vec();
        body.push(0);
        body.extend_from_slice(&(message.len() as u32).to_be_bytes());
        body.extend_from_slice(&message);
    }
    let request = http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| transport(e.to_string()))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| transport(e.to_string()))?;
    let (head, body) = response.into_parts();
    let collected = body.collect().await.map_err(|e| transport(e.to_string()))?;
    let trailers = collected.trailers().cloned().unwrap_or_default();
    let bytes = collected.to_bytes();
    let field = |name: &str| {
        trailers
            .get(name)
            .or_else(|| head.headers.get(name))
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    let status = field("grpc-status").and_then(|s| s.parse::<u32>().ok());
    if status != Some(0) {
        let status = match status {
            Some(code) => loadmark_metrics::grpc_code_name(code),
            None => format!("HTTP {} without grpc-status", head.status.as_u16()),
        };
        let hint = if status == "UNIMPLEMENTED" {
            " (the server has no reflection service: give --proto or --protoset)"
        } else {
            ""
        };
        return Err(ReflectionError::Status {
            addr: addr.into(),
            status,
            message: field("grpc-message").unwrap_or_default(),
            hint,
        });
    }
    let mut answers = Vec::new();
    let mut rest = &bytes[..];
    while rest.len() >= 5 {
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        if rest[0] != 0 || rest.len() < 5 + len {
            return Err(ReflectionError::answer(
                addr,
                "a response message that is compressed or cut",
            ));
        }
        let answer = Response::decode(&rest[5..5 + len]).map_err(|e| {
            ReflectionError::answer(addr, format!("an answer that does not decode: {e}"))
        })?;
        answers.push(answer);
        rest = &rest[5 + len..];
    }
    Ok(answers)
}
