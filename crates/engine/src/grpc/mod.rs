//! gRPC, a driver on the HTTP/2 one (issue 36): a call is an HTTP/2 POST whose request
//! carries `content-type: application/grpc` and a length-prefixed message (the CLI builds
//! it once, from JSON and the method's schema, in `loadmark-grpc`). The HTTP/2 connection
//! follows each response's message prefixes and reads `grpc-status` from the trailers
//! (`loadmark_wire::grpc`); here a call that got an answer becomes its sample and its status
//! code, counted by name. Transport failures (RST_STREAM, a closed connection, a timeout)
//! stay errors of their kind, as for any HTTP/2 request.

use std::cell::RefCell;
use std::time::Instant;

use loadmark_metrics::{GrpcCall, Recorder};
use loadmark_plan::{GrpcStreaming, Plan};
use loadmark_wire::http2::Answer;

/// The longest response message a call accepts unless the plan says otherwise (grpc-go's
/// default receive limit, `--max-recv-message-size`): a longer one ends the call as
/// RESOURCE_EXHAUSTED, as a gRPC client would end it.
pub const MAX_RECEIVE_MESSAGE: usize = 4 << 20;

/// How a run's HTTP/2 connections read gRPC calls.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Driving {
    /// The longest response message.
    pub limit: usize,
    /// A streaming method's calls: how each streams.
    pub streaming: Option<GrpcStreaming>,
}

/// Whether `plan` is a gRPC run: HTTP/2 with a gRPC content type. Such requests are counted
/// by `grpc-status`, also when sent with `loadmark run --http2 -H content-type:...`.
pub(crate) fn driving_of(plan: &Plan) -> Option<Driving> {
    let grpc = plan.request.headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("content-type")
            && loadmark_wire::grpc::is_grpc_content_type(value.as_bytes())
    });
    (grpc && plan.protocol.http2.is_some()).then_some(Driving {
        limit: plan
            .protocol
            .grpc_max_receive
            .unwrap_or(MAX_RECEIVE_MESSAGE),
        streaming: plan.protocol.grpc,
    })
}

/// A gRPC call's status and messages, after its response's sample was recorded. A call
/// the client ended itself (a server stream cancelled as planned) has no status: it is
/// counted as ended by loadmark, not given one.
#[inline]
pub(crate) fn settle(recorder: &RefCell<Recorder>, answer: &Answer, started: Instant) {
    if let Some(end) = &answer.grpc {
        let mut recorder = recorder.borrow_mut();
        let call = GrpcCall {
            sent: end.sent,
            received: end.messages,
            ended_by_client: end.ended_by_client,
            // Streaming runs only (unary calls leave it `None`): from the call's start.
            first_message_us: end
                .first_message
                .map(|at| at.saturating_duration_since(started).as_micros() as u64),
            gaps_us: &end.gaps,
        };
        if end.ended_by_client {
            recorder.record_grpc_call(answer.ended, &call, None, end.streaming);
        } else {
            let (code, message) = end.outcome(answer.status);
            recorder.record_grpc_call(answer.ended, &call, Some((code, message)), end.streaming);
        }
    }
}

/// A call of a gRPC run that ended without an answer (its deadline passed, the server reset
/// the stream, the connection failed or closed): the error of its kind, as for any HTTP/2
/// request, and the status a gRPC client gives such a call
/// (`loadmark_wire::grpc::failed_status`), so the calls counted by status are every call
/// made, as ghz counts them, and `status:DEADLINE_EXCEEDED` thresholds see timeouts.
pub(crate) fn failure(
    recorder: &RefCell<Recorder>,
    grpc: Option<Driving>,
    kind: loadmark_metrics::ErrorKind,
    message: &str,
    reset: Option<loadmark_wire::http2::frame::Reason>,
    unprocessed: bool,
) {
    let at = crate::settle::failure(recorder, kind, &message);
    if grpc.is_some() {
        let code = loadmark_wire::grpc::failed_status(kind, reset, unprocessed);
        let why = Some(format!("loadmark: {message}"));
        recorder.borrow_mut().record_grpc_unanswered(at, code, why);
    }
}

/// A stream of an HTTP/2 run that failed, as both loops (closed and open) settle it: a
/// request the server did not process (GOAWAY, REFUSED_STREAM) and not yet retried is sent
/// once more when `resend` places it on a connection, counted as a retry; any other is its
/// error ([`failure`]: in a gRPC run, also the status a gRPC client gives the call).
pub(crate) fn stream_failed(
    recorder: &RefCell<Recorder>,
    grpc: Option<Driving>,
    failed: &loadmark_wire::http2::Failure,
    retried: bool,
    resend: impl FnOnce() -> bool,
) {
    if failed.unprocessed && !retried && resend() {
        crate::settle::retry(recorder);
    } else {
        let reset = failed.reset;
        failure(
            recorder,
            grpc,
            failed.kind,
            &failed.message,
            reset,
            failed.unprocessed,
        );
    }
}
