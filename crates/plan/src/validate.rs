//! [`Plan::validate`]: the settings of a plan checked together before any load, each refusal
//! naming the flag (or plan key) and what was expected. Kept apart from the plan's types
//! (`plan.rs`): the rules between protocols, load models and options grow with every driver.

use crate::plan::{Load, Plan, Stop, MAX_PIPELINE, MAX_STREAMS};
use crate::text::{format_duration, PlanError};
use crate::websocket::WsSpec;

impl Plan {
    /// Checks on a WebSocket run test its replies (issue 20): only request mode waits for a
    /// reply to each message, and a reply has a body and a round trip but no status or
    /// headers.
    fn validate_ws_checks(&self, spec: &WsSpec) -> Result<(), PlanError> {
        if self.checks.is_empty() {
            return Ok(());
        }
        if spec.mode != crate::websocket::WsMode::Request {
            return Err(PlanError::Conflict {
                first: "--check",
                second: "--mode echo|send|receive",
                why: "checks test replies, and only request mode (--mode request) waits for the reply to each message",
            });
        }
        match self.checks.iter().find(|c| !c.expr.applies_to_messages()) {
            Some(c) => Err(PlanError::invalid(
                "--check",
                c.text.clone(),
                "a check a WebSocket reply can meet: body, body size, json or latency \
                 (a reply has no status or headers), e.g. 'json /status == 200'",
            )),
            None => Ok(()),
        }
    }

    /// Checks what the type system cannot. Every error names the setting.
    pub fn validate(&self) -> Result<(), PlanError> {
        let websocket_url = self.request.url.scheme().is_websocket();
        match &self.websocket {
            Some(spec) => {
                if !websocket_url {
                    return Err(PlanError::invalid(
                        "URL",
                        self.request.url.as_str(),
                        "a ws:// or wss:// URL for a WebSocket run",
                    ));
                }
                if matches!(self.load, Load::Open { .. }) {
                    return Err(PlanError::Conflict {
                        first: "--sessions",
                        second: "--rate",
                        why: "WebSocket sessions send on their own --interval; a request rate belongs to `loadmark run` (--stages with -c ramps the sessions)",
                    });
                }
                spec.validate()?;
                self.validate_ws_checks(spec)?;
            }
            None if websocket_url => {
                return Err(PlanError::invalid(
                    "URL",
                    self.request.url.as_str(),
                    "an http:// or https:// URL (ws:// and wss:// belong to `loadmark ws`)",
                ))
            }
            None => {}
        }
        if !self.scenarios.is_empty() && self.scenario.is_some() {
            return Err(PlanError::Conflict {
                first: "scenario",
                second: "scenarios",
                why: "a plan runs one journey or several by name",
            });
        }
        for (_, plan) in self.scenario_plans() {
            plan.validate()?;
        }
        if self.speaks_h3() && !self.request.url.scheme().is_tls() {
            return Err(PlanError::invalid(
                "protocol: h3",
                self.request.url.to_string(),
                "an https:// URL: HTTP/3 needs https:// (QUIC always runs TLS 1.3)",
            ));
        }
        let (connections, threads) = (self.load.max_connections(), self.load.threads());
        let connections_flag = match self.load {
            Load::Closed { .. } | Load::Ramp { .. } => "--connections",
            Load::Open { .. } => "--max-connections",
        };
        if connections == 0 {
            return Err(PlanError::invalid(
                connections_flag,
                "0",
                "at least 1 connection",
            ));
        }
        if threads == 0 {
            return Err(PlanError::invalid("--threads", "0", "at least 1 thread"));
        }
        if threads > connections {
            return Err(PlanError::Conflict {
                first: "--threads",
                second: connections_flag,
                why: "every thread needs at least one connection; use fewer threads",
            });
        }
        if let Load::Ramp { connections, .. } = &self.load {
            if self.stop != Stop::Duration(connections.duration()) {
                return Err(PlanError::Conflict {
                    first: "--stages",
                    second: "--requests/--duration",
                    why: "a ramping run lasts as long as its stages",
                });
            }
        }
        if let Load::Open { rate, .. } = &self.load {
            if rate.peak() <= 0.0 {
                return Err(PlanError::invalid(
                    "--rate",
                    rate.to_text(),
                    "a rate above zero requests per second",
                ));
            }
            // A count is the schedule's own length (`-R` with `-n`), or the run lasts as long
            // as its schedule.
            let agrees = match self.stop {
                Stop::Duration(d) => d == rate.duration(),
                Stop::Requests(n) => n == rate.total_requests(),
            };
            if !agrees {
                return Err(PlanError::Conflict {
                    first: "--rate/--stages",
                    second: "--requests/--duration",
                    why: "an open-loop run lasts as long as its rate schedule",
                });
            }
        }
        let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if self.request.method.is_empty() || !self.request.method.bytes().all(token) {
            return Err(PlanError::invalid(
                "--method",
                &self.request.method,
                "an HTTP method token such as GET, POST, PUT",
            ));
        }
        match self.stop {
            Stop::Duration(d) if d.is_zero() => {
                return Err(PlanError::invalid(
                    "--duration",
                    "0s",
                    "a duration above zero",
                ))
            }
            Stop::Requests(0) => {
                return Err(PlanError::invalid("--requests", "0", "at least 1 request"))
            }
            Stop::Duration(d) if self.warmup >= d => {
                return Err(PlanError::Conflict {
                    first: "--warmup",
                    second: "--duration",
                    why: "the warm-up must be shorter than the run",
                })
            }
            _ => {}
        }
        if self.warmup.subsec_nanos() != 0 {
            return Err(PlanError::invalid(
                "--warmup",
                format_duration(self.warmup),
                "whole seconds (the per-second series is aligned on them)",
            ));
        }
        if self.timeouts.request.is_zero() {
            return Err(PlanError::invalid(
                "--timeout",
                "0s",
                "a duration above zero",
            ));
        }
        if self.timeouts.connect.is_zero() {
            return Err(PlanError::invalid(
                "--connect-timeout",
                "0s",
                "a duration above zero",
            ));
        }
        self.validate_protocol()
    }

    fn validate_protocol(&self) -> Result<(), PlanError> {
        if self.protocol.http3.is_some() {
            self.validate_http3()?;
        }
        // The HTTP/2 drivers judge a response's status and latency; keeping every stream's
        // headers and body for checks is a journey step's (one stream at a time). Refused,
        // so that a check asked for is never a check silently not made.
        let plain_h2 =
            self.protocol.http2.is_some() && self.scenario.is_none() && self.scenarios.is_empty();
        if plain_h2 && self.checks.iter().any(|c| c.expr.needs_response()) {
            return Err(PlanError::Conflict {
                first: "--http2",
                second: "--check on headers or the body",
                why: "over HTTP/2 a run checks each response's status and latency; a \
                      scenario's h2 step checks headers and bodies",
            });
        }
        if self.script.is_some() {
            let with = if self.protocol.http2.is_some() {
                Some("--http2")
            } else if self.protocol.pipeline.is_some() {
                Some("--pipeline")
            } else {
                None
            };
            if let Some(first) = with {
                return Err(PlanError::Conflict {
                    first,
                    second: "-s/--script",
                    why: "wrk scripts run over HTTP/1.1 one request at a time so far",
                });
            }
        }
        if let Some(depth) = self.protocol.pipeline {
            if !(1..=MAX_PIPELINE).contains(&depth) {
                return Err(PlanError::invalid(
                    "--pipeline",
                    depth.to_string(),
                    "between 1 and 1024 requests written together per connection",
                ));
            }
            let conflict = |second, why| {
                Err(PlanError::Conflict {
                    first: "--pipeline",
                    second,
                    why,
                })
            };
            if self.protocol.http2.is_some() {
                return conflict("--http2", "pipelining is HTTP/1.1's; HTTP/2 has --streams");
            }
            if self.websocket.is_some() {
                return conflict("loadmark ws", "WebSocket sessions do not pipeline");
            }
            if !self.request.keep_alive {
                return conflict(
                    "--no-keepalive/Connection: close",
                    "a pipelined connection carries many requests",
                );
            }
        }
        let Some(h2) = self.protocol.http2 else {
            return Ok(());
        };
        if !(1..=MAX_STREAMS).contains(&h2.streams) {
            return Err(PlanError::invalid(
                "--streams",
                h2.streams.to_string(),
                "between 1 and 10000 concurrent streams per connection",
            ));
        }
        if self.websocket.is_some() {
            return Err(PlanError::Conflict {
                first: "--http2",
                second: "loadmark ws",
                why: "WebSocket sessions are opened over HTTP/1.1",
            });
        }
        if !self.request.keep_alive {
            return Err(PlanError::Conflict {
                first: "--http2",
                second: "--no-keepalive/Connection: close",
                why: "an HTTP/2 connection carries many requests; there is no per-request close",
            });
        }
        Ok(())
    }

    /// `--http3`: QUIC over UDP to the URL's port, so only what HTTP/3 over QUIC can be.
    fn validate_http3(&self) -> Result<(), PlanError> {
        let conflict = |second, why| {
            Err(PlanError::Conflict {
                first: "--http3",
                second,
                why,
            })
        };
        if !self.request.url.scheme().is_tls() {
            return Err(PlanError::invalid(
                "--http3",
                self.request.url.to_string(),
                "an https:// URL: HTTP/3 needs https:// (QUIC always runs TLS 1.3)",
            ));
        }
        let streams = self.protocol.streams();
        if !(1..=MAX_STREAMS).contains(&streams) {
            return Err(PlanError::invalid(
                "--streams",
                streams.to_string(),
                "between 1 and 10000 concurrent streams per connection",
            ));
        }
        if self.protocol.http2.is_some() {
            return conflict(
                "--http2",
                "a run speaks one protocol; pick --http2 or --http3",
            );
        }
        if self.protocol.pipeline.is_some() {
            return conflict(
                "--pipeline",
                "pipelining is HTTP/1.1's; HTTP/3 has --streams",
            );
        }
        if self.protocol.unix_socket.is_some() {
            return conflict("--unix-socket", "QUIC runs over UDP, not a Unix socket");
        }
        if self.protocol.proxy.is_some() {
            return conflict("-x/--proxy", "HTTP/3 through a proxy is not supported yet");
        }
        if self.script.is_some() {
            return conflict("-s/--script", "wrk scripts run over HTTP/1.1 so far");
        }
        if self.websocket.is_some() {
            return conflict("loadmark ws", "WebSocket sessions are opened over HTTP/1.1");
        }
        if self.protocol.grpc.is_some() {
            return conflict("loadmark grpc", "gRPC runs over HTTP/2");
        }
        // --no-keepalive is allowed: each connection then carries one request per stream
        // and closes (a handshake per request, what --http3-0rtt is measured with).
        Ok(())
    }

    /// Whether any request of the run goes over HTTP/3: `--http3` (`load.http3`), or a
    /// scenario step's `protocol: h3` (in this plan or one of its scenarios).
    pub fn speaks_h3(&self) -> bool {
        let step_h3 = |steps: &[crate::scenario::ScenarioStepFile]| {
            steps.iter().any(|s| {
                (s.request.as_ref())
                    .is_some_and(|r| r.protocol == Some(crate::scenario::StepProtocol::H3))
            })
        };
        self.protocol.http3.is_some()
            || self.scenario.as_deref().is_some_and(step_h3)
            || self.scenarios.iter().any(|n| step_h3(&n.steps))
    }
}
