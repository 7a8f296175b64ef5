//! How `loadmark grpc` drives a streaming call (issue 36): the method's shape (from its
//! schema) and the stream flags (`--stream-call-count`, `--stream-call-duration`,
//! `--stream-interval`, ghz's spellings). Unary runs carry none of this.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A streaming method's calls, as the client makes them. The request body holds the
/// length-prefixed request messages of one call (for a client or bidi stream sent at once,
/// all of them; when paced, one round that is cycled through).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GrpcStreaming {
    /// The method takes a stream of requests (client streaming or bidi).
    pub client_streams: bool,
    /// The method answers with a stream of messages (server streaming or bidi).
    pub server_streams: bool,
    /// Client and bidi streams: messages sent per call. Server streaming: the client
    /// cancels the call (RST_STREAM CANCEL) after this many response messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Client and bidi streams: messages are sent until this long after the call opened,
    /// then the stream is half-closed. Server streaming: the client cancels the call then.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::plan::duration_text::option"
    )]
    #[schemars(with = "Option<String>")]
    pub duration: Option<Duration>,
    /// Client and bidi streams: one request message per interval (the first at once), each
    /// in its own DATA frame. Absent: all of a call's messages go in one body.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::plan::duration_text::option"
    )]
    #[schemars(with = "Option<String>")]
    pub interval: Option<Duration>,
}

impl GrpcStreaming {
    /// Request messages go out one per interval rather than in one body.
    pub fn paced(&self) -> bool {
        self.client_streams && self.interval.is_some()
    }

    /// The client ends a server stream itself (after a count of messages or a duration).
    pub fn cancels(&self) -> bool {
        !self.client_streams && (self.count.is_some() || self.duration.is_some())
    }

    /// What a call's latency means, for the report (where it starts is the load model's:
    /// the first byte written in a closed loop, the intended send time in an open one).
    pub fn latency_definition(&self) -> &'static str {
        match (self.client_streams, self.server_streams) {
            (false, true) if self.cancels() => "the call's total, to its trailers, or to loadmark's cancel after --stream-call-count/--stream-call-duration (then no grpc-status: counted as ended by loadmark); time to first response message and the gap between response messages are reported apart",
            (false, true) => "the call's total, to its trailers (the whole stream of response messages); time to first response message and the gap between response messages are reported apart",
            (true, false) => "the call's total, through every request message sent, to the response and its trailers",
            _ => "the call's total, through every request message sent and every response message, to the trailers; time to first response message and the gap between response messages are reported apart",
        }
    }
}

/// What turns a gRPC call's rendered request (its message as JSON, placeholders filled in)
/// into the bytes sent: the length-prefixed protobuf message(s), or why it cannot. The CLI
/// builds it from the method's schema (the `grpc` crate); the engine calls it per call, so
/// neither depends on the other. Plans compare equal whatever their encoders.
#[derive(Clone)]
pub struct BodyEncoder(pub Arc<EncodeFn>);

/// Appends the bytes of one call's rendered JSON to the buffer, or says why it cannot.
pub type EncodeFn = dyn Fn(&[u8], &mut Vec<u8>) -> Result<(), String> + Send + Sync;

impl BodyEncoder {
    /// Encodes `rendered` into `out` (cleared first by the caller).
    pub fn encode(&self, rendered: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        (self.0)(rendered, out)
    }
}

impl std::fmt::Debug for BodyEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BodyEncoder")
    }
}

impl PartialEq for BodyEncoder {
    fn eq(&self, _: &BodyEncoder) -> bool {
        true
    }
}

/// The schema a plan's gRPC calls are encoded with (a `FileDescriptorSet`'s bytes), carried
/// in the plan so that a process given the plan as JSON (`loadmark worker`: one srun task or
/// Kubernetes pod) can make the same [`BodyEncoder`] and [`GrpcCodec`]s again.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CarriedGrpcSchema {
    /// The method (`package.Service/Method`) of the mix's templated message (`loadmark grpc`);
    /// none when only scenario steps call, each naming its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// Base64 in JSON: a JSON array of numbers would take about four times the bytes, and the
    /// plan travels as one argument of srun's command line (at most 128 KiB on Linux).
    #[serde(with = "base64_bytes")]
    pub descriptor_set: Vec<u8>,
}

mod base64_bytes {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(serde::de::Error::custom)
    }
}

/// A scenario's `grpc:` step, made ready by the CLI from the plan's schema (loaded once per
/// plan): how the step's rendered message becomes the call's body, and how the first
/// response message reads as JSON for the step's checks and extractions. Never in a plan
/// file; plans compare equal whatever their codecs.
#[derive(Clone)]
pub struct GrpcCodec {
    /// The rendered message (JSON) into its length-prefixed protobuf.
    pub encode: BodyEncoder,
    /// A response message (without its 5-byte prefix) as JSON text.
    pub decode: Arc<DecodeFn>,
}

/// A response message's bytes as JSON text, or why they are no message of the method.
pub type DecodeFn = dyn Fn(&[u8]) -> Result<Vec<u8>, String> + Send + Sync;

impl std::fmt::Debug for GrpcCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GrpcCodec")
    }
}

impl PartialEq for GrpcCodec {
    fn eq(&self, _: &GrpcCodec) -> bool {
        true
    }
}

/// Where a plan's gRPC steps find their methods (plan files' `grpc:`): `.proto` files
/// compiled at run time, a protoset, or (neither given) the target's server reflection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrpcSchemaFile {
    /// `.proto` files, relative to the plan file (no `protoc` needed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proto: Vec<String>,
    /// Folders the `.proto` files' imports are found under, relative to the plan file
    /// (ghz's `--import-paths`); each file's own folder is searched too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub import_paths: Vec<String>,
    /// A `FileDescriptorSet` (`protoc --descriptor_set_out=FILE --include_imports`), relative
    /// to the plan file, instead of `proto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protoset: Option<String>,
}
