//! gRPC, a driver on the HTTP/2 one (issue 36): a call is an HTTP/2 POST whose request
//! carries `content-type: application/grpc` and a length-prefixed message (the CLI builds
//! it once, from JSON and the method's schema, in `loadmark-grpc`). The HTTP/2 connection
//! follows each response's message prefixes and reads `grpc-status` from the trailers
//! (`loadmark_wire::grpc`); here a call that got an answer becomes its sample and its status
//! code, counted by name. Transport failures (RST_STREAM, a closed connection, a timeout)
//! stay errors of their kind, as for any HTTP/2 request.

use std::cell::RefCell;

use loadmark_metrics::Recorder;
use loadmark_plan::Plan;
use loadmark_wire::http2::Answer;

/// The longest response message a call accepts (grpc-go's default receive limit): a longer
/// one ends the call as RESOURCE_EXHAUSTED, as a gRPC client would end it.
pub const MAX_RECEIVE_MESSAGE: usize = 4 << 20;

/// Whether `plan` is a gRPC run: HTTP/2 with a gRPC content type. Such requests are counted
/// by `grpc-status`, also when sent with `loadmark run --http2 -H content-type:...`.
pub(crate) fn limit_of(plan: &Plan) -> Option<usize> {
    let grpc = plan.request.headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("content-type")
            && loadmark_wire::grpc::is_grpc_content_type(value.as_bytes())
    });
    (grpc && plan.protocol.http2.is_some()).then_some(MAX_RECEIVE_MESSAGE)
}

/// A gRPC call's status, after its response's sample was recorded.
#[inline]
pub(crate) fn settle(recorder: &RefCell<Recorder>, answer: &Answer) {
    if let Some(end) = &answer.grpc {
        let (code, message) = end.outcome(answer.status);
        recorder
            .borrow_mut()
            .record_grpc(answer.ended, code, || message);
    }
}
