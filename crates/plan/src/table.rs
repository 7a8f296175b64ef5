//! What the report's step table shows: [`Column`]s chosen by name from every figure a report
//! holds, or a [`TableStyle`] that lays each step out the way a known tool's users read it.
//!
//! Names: `rps` (mean over the run), `rps_stdev`, `rps_min`, `rps_max` (over the per-second
//! series), `transfer` (bytes read per second), `requests`, `failed`, `errors` (by kind),
//! `status` (classes), `1xx` .. `5xx`, `others` (transport errors), `connections` (opened),
//! `server_rss`, `server_cpu`, and distributions as `latency_STAT`, `connect_STAT`,
//! `capacity` and `broke_first` (a `find:` plan's search: its answer, and the objective that
//! broke first), and distributions as `latency_STAT`, `connect_STAT`, `ttfb_STAT` with STAT
//! one of `min`, `mean`, `stdev`, `max` or `pNN` (`p50`, `p99.9`,
//! `p0` = min, `p100` = max); `pNN`, `min`, `mean`, `stdev` and `max` alone mean latency.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A distribution a column reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dist {
    Latency,
    Connect,
    Ttfb,
}

/// A figure of a distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    Min,
    Mean,
    Stdev,
    Max,
    /// A percentile, 0 to 100.
    P(f64),
}

/// One column of the step table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Column {
    Rps,
    RpsStdev,
    RpsMin,
    RpsMax,
    Transfer,
    Requests,
    Failed,
    Errors,
    Status,
    /// Responses of one status class, 1 to 5.
    Class(u8),
    /// Requests that ended in a transport error (bombardier's "others").
    Others,
    Connections,
    ServerRss,
    ServerCpu,
    /// A search's capacity (`find:` plans), per second.
    Capacity,
    /// The objective(s) a search saw break first.
    BrokeFirst,
    Of(Dist, Stat),
}

/// Today's table: what a plan that names no columns gets.
pub const DEFAULT_COLUMNS: &[Column] = &[
    Column::Rps,
    Column::Transfer,
    Column::Of(Dist::Latency, Stat::P(50.0)),
    Column::Of(Dist::Latency, Stat::P(90.0)),
    Column::Of(Dist::Latency, Stat::P(99.0)),
    Column::Of(Dist::Latency, Stat::P(99.9)),
    Column::Of(Dist::Latency, Stat::Max),
    Column::Failed,
    Column::Errors,
    Column::Status,
    Column::ServerRss,
    Column::ServerCpu,
];

/// What a column name may be, for error messages.
pub const COLUMN_NAMES: &str = "rps, rps_stdev, rps_min, rps_max, transfer, requests, failed, errors, status, 1xx..5xx, others, connections, server_rss, server_cpu, capacity, broke_first, or latency_/connect_/ttfb_ + min|mean|stdev|max|pNN (pNN, min, mean, stdev, max alone: latency)";

impl Column {
    /// Parses a column name; the error says what names exist.
    pub fn parse(name: &str) -> Result<Column, String> {
        let simple = match name {
            "rps" => Some(Column::Rps),
            "rps_stdev" => Some(Column::RpsStdev),
            "rps_min" => Some(Column::RpsMin),
            "rps_max" => Some(Column::RpsMax),
            "transfer" => Some(Column::Transfer),
            "requests" => Some(Column::Requests),
            "failed" => Some(Column::Failed),
            "errors" => Some(Column::Errors),
            "status" => Some(Column::Status),
            "others" => Some(Column::Others),
            "connections" => Some(Column::Connections),
            "server_rss" => Some(Column::ServerRss),
            "server_cpu" => Some(Column::ServerCpu),
            "capacity" => Some(Column::Capacity),
            "broke_first" => Some(Column::BrokeFirst),
            "1xx" | "2xx" | "3xx" | "4xx" | "5xx" => Some(Column::Class(name.as_bytes()[0] - b'0')),
            _ => None,
        };
        if let Some(c) = simple {
            return Ok(c);
        }
        let (dist, stat) = match name.split_once('_') {
            Some(("latency", s)) => (Dist::Latency, s),
            Some(("connect", s)) => (Dist::Connect, s),
            Some(("ttfb", s)) => (Dist::Ttfb, s),
            _ => (Dist::Latency, name),
        };
        let stat = match stat {
            "min" => Some(Stat::Min),
            "mean" | "avg" => Some(Stat::Mean),
            "stdev" => Some(Stat::Stdev),
            "max" => Some(Stat::Max),
            p => p
                .strip_prefix('p')
                .and_then(|n| n.parse::<f64>().ok())
                .filter(|n| (0.0..=100.0).contains(n))
                .map(|n| {
                    if n == 0.0 {
                        Stat::Min
                    } else if n == 100.0 {
                        Stat::Max
                    } else {
                        Stat::P(n)
                    }
                }),
        };
        stat.map(|s| Column::Of(dist, s))
            .ok_or_else(|| format!("unknown column {name:?}; the columns are {COLUMN_NAMES}"))
    }

    /// The column's name as a plan writes it.
    pub fn name(&self) -> String {
        match self {
            Column::Rps => "rps".into(),
            Column::RpsStdev => "rps_stdev".into(),
            Column::RpsMin => "rps_min".into(),
            Column::RpsMax => "rps_max".into(),
            Column::Transfer => "transfer".into(),
            Column::Requests => "requests".into(),
            Column::Failed => "failed".into(),
            Column::Errors => "errors".into(),
            Column::Status => "status".into(),
            Column::Class(c) => format!("{c}xx"),
            Column::Others => "others".into(),
            Column::Connections => "connections".into(),
            Column::ServerRss => "server_rss".into(),
            Column::ServerCpu => "server_cpu".into(),
            Column::Capacity => "capacity".into(),
            Column::BrokeFirst => "broke_first".into(),
            Column::Of(d, s) => {
                let stat = match s {
                    Stat::Min => "min".to_string(),
                    Stat::Mean => "mean".into(),
                    Stat::Stdev => "stdev".into(),
                    Stat::Max => "max".into(),
                    Stat::P(p) => format!("p{p}"),
                };
                match d {
                    Dist::Latency => match s {
                        Stat::P(_) => stat,
                        _ => format!("latency_{stat}"),
                    },
                    Dist::Connect => format!("connect_{stat}"),
                    Dist::Ttfb => format!("ttfb_{stat}"),
                }
            }
        }
    }
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for Column {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for Column {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Column::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Column {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Column".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^(rps(_stdev|_min|_max)?|transfer|requests|failed|errors|status|[1-5]xx|others|connections|server_rss|server_cpu|capacity|broke_first|((latency|connect|ttfb)_)?(min|mean|avg|stdev|max|p[0-9]+(\\.[0-9]+)?))$",
            "description": COLUMN_NAMES
        })
    }
}

/// A step laid out as a known tool prints its summary, from loadmark's own numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TableStyle {
    /// wrk: Thread Stats (Latency, Req/Sec: Avg, Stdev, Max, +/- Stdev), distribution,
    /// socket errors, Requests/sec, Transfer/sec.
    Wrk,
    /// bombardier: Reqs/sec and Latency (Avg, Stdev, Max), HTTP codes, Throughput.
    Bombardier,
    /// ab: totals, Connection Times (ms) min mean[+/-sd] median max, percentages.
    Ab,
    /// Taurus (bzt): samples count and failures, average times, percentiles.
    Taurus,
}

impl TableStyle {
    pub fn parse(name: &str) -> Result<TableStyle, String> {
        match name {
            "wrk" => Ok(TableStyle::Wrk),
            "bombardier" => Ok(TableStyle::Bombardier),
            "ab" => Ok(TableStyle::Ab),
            "taurus" | "bzt" => Ok(TableStyle::Taurus),
            _ => Err(format!(
                "unknown style {name:?}; the styles are wrk, bombardier, ab, taurus"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TableStyle::Wrk => "wrk",
            TableStyle::Bombardier => "bombardier",
            TableStyle::Ab => "ab",
            TableStyle::Taurus => "taurus",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_list_the_known() {
        for name in [
            "rps",
            "rps_stdev",
            "rps_max",
            "2xx",
            "others",
            "p50",
            "p99.9",
            "latency_mean",
            "latency_stdev",
            "connect_mean",
            "ttfb_p90",
            "latency_min",
            "server_rss",
            "capacity",
            "broke_first",
        ] {
            assert_eq!(Column::parse(name).unwrap().name(), name);
        }
        assert_eq!(Column::parse("p0").unwrap().name(), "latency_min");
        assert_eq!(Column::parse("max").unwrap().name(), "latency_max");
        assert_eq!(Column::parse("p100").unwrap().name(), "latency_max");
        for bad in ["p101", "rsp", "latency_p", "6xx", "connect_x"] {
            let e = Column::parse(bad).unwrap_err();
            assert!(e.contains("the columns are rps"), "{bad}: {e}");
        }
        assert!(TableStyle::parse("wrk2")
            .unwrap_err()
            .contains("wrk, bombardier"));
    }
}
