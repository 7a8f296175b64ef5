//! The streamed result (`loadmark run --stream FILE`): JSON Lines written while the run goes.
//!
//! Line 1 says what runs (`"type":"start"`: run id, plan, start time); then one line per
//! second of the run as soon as that second is final (`"type":"second"`: exactly the report's
//! series point, plus everything measured in that second with its HDR histograms encoded as
//! in the report); the last line is the whole report (`"type":"summary"`). The seconds that
//! are not warm-up add up to the report's `totals` exactly, and their points are the report's
//! series, the last one marked `partial_s` the same way.
//!
//! `tail -f FILE | jq` follows a run; `loadmark report FILE` and `loadmark merge` read a
//! finished stream as they read a saved report ([`read_result`]).
//!
//! Part of the model: imports `model` siblings and `units` only, never a renderer.

use serde::{Deserialize, Serialize};

use loadmark_metrics::{SeriesPoint, Snapshot};
use loadmark_plan::Plan;

use super::report::{ReadError, Report, SCHEMA_VERSION};

/// One line of a streamed result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(clippy::large_enum_variant)] // one line at a time; boxing would only add a hop
pub enum StreamLine {
    /// The first line: what runs.
    Start(StreamStart),
    /// One second of the run, written once every worker has passed it.
    Second(StreamSecond),
    /// The last line: the run's complete report, as `--output FILE.json` has it.
    Summary(Box<Report>),
}

/// What a streamed run is: the first line of the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StreamStart {
    /// The version of the result schema the stream's lines follow.
    pub schema_version: u32,
    pub loadmark_version: String,
    /// Names this run in the stream and in the OpenMetrics labels (`--run-id`).
    pub run_id: String,
    /// The plan step (1 for `run` and `ws`; the step's number in `bench`).
    pub step: u32,
    /// A split run's segment (`0/2`), as in the OpenMetrics `segment` label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
    /// UTC, RFC 3339: when the stream was opened, just before the load starts.
    pub opened_at: String,
    /// The plan, secret header values redacted.
    pub plan: Plan,
}

/// One final second of a streamed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StreamSecond {
    /// The report's series point for this second, field for field.
    #[serde(flatten)]
    pub point: SeriesPoint,
    /// Everything measured in this second (all workers added), histograms as in the report's
    /// `totals`: adding the snapshots of the seconds that are not warm-up gives the totals.
    pub snapshot: Snapshot,
}

/// A streamed result could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// A line is not a loadmark stream line; the message gives its column.
    #[error("line {line}: not a loadmark stream line: {source}")]
    Line {
        line: usize,
        source: serde_json::Error,
    },
    /// The first line must be the `start` line: the file is not a stream, or lost its head.
    #[error("line 1: expected the stream's \"start\" line")]
    NoStart,
    /// Written by a newer loadmark: upgrade to read it.
    #[error("stream schema version {found} is newer than this loadmark understands ({SCHEMA_VERSION}); upgrade loadmark")]
    TooNew { found: u32 },
    /// The run has not finished, or was killed before its report: no last `summary` line.
    #[error("no summary line after {seconds} streamed seconds: the run is still going or was killed before its end")]
    Unfinished { seconds: usize },
}

/// A whole stream, read.
#[derive(Debug, Clone)]
pub struct Stream {
    pub start: StreamStart,
    pub seconds: Vec<StreamSecond>,
    /// The final report, when the run finished.
    pub summary: Option<Report>,
}

impl Stream {
    /// Reads every line of a stream (a partial one is fine: the summary is then `None`). A
    /// last line cut short by a writer still at work is left out, not an error.
    pub fn parse(text: &str) -> Result<Stream, StreamError> {
        let mut lines = text.split_inclusive('\n').enumerate().peekable();
        let mut start = None;
        let mut seconds = Vec::new();
        let mut summary = None;
        while let Some((i, raw)) = lines.next() {
            let last_unterminated = lines.peek().is_none() && !raw.ends_with('\n');
            if raw.trim().is_empty() {
                continue;
            }
            let line: StreamLine = match serde_json::from_str(raw) {
                Ok(l) => l,
                Err(e) if last_unterminated && e.is_eof() => break,
                Err(source) => {
                    if i == 0 {
                        if let Some(found) = newer_version(raw) {
                            return Err(StreamError::TooNew { found });
                        }
                    }
                    return Err(StreamError::Line {
                        line: i + 1,
                        source,
                    });
                }
            };
            match (line, &start) {
                (StreamLine::Start(s), None) if i == 0 => {
                    if s.schema_version > SCHEMA_VERSION {
                        return Err(StreamError::TooNew {
                            found: s.schema_version,
                        });
                    }
                    start = Some(s);
                }
                (_, None) => return Err(StreamError::NoStart),
                (StreamLine::Second(s), Some(_)) => seconds.push(s),
                (StreamLine::Summary(r), Some(_)) => summary = Some(*r),
                (StreamLine::Start(_), Some(_)) => {
                    return Err(StreamError::Line {
                        line: i + 1,
                        source: serde::de::Error::custom("a second \"start\" line"),
                    })
                }
            }
        }
        Ok(Stream {
            start: start.ok_or(StreamError::NoStart)?,
            seconds,
            summary,
        })
    }
}

fn newer_version(line: &str) -> Option<u32> {
    #[derive(Deserialize)]
    struct Version {
        schema_version: u32,
    }
    serde_json::from_str::<Version>(line)
        .ok()
        .map(|v| v.schema_version)
        .filter(|&v| v > SCHEMA_VERSION)
}

/// True when `text` looks like a stream: its first line is one JSON object whose `type` is
/// `start` (a saved report is one pretty-printed object whose first line is `{`).
pub fn is_stream(text: &str) -> bool {
    let first = text.lines().next().unwrap_or("");
    serde_json::from_str::<serde_json::Value>(first)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(|t| t == "start"))
        .unwrap_or(false)
}

/// A result file of either form: a saved report, or a finished stream (its summary line).
#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    #[error(transparent)]
    Report(#[from] ReadError),
    #[error(transparent)]
    Stream(#[from] StreamError),
}

/// Reads a saved report or a finished stream into the report it holds.
pub fn read_result(text: &str) -> Result<Report, ResultError> {
    if !is_stream(text) {
        return Ok(Report::from_json(text)?);
    }
    let stream = Stream::parse(text)?;
    let seconds = stream.seconds.len();
    let mut report = stream.summary.ok_or(StreamError::Unfinished { seconds })?;
    report.schema_version = SCHEMA_VERSION;
    Ok(report)
}

/// The JSON Schema every line of a stream follows (`loadmark schema stream`).
pub fn stream_schema() -> serde_json::Value {
    super::schema::schema_of::<StreamLine>("loadmark stream line")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_is_not_json_is_named_with_its_line_and_column() {
        let text = "{\"type\":\"start\",\"schema_version\":2}\n";
        let err = Stream::parse(text).unwrap_err().to_string();
        assert!(
            err.starts_with("line 1: not a loadmark stream line"),
            "{err}"
        );
        assert!(
            err.contains("loadmark_version"),
            "names what is missing: {err}"
        );
        let broken = "{\"type\":\"start\", oops}\n";
        let err = Stream::parse(broken).unwrap_err().to_string();
        assert!(err.contains("line 1 column 18"), "{err}");
        let newer = "{\"type\":\"start\",\"schema_version\":99}\n";
        assert!(matches!(
            Stream::parse(newer),
            Err(StreamError::TooNew { found: 99 })
        ));
        assert!(!is_stream("{\n  \"schema_version\": 2\n}\n"));
        assert!(is_stream("{\"type\":\"start\"}\n"));
    }
}
