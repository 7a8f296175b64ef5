//! [`WsSpec`]: what each WebSocket session of a run does (`loadmark ws`, or `websocket:` in a
//! plan file). The rest of a WebSocket run (sessions as connections, threads, duration or
//! count, timeouts, warm-up) is the same [`crate::Plan`] an HTTP run has.

use serde::{Deserialize, Serialize};
use std::time::Duration;

use crate::plan::duration_text;
use crate::template::Template;
use crate::text::PlanError;

/// The largest message loadmark sends (the built-in target accepts 16 MiB).
pub const MAX_WS_MESSAGE: usize = 16 << 20;

/// Bytes at the head of a random payload that carry its sequence number, so an echo can be
/// checked against the message it answers.
pub const WS_SEQ_BYTES: usize = 16;

/// How a session sends and what it waits for.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum WsMode {
    /// Send one message every `interval` on a fixed schedule; the server echoes each one, and
    /// each echo is matched to its send (in order, and by the sequence number a random
    /// payload carries) to measure the round trip from the intended send time.
    #[default]
    Echo,
    /// Closed loop: send one message, wait for one reply, repeat (like `loadmark run`).
    Request,
    /// Send every `interval`; count what comes back without matching it.
    Send,
    /// Send nothing; count what the server pushes.
    Receive,
}

impl WsMode {
    pub fn as_str(self) -> &'static str {
        match self {
            WsMode::Echo => "echo",
            WsMode::Request => "request",
            WsMode::Send => "send",
            WsMode::Receive => "receive",
        }
    }

    /// Parses a `--mode` value.
    pub fn parse(text: &str) -> Result<WsMode, PlanError> {
        Ok(match text {
            "echo" => WsMode::Echo,
            "request" => WsMode::Request,
            "send" => WsMode::Send,
            "receive" => WsMode::Receive,
            _ => {
                return Err(PlanError::invalid(
                    "--mode",
                    text,
                    "one of echo, request, send, receive",
                ))
            }
        })
    }
}

/// What each message holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WsPayload {
    /// A size drawn uniformly from `min..=max` bytes for every message: random letters in a
    /// text message, random bytes in a binary one. The first [`WS_SEQ_BYTES`] carry the
    /// message's sequence number (when the message is that long).
    Random { min: usize, max: usize },
    /// A text template, rendered per message: `{{seq}}`, `{{rand_int A B}}`,
    /// `{{rand_f A B}}`.
    Message(String),
}

impl WsPayload {
    /// Parses a `--payload` size range: `1024`, `128..4096`, `1k..4k`.
    pub fn parse_range(text: &str) -> Result<WsPayload, PlanError> {
        const FORM: &str = "a size or a range of sizes in bytes, e.g. 1024, 128..4096 or 1k..4k";
        let bad = || PlanError::invalid("--payload", text, FORM);
        let size = |s: &str| -> Result<usize, PlanError> {
            let s = s.trim();
            let (digits, unit) = match s.strip_suffix(['k', 'K']) {
                Some(d) => (d, 1024),
                None => (s, 1),
            };
            digits
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_mul(unit))
                .ok_or_else(bad)
        };
        let (min, max) = match text.split_once("..") {
            Some((lo, hi)) => (size(lo)?, size(hi)?),
            None => {
                let n = size(text)?;
                (n, n)
            }
        };
        if min > max {
            return Err(bad());
        }
        Ok(WsPayload::Random { min, max })
    }
}

/// What every session of a WebSocket run does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WsSpec {
    pub mode: WsMode,
    pub payload: WsPayload,
    /// Binary frames instead of text frames.
    #[serde(default)]
    pub binary: bool,
    /// Echo and send modes: one message per session every `interval`.
    #[serde(
        default,
        with = "duration_text::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub interval: Option<Duration>,
    /// Each session closes after this long and a new one takes its place (k6's VU loop);
    /// none: sessions last the whole run.
    #[serde(
        default,
        with = "duration_text::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub session_duration: Option<Duration>,
    /// Send a ping every `ping` and time its pong.
    #[serde(
        default,
        with = "duration_text::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub ping: Option<Duration>,
    /// Request mode: a reply counts only when its JSON field of this name equals the
    /// request's (e.g. `id`, with `"id":{{seq}}` in the message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_match: Option<String>,
}

impl WsSpec {
    /// Checks what the type system cannot; every error names the flag.
    pub fn validate(&self) -> Result<(), PlanError> {
        match self.mode {
            WsMode::Echo | WsMode::Send => {
                if self.interval.is_none() {
                    return Err(PlanError::invalid(
                        "--interval",
                        "(none)",
                        "a send interval for echo and send modes, e.g. 100ms (without one, use --mode request)",
                    ));
                }
            }
            WsMode::Request | WsMode::Receive => {
                if self.interval.is_some() {
                    return Err(PlanError::Conflict {
                        first: "--interval",
                        second: "--mode request/receive",
                        why: "request mode sends when the reply arrived and receive mode never sends; an interval belongs to echo or send mode",
                    });
                }
            }
        }
        for (flag, d) in [
            ("--interval", self.interval),
            ("--session-duration", self.session_duration),
            ("--ping", self.ping),
        ] {
            if d.is_some_and(|d| d.is_zero()) {
                return Err(PlanError::invalid(flag, "0s", "a duration above zero"));
            }
        }
        match &self.payload {
            WsPayload::Random { min, max } => {
                if *max > MAX_WS_MESSAGE || *min > *max {
                    return Err(PlanError::invalid(
                        "--payload",
                        format!("{min}..{max}"),
                        "sizes from 0 to 16 MiB, the smaller first",
                    ));
                }
            }
            WsPayload::Message(text) => {
                Template::parse(text, "--message", &[])?;
                if self.binary {
                    return Err(PlanError::Conflict {
                        first: "--message",
                        second: "--binary",
                        why: "a message template is text; use --payload for binary messages",
                    });
                }
            }
        }
        if self.reply_match.is_some() && self.mode != WsMode::Request {
            return Err(PlanError::Conflict {
                first: "--reply-match",
                second: "--mode",
                why: "replies are matched by a field only in request mode (echoes are matched by order and sequence number)",
            });
        }
        if self.reply_match.is_some() && !matches!(self.payload, WsPayload::Message(_)) {
            return Err(PlanError::Conflict {
                first: "--reply-match",
                second: "--payload",
                why: "a field can only be matched in a JSON --message, e.g. '{\"id\":{{seq}}}'",
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> WsSpec {
        WsSpec {
            mode: WsMode::Echo,
            payload: WsPayload::Random {
                min: 128,
                max: 4096,
            },
            binary: false,
            interval: Some(Duration::from_millis(5)),
            session_duration: Some(Duration::from_secs(10)),
            ping: None,
            reply_match: None,
        }
    }

    #[test]
    fn payload_ranges() {
        assert_eq!(
            WsPayload::parse_range("128..4096").unwrap(),
            WsPayload::Random {
                min: 128,
                max: 4096
            }
        );
        assert_eq!(
            WsPayload::parse_range("1k..4K").unwrap(),
            WsPayload::Random {
                min: 1024,
                max: 4096
            }
        );
        assert_eq!(
            WsPayload::parse_range("64").unwrap(),
            WsPayload::Random { min: 64, max: 64 }
        );
        for bad in ["", "a..b", "10..5", "1..", "-1"] {
            let err = WsPayload::parse_range(bad).unwrap_err().to_string();
            assert!(err.contains("--payload"), "{bad}: {err}");
        }
    }

    #[test]
    fn modes_and_their_flags() {
        assert!(spec().validate().is_ok());
        let no_interval = WsSpec {
            interval: None,
            ..spec()
        };
        assert!(no_interval
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--interval"));
        let request_with_interval = WsSpec {
            mode: WsMode::Request,
            ..spec()
        };
        assert!(matches!(
            request_with_interval.validate(),
            Err(PlanError::Conflict { .. })
        ));
        let matched = WsSpec {
            mode: WsMode::Request,
            interval: None,
            payload: WsPayload::Message("{\"id\":{{seq}},\"lat\":{{rand_f 30 45}}}".into()),
            reply_match: Some("id".into()),
            ..spec()
        };
        assert!(matched.validate().is_ok());
        let bad_template = WsSpec {
            payload: WsPayload::Message("{{nope}}".into()),
            ..matched.clone()
        };
        assert!(bad_template
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--message"));
        let huge = WsSpec {
            payload: WsPayload::Random {
                min: 1,
                max: MAX_WS_MESSAGE + 1,
            },
            ..spec()
        };
        assert!(huge.validate().is_err());
        assert_eq!(WsMode::parse("request").unwrap(), WsMode::Request);
        assert!(WsMode::parse("stream")
            .unwrap_err()
            .to_string()
            .contains("echo, request, send, receive"));
    }

    #[test]
    fn round_trips_through_json() {
        let s = spec();
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains("\"interval\":\"5ms\""), "{text}");
        assert_eq!(serde_json::from_str::<WsSpec>(&text).unwrap(), s);
    }
}
