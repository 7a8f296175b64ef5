//! A small gRPC service on the target's HTTP/2 (issue 36), hand-rolled on hyper: unary echo,
//! a call failing with a chosen status, a server stream, a client stream and a bidi echo
//! (`loadmark.target.Target`, see crates/target/proto/loadmark_target.proto), and the server
//! reflection service (v1 and v1alpha) describing it, so `loadmark grpc` finds the methods
//! without a .proto. Each call is a task writing its response's frames (messages, then
//! trailers with `grpc-status`) into a channel the response body reads; a client that
//! cancels drops the body, which the task sees at its next send. Calls and messages both
//! ways are counted (reflection calls are not).

mod schema;
mod wire;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response};
use tokio::sync::mpsc;

use crate::body::ResponseBody;
use crate::server::Counters;
use wire::{field_bytes, field_varint, fields, framed, Broken, Messages, Value};

/// The reflection services answered (the same messages in both versions).
const REFLECTION: [&str; 2] = [
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// The most `Stream` sends per call, and its longest interval.
const MAX_STREAM: u64 = 1_000_000;
const MAX_INTERVAL_MS: u64 = 60_000;

/// Whether a request's first path segment names a service served here.
pub(crate) fn serves(service: &str) -> bool {
    service == schema::SERVICE || REFLECTION.contains(&service)
}

/// Answers a call: the response head at once, its messages and trailers as the call's task
/// writes them.
pub(crate) fn call(req: Request<Incoming>, counters: Arc<Counters>) -> Response<ResponseBody> {
    let path = req.uri().path().trim_start_matches('/').to_string();
    let (service, method) = path.split_once('/').unwrap_or((&path, ""));
    let (tx, rx) = mpsc::channel(16);
    let target = service == schema::SERVICE;
    let call = Call {
        tx,
        counters: counters.clone(),
        counted: target,
    };
    let messages = Messages::new(req.into_body());
    if target {
        counters.grpc_calls.fetch_add(1, Ordering::Relaxed);
        let method = method.to_string();
        tokio::spawn(async move { call.target(&method, messages).await });
    } else {
        tokio::spawn(async move { call.reflection(messages).await });
    }
    let mut response = Response::new(ResponseBody::Channel(rx));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    response
}

/// One call's way out: its response's frames.
struct Call {
    tx: mpsc::Sender<Frame<Bytes>>,
    counters: Arc<Counters>,
    /// A call to the target's service (reflection's messages are not counted).
    counted: bool,
}

impl Call {
    async fn target(self, method: &str, mut messages: Messages) {
        let ended = match method {
            "Echo" => self.unary(&mut messages, |m| Ok(m.clone())).await,
            "Fail" => self.unary(&mut messages, fail).await,
            "Stream" => self.stream(&mut messages).await,
            "Collect" => self.collect(&mut messages).await,
            "Chat" => self.chat(&mut messages).await,
            _ => Err(Broken(12, "unknown method of loadmark.target.Target")),
        };
        self.end(ended).await;
    }

    /// One request, one answer (or a status).
    async fn unary(
        &self,
        messages: &mut Messages,
        answer: impl Fn(&Bytes) -> Result<Bytes, (u32, String)>,
    ) -> Result<(), Broken> {
        let request = self.one(messages).await?;
        match answer(&request) {
            Ok(reply) => {
                self.send(&reply).await;
                Ok(())
            }
            Err((code, message)) => {
                self.status(code, &message).await;
                Err(Broken(u32::MAX, ""))
            }
        }
    }

    async fn stream(&self, messages: &mut Messages) -> Result<(), Broken> {
        let request = self.one(messages).await?;
        let (mut count, mut interval, mut text) = (0, 0, &b""[..]);
        for (number, value) in fields(&request).ok_or(Broken(3, "not a StreamRequest"))? {
            match (number, value) {
                (1, Value::Varint(v)) => count = v.min(MAX_STREAM),
                (2, Value::Varint(v)) => interval = v.min(MAX_INTERVAL_MS),
                (3, Value::Bytes(b)) => text = b,
                _ => {}
            }
        }
        for seq in 0..count {
            if seq > 0 && interval > 0 {
                tokio::time::sleep(Duration::from_millis(interval)).await;
            }
            let mut m = Vec::with_capacity(text.len() + 16);
            field_bytes(&mut m, 1, text);
            field_varint(&mut m, 2, seq);
            if !self.send(&m).await {
                self.counters.grpc_cancelled.fetch_add(1, Ordering::Relaxed);
                return Err(Broken(u32::MAX, ""));
            }
        }
        Ok(())
    }

    async fn collect(&self, messages: &mut Messages) -> Result<(), Broken> {
        let (mut n, mut bytes) = (0u64, 0u64);
        while let Some(m) = messages.next().await? {
            self.counters
                .grpc_messages_received
                .fetch_add(1, Ordering::Relaxed);
            n += 1;
            bytes += m.len() as u64;
        }
        let mut summary = Vec::new();
        field_varint(&mut summary, 1, n);
        field_varint(&mut summary, 2, bytes);
        self.send(&summary).await;
        Ok(())
    }

    async fn chat(&self, messages: &mut Messages) -> Result<(), Broken> {
        while let Some(m) = messages.next().await? {
            self.counters
                .grpc_messages_received
                .fetch_add(1, Ordering::Relaxed);
            if !self.send(&m).await {
                return Err(Broken(u32::MAX, ""));
            }
        }
        Ok(())
    }

    /// A unary request: exactly one message.
    async fn one(&self, messages: &mut Messages) -> Result<Bytes, Broken> {
        let m = messages
            .next()
            .await?
            .ok_or(Broken(13, "no request message"))?;
        self.counters
            .grpc_messages_received
            .fetch_add(1, Ordering::Relaxed);
        match messages.next().await? {
            None => Ok(m),
            Some(_) => Err(Broken(
                13,
                "more than one request message for a unary method",
            )),
        }
    }

    /// Sends a response message; false when the client is gone.
    async fn send(&self, message: &[u8]) -> bool {
        let sent = self.tx.send(Frame::data(framed(message))).await.is_ok();
        if sent && self.counted {
            self.counters
                .grpc_messages_sent
                .fetch_add(1, Ordering::Relaxed);
        }
        sent
    }

    /// The call's trailers: OK, or the status it broke with (`u32::MAX`: already sent, or
    /// the client is gone).
    async fn end(&self, ended: Result<(), Broken>) {
        match ended {
            Ok(()) => self.status(0, "").await,
            Err(Broken(u32::MAX, _)) => {}
            Err(Broken(code, why)) => self.status(code, why).await,
        }
    }

    async fn status(&self, code: u32, message: &str) {
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", HeaderValue::from(code));
        if !message.is_empty() {
            if let Ok(v) = HeaderValue::from_str(&percent_encode(message)) {
                trailers.insert("grpc-message", v);
            }
        }
        let _ = self.tx.send(Frame::trailers(trailers)).await;
    }

    /// The reflection service: each request answered with the file, the services, or
    /// NOT_FOUND, as it comes.
    async fn reflection(self, mut messages: Messages) {
        let ended = async {
            while let Some(request) = messages.next().await? {
                if !self.send(&reflect(&request)).await {
                    return Err(Broken(u32::MAX, ""));
                }
            }
            Ok(())
        }
        .await;
        self.end(ended).await;
    }
}

/// `Fail`'s answer: the status its request names (0 answers with an empty message).
fn fail(request: &Bytes) -> Result<Bytes, (u32, String)> {
    let (mut code, mut message) = (0, String::from("failing as asked"));
    for (number, value) in fields(request).unwrap_or_default() {
        match (number, value) {
            (1, Value::Varint(v)) => code = v as u32,
            (2, Value::Bytes(b)) if !b.is_empty() => {
                message = String::from_utf8_lossy(b).into_owned()
            }
            _ => {}
        }
    }
    match code {
        0 => Ok(Bytes::new()),
        code => Err((code, message)),
    }
}

/// A `ServerReflectionResponse` to one `ServerReflectionRequest`.
fn reflect(request: &[u8]) -> Vec<u8> {
    let mut response = Vec::new();
    field_bytes(&mut response, 2, request); // original_request
    let asked = fields(request).unwrap_or_default();
    let found = asked
        .iter()
        .find_map(|(number, value)| match (number, value) {
            (3, Value::Bytes(name)) => Some((*name == schema::FILE.as_bytes(), 4)),
            (4, Value::Bytes(symbol)) => {
                Some((std::str::from_utf8(symbol).is_ok_and(schema::defines), 4))
            }
            (7, _) => Some((true, 6)),
            _ => None,
        });
    match found {
        Some((true, 4)) => {
            let mut files = Vec::new();
            field_bytes(&mut files, 1, &schema::file_descriptor());
            field_bytes(&mut response, 4, &files);
        }
        Some((true, _)) => {
            let mut list = Vec::new();
            for name in [schema::SERVICE, REFLECTION[0], REFLECTION[1]] {
                let mut service = Vec::new();
                field_bytes(&mut service, 1, name.as_bytes());
                field_bytes(&mut list, 1, &service);
            }
            field_bytes(&mut response, 6, &list);
        }
        _ => {
            let mut error = Vec::new();
            field_varint(&mut error, 1, 5); // NOT_FOUND
            field_bytes(
                &mut error,
                2,
                b"not found: this server describes loadmark.target.Target",
            );
            field_bytes(&mut response, 7, &error);
        }
    }
    response
}

/// `grpc-message`'s percent-encoding (the gRPC document): printable ASCII but `%` as is.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if (0x20..0x7f).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
