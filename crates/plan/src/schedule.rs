//! Load profiles over time, and the pure pacing math behind open-loop load.
//!
//! A [`Profile`] is a list of [`Stage`]s, each a linear ramp (or hold) of a value (requests
//! per second in open loop, connections in closed loop) over a duration. Requests of an
//! open-loop run are numbered globally from 0; [`Profile::due`] gives the intended send time
//! of request `k`, so any worker (or any machine running one segment of a plan) can own every
//! N-th request and still send exactly what the profile says. Nothing here reads a clock.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

use crate::text::{format_duration, parse_duration, PlanError};

/// One stage: the value moves linearly from `from` to `to` over `duration`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Stage {
    #[serde(with = "crate::plan::duration_text")]
    #[schemars(with = "String")]
    pub duration: Duration,
    pub from: f64,
    pub to: f64,
}

/// Stages run back to back from time zero.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Profile {
    pub stages: Vec<Stage>,
}

/// What a pacer should do now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// The next request is due this long from now.
    Wait(Duration),
    /// A request is due (or overdue): send it.
    Send,
    /// The profile has ended: no more requests.
    Stop,
}

const STAGES_FORM: &str = "comma-separated stages DURATION:TO or DURATION:FROM->TO, e.g. '10s:0->5000,40s:5000,10s:5000->0'";

impl Profile {
    /// A constant value for `duration`.
    pub fn constant(value: f64, duration: Duration) -> Self {
        Profile {
            stages: vec![Stage {
                duration,
                from: value,
                to: value,
            }],
        }
    }

    /// Parses `10s:0->5000,40s:5000,10s:5000->0`. A stage written `DURATION:TO` starts where
    /// the previous one ended (the first from `start`), so `40s:5000` after a ramp to 5000
    /// holds it.
    pub fn parse(text: &str, start: f64, field: &'static str) -> Result<Profile, PlanError> {
        let bad = || PlanError::invalid(field, text, STAGES_FORM);
        let mut stages = Vec::new();
        let mut previous = start;
        for part in text.split(',') {
            let (duration, values) = part.trim().split_once(':').ok_or_else(bad)?;
            let duration = parse_duration(duration).map_err(|_| bad())?;
            let number = |s: &str| -> Result<f64, PlanError> {
                s.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .ok_or_else(bad)
            };
            let (from, to) = match values.split_once("->") {
                Some((from, to)) => (number(from)?, number(to)?),
                None => (previous, number(values)?),
            };
            if duration.is_zero() {
                return Err(bad());
            }
            stages.push(Stage { duration, from, to });
            previous = to;
        }
        Ok(Profile { stages })
    }

    /// Total length of the profile.
    pub fn duration(&self) -> Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }

    /// The value at `elapsed` (`None` after the end).
    pub fn value_at(&self, elapsed: Duration) -> Option<f64> {
        let mut start = Duration::ZERO;
        for s in &self.stages {
            if elapsed < start + s.duration {
                let f = (elapsed - start).as_secs_f64() / s.duration.as_secs_f64();
                return Some(s.from + (s.to - s.from) * f);
            }
            start += s.duration;
        }
        None
    }

    /// The largest value any stage reaches.
    pub fn peak(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| s.from.max(s.to))
            .fold(0.0, f64::max)
    }

    /// The integral of the profile from 0 to `elapsed`: for rates, how many requests are due
    /// by then (fractional).
    pub fn hits_by(&self, elapsed: Duration) -> f64 {
        let mut total = 0.0;
        let mut start = Duration::ZERO;
        for s in &self.stages {
            let t = elapsed.saturating_sub(start).min(s.duration).as_secs_f64();
            let d = s.duration.as_secs_f64();
            total += s.from * t + (s.to - s.from) * t * t / (2.0 * d);
            start += s.duration;
            if elapsed <= start {
                break;
            }
        }
        total
    }

    /// How many requests the whole profile sends: request `k` is sent when `hits_by` reaches
    /// `k`, so this is the number of whole hits strictly before the end (plus the one at 0).
    pub fn total_requests(&self) -> u64 {
        let total = self.hits_by(self.duration());
        let mut n = total.ceil() as u64;
        // Exactly integral totals: request k = total falls on the end instant, which is out.
        while n > 0 && self.due(n - 1).is_none() {
            n -= 1;
        }
        n
    }

    /// The intended send time of request `k` (numbered from 0 over the whole run), or `None`
    /// when it falls at or after the end.
    pub fn due(&self, k: u64) -> Option<Duration> {
        let target = k as f64;
        let mut before = 0.0;
        let mut start = Duration::ZERO;
        for s in &self.stages {
            let d = s.duration.as_secs_f64();
            let in_stage = s.from * d + (s.to - s.from) * d / 2.0;
            if target < before + in_stage {
                let h = target - before;
                // Solve from·t + (to−from)·t²/(2d) = h for t in [0, d], in the form that
                // stays finite for flat stages (a = 0) and ramps from zero (b = 0).
                let a = (s.to - s.from) / (2.0 * d);
                let b = s.from;
                let denominator = b + (b * b + 4.0 * a * h).max(0.0).sqrt();
                let t = if h <= 0.0 {
                    0.0
                } else if denominator > 0.0 {
                    2.0 * h / denominator
                } else {
                    d
                };
                let t = if t.is_finite() { t.clamp(0.0, d) } else { d };
                return Some(start + Duration::from_secs_f64(t));
            }
            before += in_stage;
            start += s.duration;
        }
        None
    }

    /// vegeta-style pacing: given the time since start and how many requests were sent,
    /// wait, send, or stop.
    pub fn pace(&self, elapsed: Duration, sent: u64) -> Pace {
        match self.due(sent) {
            None => Pace::Stop,
            Some(due) if due <= elapsed => Pace::Send,
            Some(due) => Pace::Wait(due - elapsed),
        }
    }

    /// Text that [`Profile::parse`] reads back.
    pub fn to_text(&self) -> String {
        self.stages
            .iter()
            .map(|s| format!("{}:{}->{}", format_duration(s.duration), s.from, s.to))
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn constant_rate_sends_exactly_rate_times_duration() {
        let p = Profile::constant(1000.0, secs(10.0));
        assert_eq!(p.total_requests(), 10_000);
        assert_eq!(p.due(0), Some(Duration::ZERO));
        assert_eq!(p.due(1), Some(Duration::from_millis(1)));
        assert_eq!(p.due(9_999), Some(secs(9.999)));
        assert_eq!(p.due(10_000), None);
        assert_eq!(p.pace(Duration::ZERO, 0), Pace::Send);
        assert_eq!(
            p.pace(Duration::ZERO, 1),
            Pace::Wait(Duration::from_millis(1))
        );
        assert_eq!(
            p.pace(secs(5.0), 4_000),
            Pace::Send,
            "behind schedule: send now"
        );
        assert_eq!(p.pace(secs(10.0), 10_000), Pace::Stop);
    }

    #[test]
    fn fractional_rates_keep_exact_counts() {
        let p = Profile::constant(2.5, secs(3.0));
        assert_eq!(p.total_requests(), 8); // at 0, 0.4, ..., 2.8 s
        assert_eq!(p.due(7), Some(secs(2.8)));
    }

    #[test]
    fn linear_ramp_sends_its_integral() {
        let p = Profile::parse("10s:0->1000", 0.0, "--stages").unwrap();
        assert_eq!(p.total_requests(), 5_000);
        // Half the requests are due when the integral reaches 2500: t = sqrt(2500*2*10/1000).
        let t = p.due(2_500).unwrap().as_secs_f64();
        assert!((t - 50f64.sqrt()).abs() < 1e-9, "{t}");
        // Due times never go backwards.
        let mut last = Duration::ZERO;
        for k in 0..5_000 {
            let d = p.due(k).unwrap();
            assert!(d >= last);
            last = d;
        }
    }

    #[test]
    fn multi_stage_profile_counts_and_holds() {
        let p = Profile::parse("10s:0->5000,40s:5000,10s:5000->0", 0.0, "--stages").unwrap();
        assert_eq!(
            p.stages[1],
            Stage {
                duration: secs(40.0),
                from: 5000.0,
                to: 5000.0
            }
        );
        assert_eq!(p.duration(), secs(60.0));
        assert_eq!(p.total_requests(), 25_000 + 200_000 + 25_000);
        assert_eq!(p.value_at(secs(5.0)), Some(2500.0));
        assert_eq!(p.value_at(secs(30.0)), Some(5000.0));
        assert_eq!(p.value_at(secs(60.0)), None);
        assert_eq!(p.peak(), 5000.0);
        let back = Profile::parse(&p.to_text(), 0.0, "--stages").unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn zero_rate_stage_sends_nothing_and_is_skipped() {
        let p = Profile::parse("2s:0,2s:10->10", 0.0, "--stages").unwrap();
        assert_eq!(p.total_requests(), 20);
        assert_eq!(p.due(0), Some(secs(2.0)));
    }

    #[test]
    fn pacing_from_a_global_index_lets_workers_share_a_schedule() {
        // Two workers owning even and odd requests send together exactly the whole profile.
        let p = Profile::parse("1s:100->300", 0.0, "--stages").unwrap();
        let total = p.total_requests();
        let even = (0..).step_by(2).take_while(|&k| p.due(k).is_some()).count() as u64;
        let odd = (1..).step_by(2).take_while(|&k| p.due(k).is_some()).count() as u64;
        assert_eq!(even + odd, total);
        assert_eq!(total, 200);
    }

    #[test]
    fn nearly_flat_ramps_from_zero_stay_finite() {
        // Found by fuzzing: a ramp from 0 to 1e-6 over 10^6 s used to compute 0/0.
        let p = Profile::parse("1000000s:0.000001", 0.0, "--stages").unwrap();
        assert_eq!(p.total_requests(), 1);
        assert_eq!(p.due(0), Some(Duration::ZERO));
        assert_eq!(p.due(1), None);
        let p = Profile::parse("10s:0->10", 0.0, "--stages").unwrap();
        let t = p.due(1).unwrap().as_secs_f64();
        assert!((t - 2f64.sqrt()).abs() < 1e-9, "{t}");
    }

    #[test]
    fn bad_stages_name_the_flag_and_form() {
        for bad in ["", "10s", "10s:abc", "x:10", "10s:-5", "0s:10", "10s:1->"] {
            let err = Profile::parse(bad, 0.0, "--stages")
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("--stages") && err.contains("DURATION:TO"),
                "{bad}: {err}"
            );
        }
    }
}
