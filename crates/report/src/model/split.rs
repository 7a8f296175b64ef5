//! One run split over several machines: what each segment's report says about its place in
//! the run ([`Split`]), the plan hash that decides which reports belong together, and the
//! checks `merge` makes before adding segments (none missing, none twice, one plan).
//!
//! A worker's report carries a `Split` with one row (its own); the merged report carries
//! every row, sorted by segment, so a slow, late or saturated machine stays visible after
//! its numbers were added into the whole.
//!
//! Part of the model: imports `model` siblings and `units` only, never a renderer.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha1::{Digest, Sha1};

use loadmark_plan::{Plan, Segment};

use super::report::Report;

/// Segments started further apart than this: per-second series mix neighbouring seconds.
pub const SKEW_TRUST_S: f64 = 0.1;

/// A report's place in a split run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Split {
    /// Names the run; every segment of one run carries the same id.
    pub run_id: String,
    /// SHA-1 (hex) of everything the segments must agree on: the plan, the weights and the
    /// start time. Reports with different hashes are not merged.
    pub plan_hash: String,
    /// Relative size of every segment; their count is the number of segments.
    pub weights: Vec<u32>,
    /// The agreed wall-clock start (UTC, RFC 3339), when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// One row per segment present, by index.
    pub parts: Vec<Part>,
    /// Segments missing from a merge made with `--allow-partial`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<u32>,
    /// Some segments are missing: the figures are not the whole run's.
    #[serde(default)]
    pub partial: bool,
    /// The largest start skew of any segment against `start_at`, seconds (absolute).
    #[serde(default)]
    pub max_skew_s: f64,
}

/// One segment's own figures, kept in the merged report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Part {
    pub index: u32,
    /// The host that ran it.
    pub host: String,
    pub responses: u64,
    pub errors: u64,
    pub rps: f64,
    pub latency_p50_us: u64,
    pub latency_p99_us: u64,
    /// How late its clock started against `start_at`, seconds (negative: early).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_skew_s: Option<f64>,
    pub busiest_worker: f64,
    pub client_saturated: bool,
    pub interrupted: bool,
}

/// The hash of what every segment of a run must share: the plan as saved in reports
/// (redacted, so it can be recomputed from any report), the weights and the start time.
pub fn plan_hash(plan: &Plan, weights: &[u32], start_at: Option<&str>) -> String {
    let mut h = Sha1::new();
    h.update(serde_json::to_string(&plan.redacted()).expect("a Plan serializes"));
    h.update(format!("\nweights {weights:?}\nstart {start_at:?}\n"));
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

impl Split {
    /// The split of a segment's own report, made from the report's figures.
    pub fn of_segment(
        report: &Report,
        run_id: &str,
        segment: &Segment,
        start_at: Option<&str>,
        start_skew_s: Option<f64>,
        host: &str,
    ) -> Split {
        let s = &report.summary;
        Split {
            run_id: run_id.to_string(),
            plan_hash: plan_hash(&report.plan, &segment.weights, start_at),
            weights: segment.weights.clone(),
            start_at: start_at.map(str::to_string),
            parts: vec![Part {
                index: segment.index,
                host: host.to_string(),
                responses: s.requests.responses,
                errors: s.requests.errors,
                rps: s.rps,
                latency_p50_us: s.latency.percentile(50.0).unwrap_or(0),
                latency_p99_us: s.latency.percentile(99.0).unwrap_or(0),
                start_skew_s,
                busiest_worker: report.run.client_cpu.busiest_worker,
                client_saturated: report.run.health.client_saturated,
                interrupted: report.run.interrupted,
            }],
            missing: Vec::new(),
            partial: false,
            max_skew_s: start_skew_s.map_or(0.0, f64::abs),
        }
    }
}

/// Why segments cannot be merged into one run; every message names the files or segments.
#[derive(Debug, Clone, PartialEq)]
pub enum SplitProblem {
    /// Some reports are segments of a split run and some are not.
    Mixed(Vec<String>),
    /// Different runs or plans (hash or run id differ).
    OtherPlan(Vec<String>),
    /// The same segment twice.
    Duplicate(Vec<String>),
    /// Segments absent (`--allow-partial` merges anyway, marked PARTIAL).
    Missing(Vec<u32>),
}

impl std::fmt::Display for SplitProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SplitProblem::Mixed(names) => write!(
                f,
                "some reports are segments of a split run and some are not: {}",
                names.join(", ")
            ),
            SplitProblem::OtherPlan(lines) => write!(
                f,
                "the segments come from different runs or plans: {}",
                lines.join("; ")
            ),
            SplitProblem::Duplicate(lines) => {
                write!(f, "segment given twice: {}", lines.join("; "))
            }
            SplitProblem::Missing(ids) => write!(
                f,
                "missing segment{} {} (pass --allow-partial to merge what came back, marked PARTIAL)",
                if ids.len() == 1 { "" } else { "s" },
                ids.iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// Checks that `reports` are all the segments of one run (or none is a segment) and returns
/// the merged split: every row by index, missing segments when `allow_partial`.
pub(crate) fn check_and_join(
    reports: &[Report],
    names: &[String],
    allow_partial: bool,
) -> Result<Option<Split>, SplitProblem> {
    let name = |i: usize| {
        names
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("report {}", i + 1))
    };
    let with: Vec<usize> = (0..reports.len())
        .filter(|&i| reports[i].split.is_some())
        .collect();
    if with.is_empty() {
        return Ok(None);
    }
    if with.len() != reports.len() {
        let plain = (0..reports.len())
            .filter(|i| !with.contains(i))
            .map(name)
            .collect();
        return Err(SplitProblem::Mixed(plain));
    }
    let first = reports[0].split.as_ref().expect("checked");
    let other: Vec<String> = (1..reports.len())
        .filter_map(|i| {
            let s = reports[i].split.as_ref().expect("checked");
            (s.plan_hash != first.plan_hash || s.run_id != first.run_id).then(|| {
                format!(
                    "{} is run {} plan {}, {} is run {} plan {}",
                    name(0),
                    first.run_id,
                    short(&first.plan_hash),
                    name(i),
                    s.run_id,
                    short(&s.plan_hash)
                )
            })
        })
        .collect();
    if !other.is_empty() {
        return Err(SplitProblem::OtherPlan(other));
    }
    let mut parts: Vec<(Part, usize)> = Vec::new();
    for (i, r) in reports.iter().enumerate() {
        for p in &r.split.as_ref().expect("checked").parts {
            parts.push((p.clone(), i));
        }
    }
    parts.sort_by_key(|(p, _)| p.index);
    let duplicates: Vec<String> = parts
        .windows(2)
        .filter(|w| w[0].0.index == w[1].0.index)
        .map(|w| {
            format!(
                "segment {} in {} and {}",
                w[0].0.index,
                name(w[0].1),
                name(w[1].1)
            )
        })
        .collect();
    if !duplicates.is_empty() {
        return Err(SplitProblem::Duplicate(duplicates));
    }
    let count = first.weights.len() as u32;
    let missing: Vec<u32> = (0..count)
        .filter(|i| !parts.iter().any(|(p, _)| p.index == *i))
        .collect();
    if !missing.is_empty() && !allow_partial {
        return Err(SplitProblem::Missing(missing));
    }
    let parts: Vec<Part> = parts.into_iter().map(|(p, _)| p).collect();
    let max_skew_s = parts
        .iter()
        .filter_map(|p| p.start_skew_s)
        .map(f64::abs)
        .fold(0.0, f64::max);
    Ok(Some(Split {
        run_id: first.run_id.clone(),
        plan_hash: first.plan_hash.clone(),
        weights: first.weights.clone(),
        start_at: first.start_at.clone(),
        partial: !missing.is_empty(),
        missing,
        parts,
        max_skew_s,
    }))
}

/// The findings a merged split adds to its report's health: partial, skewed, a slow or
/// saturated machine by name.
pub(crate) fn findings(split: &Split) -> Vec<String> {
    let mut out = Vec::new();
    if split.partial {
        out.push(format!(
            "PARTIAL: segment{} {} of {} did not report; the figures cover only the rest",
            if split.missing.len() == 1 { "" } else { "s" },
            split
                .missing
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            split.weights.len()
        ));
    }
    if split.max_skew_s > SKEW_TRUST_S {
        out.push(format!(
            "segments started up to {:.0} ms apart (over {:.0} ms): the per-second series mixes neighbouring seconds; totals and percentiles are unaffected",
            split.max_skew_s * 1e3,
            SKEW_TRUST_S * 1e3
        ));
    }
    for p in &split.parts {
        if p.client_saturated {
            out.push(format!(
                "segment {} on {}: loadmark was the bottleneck there (busiest worker {:.0}% of a core)",
                p.index,
                p.host,
                p.busiest_worker * 100.0
            ));
        }
        if p.interrupted {
            out.push(format!("segment {} on {} was interrupted", p.index, p.host));
        }
    }
    out
}

/// A plan hash short enough for a line: its first 12 hex digits.
pub(crate) fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn part(index: u32, skew: f64, saturated: bool) -> Part {
        Part {
            index,
            host: format!("node{index}"),
            responses: 100,
            errors: 0,
            rps: 100.0,
            latency_p50_us: 200,
            latency_p99_us: 900,
            start_skew_s: Some(skew),
            busiest_worker: if saturated { 0.97 } else { 0.2 },
            client_saturated: saturated,
            interrupted: false,
        }
    }

    /// Two segments of three, one skewed and saturated (the text report's test uses it too).
    pub(crate) fn partial_split() -> Split {
        Split {
            run_id: "r".into(),
            plan_hash: "0123456789abcdef".into(),
            weights: vec![1, 1, 1],
            start_at: None,
            parts: vec![part(0, 0.0002, false), part(2, -0.25, true)],
            missing: vec![1],
            partial: true,
            max_skew_s: 0.25,
        }
    }

    #[test]
    fn findings_name_partial_skewed_and_saturated_segments() {
        let split = partial_split();
        let f = findings(&split);
        assert!(f[0].starts_with("PARTIAL: segment 1 of 3"), "{f:?}");
        assert!(f[1].contains("250 ms apart"), "{f:?}");
        assert!(
            f[2].starts_with("segment 2 on node2: loadmark was the bottleneck"),
            "{f:?}"
        );
    }

    #[test]
    fn the_plan_hash_covers_weights_and_start() {
        let request = loadmark_plan::RequestSpec {
            method: "GET".into(),
            url: loadmark_plan::Target::parse("http://127.0.0.1:1/").unwrap(),
            headers: Vec::new(),
            body: Vec::new(),
            keep_alive: true,
        };
        let settings = loadmark_plan::Settings {
            rate: Some(100.0),
            ..Default::default()
        };
        let plan = settings.to_plan(request, 2).unwrap();
        let h = plan_hash(&plan, &[1, 1], Some("2026-12-01T10:00:00Z"));
        assert_eq!(h.len(), 40);
        assert_eq!(
            h,
            plan_hash(&plan.clone(), &[1, 1], Some("2026-12-01T10:00:00Z"))
        );
        assert_ne!(h, plan_hash(&plan, &[2, 1], Some("2026-12-01T10:00:00Z")));
        assert_ne!(h, plan_hash(&plan, &[1, 1], Some("2026-12-01T10:00:01Z")));
        let mut other = plan.clone();
        other.timeouts.request = std::time::Duration::from_secs(1);
        assert_ne!(h, plan_hash(&other, &[1, 1], Some("2026-12-01T10:00:00Z")));
    }
}
