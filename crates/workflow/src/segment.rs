//! One share of a run split over several machines: `--segment` and `--start-at` resolved
//! (from flags and the launcher's environment), the run's name, the request tags, and a
//! segment's mark on its report.

use std::time::{Duration, SystemTime};

use loadmark_engine::Part;
use loadmark_plan::{parse_duration, parse_rfc3339, Plan, PlanError, Segment};
use loadmark_report::{rfc3339, Report, Split};

/// Why a segment or a start time cannot be resolved. All are the user's to fix.
#[derive(Debug, thiserror::Error)]
pub enum SegmentError {
    /// The spec or the time is malformed (the message names the flag).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// `--segment env...` outside srun or an Indexed Job: run it there, or give INDEX/COUNT.
    #[error("--segment {spec}: neither SLURM_PROCID nor JOB_COMPLETION_INDEX is set (run it under srun or in an Indexed Job, or give INDEX/COUNT)")]
    NoIndex { spec: String },
    /// `--segment env` outside srun: give the count (`env/8`).
    #[error("--segment {spec}: SLURM_NTASKS is not set: give the count, e.g. env/8")]
    NoCount { spec: String },
    /// `--segment envX`: the forms are env, env/COUNT and env/W0:W1:...
    #[error("--segment {spec}: expected env, env/COUNT or env/W0:W1:...")]
    BadEnv { spec: String },
    /// `--start-at +X` where X is not a duration.
    #[error("--start-at {text}: expected +DURATION such as +5s, or an RFC 3339 time")]
    BadStart { text: String },
}

impl SegmentError {
    pub fn is_usage(&self) -> bool {
        true
    }
}

/// Reads one environment variable (`std::env::var(..).ok()` in the binary).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

fn env_u32(env: Env<'_>, name: &str) -> Option<u32> {
    env(name)?.trim().parse().ok()
}

/// Parses `--segment`: `I/N`, `I/W:W`, `env`, `env/N`, `env/W:W` (INDEX from SLURM_PROCID
/// or JOB_COMPLETION_INDEX, COUNT from SLURM_NTASKS).
pub fn parse_segment(spec: &str, env: Env<'_>) -> Result<Segment, SegmentError> {
    let Some(rest) = spec.strip_prefix("env") else {
        return Ok(Segment::parse(spec, "--segment")?);
    };
    let index = env_u32(env, "SLURM_PROCID")
        .or_else(|| env_u32(env, "JOB_COMPLETION_INDEX"))
        .ok_or_else(|| SegmentError::NoIndex { spec: spec.into() })?;
    let shares = match rest.strip_prefix('/') {
        Some(shares) => shares.to_string(),
        None if rest.is_empty() => env_u32(env, "SLURM_NTASKS")
            .ok_or_else(|| SegmentError::NoCount { spec: spec.into() })?
            .to_string(),
        None => return Err(SegmentError::BadEnv { spec: spec.into() }),
    };
    Ok(Segment::parse(&format!("{index}/{shares}"), "--segment")?)
}

/// Parses `--start-at`: RFC 3339, or `+DURATION` from now (resolved to whole seconds, so
/// the text every segment carries is exact).
pub fn parse_start(text: &str) -> Result<(SystemTime, String), SegmentError> {
    parse_start_at(text, SystemTime::now())
}

/// [`parse_start`] with `now` given.
pub fn parse_start_at(text: &str, now: SystemTime) -> Result<(SystemTime, String), SegmentError> {
    if let Some(d) = text.strip_prefix('+') {
        let d = parse_duration(d).map_err(|_| SegmentError::BadStart { text: text.into() })?;
        let at = now + d;
        let secs = at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() + u64::from(d.subsec_nanos() > 0));
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
        return Ok((at, rfc3339(at)));
    }
    Ok((parse_rfc3339(text, "--start-at")?, text.trim().to_string()))
}

/// The run's name when none is given: Slurm's job and step, else the start time, else "run".
fn default_run_id(start: Option<&str>, env: Env<'_>) -> String {
    match (env("SLURM_JOB_ID"), env("SLURM_STEP_ID")) {
        (Some(job), Some(step)) => format!("slurm-{job}.{step}"),
        _ => start.map_or_else(|| "run".to_string(), |s| format!("start-{s}")),
    }
}

/// A segment to run, resolved from flags and the environment.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub segment: Segment,
    pub start_at: Option<SystemTime>,
    pub start_text: Option<String>,
    pub run_id: String,
}

impl Resolved {
    /// From `--segment`, `--start-at` and `--run-id`.
    pub fn new(
        segment: &str,
        start_at: Option<&str>,
        run_id: Option<&str>,
        env: Env<'_>,
    ) -> Result<Resolved, SegmentError> {
        let segment = parse_segment(segment, env)?;
        let (start_at, start_text) = match start_at {
            Some(t) => {
                let (at, text) = parse_start(t)?;
                (Some(at), Some(text))
            }
            None => (None, None),
        };
        let run_id = run_id
            .map(str::to_string)
            .unwrap_or_else(|| default_run_id(start_text.as_deref(), env));
        Ok(Resolved {
            segment,
            start_at,
            start_text,
            run_id,
        })
    }

    /// The flags of `run`/`ws`, when they ask for a segment: `--start-at` alone is the whole
    /// run (0/1) starting then.
    pub fn from_flags(
        segment: Option<&str>,
        start_at: Option<&str>,
        run_id: Option<&str>,
        env: Env<'_>,
    ) -> Result<Option<Resolved>, SegmentError> {
        match (segment, start_at) {
            (Some(spec), _) => Ok(Some(Resolved::new(spec, start_at, run_id, env)?)),
            (None, Some(_)) => Ok(Some(Resolved::new("0/1", start_at, run_id, env)?)),
            (None, None) => Ok(None),
        }
    }

    /// The engine's share of the run.
    pub fn part(&self) -> Part {
        Part {
            segment: self.segment.clone(),
            start_at: self.start_at,
            script: None,
        }
    }

    /// Marks a segment's report with its place in the run.
    pub fn mark(&self, report: &mut Report, skew: Option<f64>) {
        report.split = Some(Split::of_segment(
            report,
            &self.run_id,
            &self.segment,
            self.start_text.as_deref(),
            skew,
            &hostname(),
        ));
    }
}

/// `--tag-requests`: the two headers, rendered per request by the template engine.
pub fn tagged(plan: &Plan) -> Plan {
    let mut plan = plan.clone();
    let tags = [
        ("X-Loadmark-Seq".to_string(), "{{seq}}".to_string()),
        ("X-Loadmark-Segment".to_string(), "{{segment}}".to_string()),
    ];
    plan.request.headers.extend(tags.iter().cloned());
    for (_, other) in &mut plan.mix.others {
        other.headers.extend(tags.iter().cloned());
    }
    plan.mix.templated = true;
    plan
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn a_segment_is_given_or_taken_from_the_launchers_environment() {
        let none = env_of(&[]);
        assert_eq!(parse_segment("3/8", &none).unwrap().to_text(), "3/8");
        let slurm = env_of(&[("SLURM_PROCID", "2"), ("SLURM_NTASKS", "4")]);
        assert_eq!(parse_segment("env", &slurm).unwrap().to_text(), "2/4");
        assert_eq!(parse_segment("env/8", &slurm).unwrap().to_text(), "2/8");
        let job = env_of(&[("JOB_COMPLETION_INDEX", "1")]);
        assert_eq!(
            parse_segment("env/2:1:1", &job).unwrap(),
            Segment::parse("1/2:1:1", "x").unwrap()
        );
    }

    #[test]
    fn a_segment_the_environment_cannot_give_says_what_is_missing() {
        let none = env_of(&[]);
        let e = parse_segment("env/4", &none).unwrap_err();
        assert!(e
            .to_string()
            .contains("neither SLURM_PROCID nor JOB_COMPLETION_INDEX"));
        let index_only = env_of(&[("SLURM_PROCID", "0")]);
        assert_eq!(
            parse_segment("env", &index_only).unwrap_err().to_string(),
            "--segment env: SLURM_NTASKS is not set: give the count, e.g. env/8"
        );
        assert_eq!(
            parse_segment("envy", &index_only).unwrap_err().to_string(),
            "--segment envy: expected env, env/COUNT or env/W0:W1:..."
        );
        let e = parse_segment("9/2", &none).unwrap_err();
        assert!(matches!(e, SegmentError::Plan(_)) && crate::is_usage(&e));
    }

    #[test]
    fn a_relative_start_is_rounded_up_to_whole_seconds() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_millis(1_764_000_000_250);
        let (at, text) = parse_start_at("+5s", now).unwrap();
        assert_eq!(
            at,
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_000_006)
        );
        assert_eq!(text, rfc3339(at));
        let (at, text) = parse_start_at(" 2026-12-01T10:00:00Z ", now).unwrap();
        assert_eq!(text, "2026-12-01T10:00:00Z");
        assert_eq!(rfc3339(at), "2026-12-01T10:00:00Z");
        assert_eq!(
            parse_start_at("+soon", now).unwrap_err().to_string(),
            "--start-at +soon: expected +DURATION such as +5s, or an RFC 3339 time"
        );
    }

    #[test]
    fn the_run_is_named_by_slurm_else_by_its_start() {
        let slurm = env_of(&[("SLURM_JOB_ID", "77"), ("SLURM_STEP_ID", "3")]);
        assert_eq!(default_run_id(Some("x"), &slurm), "slurm-77.3");
        let none = env_of(&[]);
        assert_eq!(
            default_run_id(Some("2026-12-01T10:00:00Z"), &none),
            "start-2026-12-01T10:00:00Z"
        );
        assert_eq!(default_run_id(None, &none), "run");
        let r = Resolved::new("1/2", None, Some("mine"), &none).unwrap();
        assert_eq!(r.run_id, "mine");
        assert_eq!(r.part().segment, r.segment);
    }

    #[test]
    fn start_at_alone_is_the_whole_run() {
        let none = env_of(&[]);
        let r = Resolved::from_flags(None, Some("2026-12-01T10:00:00Z"), None, &none)
            .unwrap()
            .unwrap();
        assert!(r.segment.is_whole());
        assert_eq!(r.run_id, "start-2026-12-01T10:00:00Z");
        assert!(Resolved::from_flags(None, None, None, &none)
            .unwrap()
            .is_none());
    }

    #[test]
    fn tagged_requests_carry_their_number_and_segment() {
        let plan = crate::bench::tests::plan_for("http://127.0.0.1:1/");
        let t = tagged(&plan);
        let names: Vec<&str> = t.request.headers[plan.request.headers.len()..]
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(names, ["X-Loadmark-Seq", "X-Loadmark-Segment"]);
        assert!(t.mix.templated);
        assert!(!plan.mix.templated, "the plan given is left as it was");
    }
}
