//! The search itself, pure: which rate to try next and when to stop, from the verdicts so
//! far. Rates rise geometrically from `from` (×`factor`) up to `to`; after the first
//! failure, a bisection between the last rate that met every objective and the first that
//! did not, until they are within `precision` of each other; then both boundary rates run
//! `repeats` more times. A rate's verdict is the majority of its runs (a tie runs it
//! again), so one stall of a busy machine neither makes nor breaks the answer; a repeat
//! that turns a boundary's majority moves the boundary and the bisection resumes.
//! `max_steps` bounds it all. Tested without a clock or a server.

use loadmark_report::SearchEnd;

/// How the search moves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchConfig {
    pub from: f64,
    pub to: f64,
    /// Each rising step multiplies the rate by this (> 1).
    pub factor: f64,
    /// Bisection stops when (fail − pass) / pass is at most this.
    pub precision: f64,
    /// Extra runs of each boundary rate, for the interval.
    pub repeats: u32,
    /// At most this many steps in all.
    pub max_steps: usize,
}

/// What a step found.
#[derive(Debug, Clone, PartialEq)]
pub enum StepVerdict {
    Met,
    /// These objectives broke (as worded for the report).
    Broke(Vec<String>),
    /// loadmark could not hold the rate: why.
    ClientLimited(String),
    /// The step broke an objective while loadmark left requests late or was busy (its own
    /// work, or other processes on its cores): the step says nothing of the server. The
    /// driver runs it again a few times before calling it [`StepVerdict::ClientLimited`];
    /// the search never records it.
    Late(String),
    /// The server went away: the error class and an example.
    ServerDown(String),
}

/// What to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Run this rate; `repeat` when it repeats a boundary step.
    Probe {
        rate: f64,
        repeat: bool,
    },
    Done(SearchEnd),
}

/// The search's state: every verdict so far by rate.
#[derive(Debug, Clone)]
pub struct Search {
    cfg: SearchConfig,
    /// (rate, met) of every step that measured the server.
    runs: Vec<(f64, bool)>,
    steps: usize,
    ended: Option<SearchEnd>,
}

impl Search {
    pub fn new(cfg: SearchConfig) -> Search {
        Search {
            cfg,
            runs: Vec::new(),
            steps: 0,
            ended: None,
        }
    }

    /// The highest rate that met every objective each time it ran.
    pub fn last_pass(&self) -> Option<f64> {
        self.rates(true).reduce(f64::max)
    }

    /// The lowest rate above [`Self::last_pass`] that broke an objective at least once.
    pub fn first_fail(&self) -> Option<f64> {
        let pass = self.last_pass();
        self.rates(false)
            .filter(|&r| pass.is_none_or(|p| r > p))
            .reduce(f64::min)
    }

    /// How many times `rate` ran, and how many of those broke an objective.
    pub fn runs_at(&self, rate: f64) -> (u32, u32) {
        let runs = self.runs.iter().filter(|(r, _)| *r == rate);
        let broke = runs.clone().filter(|(_, met)| !met).count() as u32;
        (runs.count() as u32, broke)
    }

    /// Rates whose runs mostly met (`met`), or mostly broke (`!met`). A rate whose runs are
    /// split evenly is neither, and runs again (see [`Self::next_step`]): one stall of the
    /// machine does not decide a rate, and a rate is not called met on a coin toss.
    fn rates(&self, met: bool) -> impl Iterator<Item = f64> + Clone + '_ {
        self.runs
            .iter()
            .map(|(r, _)| *r)
            .filter(move |&r| self.verdict_of(r) == Some(met))
    }

    fn verdict_of(&self, rate: f64) -> Option<bool> {
        let (runs, broke) = self.runs_at(rate);
        let kept = runs - broke;
        (kept != broke).then_some(kept > broke)
    }

    /// Records the verdict of the step at `rate`.
    pub fn record(&mut self, rate: f64, verdict: &StepVerdict) {
        self.steps += 1;
        match verdict {
            StepVerdict::Met => self.runs.push((rate, true)),
            StepVerdict::Broke(_) => self.runs.push((rate, false)),
            StepVerdict::ClientLimited(_) | StepVerdict::Late(_) => {
                self.ended = Some(SearchEnd::ClientLimited)
            }
            StepVerdict::ServerDown(_) => self.ended = Some(SearchEnd::ServerDown),
        }
    }

    /// The next step, or the end.
    pub fn next_step(&mut self) -> Next {
        if let Some(end) = &self.ended {
            return Next::Done(end.clone());
        }
        if self.steps >= self.cfg.max_steps {
            return Next::Done(SearchEnd::StepLimit);
        }
        let (pass, fail) = (self.last_pass(), self.first_fail());
        // A rate split evenly between met and broke, above the last pass (and below the
        // first fail): run it again to break the tie.
        let tied = self.runs.iter().map(|(r, _)| *r).find(|&r| {
            self.verdict_of(r).is_none() && pass.is_none_or(|p| r > p) && fail.is_none_or(|f| r < f)
        });
        if let Some(rate) = tied {
            return Next::Probe { rate, repeat: true };
        }
        let Some(fail) = fail else {
            // Still rising.
            return match pass {
                None if self.runs.is_empty() => self.probe(self.cfg.from.min(self.cfg.to)),
                None => Next::Done(SearchEnd::BrokeAtFrom),
                Some(p) if p >= self.cfg.to => Next::Done(SearchEnd::MetAtTo),
                Some(p) => self.probe((p * self.cfg.factor).min(self.cfg.to)),
            };
        };
        let Some(pass) = pass else {
            return Next::Done(SearchEnd::BrokeAtFrom);
        };
        if (fail - pass) / pass > self.cfg.precision {
            // (After a repeat at the boundary broke, the bisection resumes below it.)
            // Rounded to whole requests per second: steps read better, and nothing finer
            // is measurable.
            let mid = ((pass + fail) / 2.0).round();
            if mid <= pass || mid >= fail {
                return self.finish_or_repeat(pass, fail);
            }
            return self.probe(mid);
        }
        self.finish_or_repeat(pass, fail)
    }

    /// Both boundary rates run `1 + repeats` times in all (the lower first, so a break
    /// there is found before time goes to the upper), then the search is done.
    fn finish_or_repeat(&mut self, pass: f64, fail: f64) -> Next {
        let wanted = 1 + self.cfg.repeats;
        for rate in [pass, fail] {
            if self.runs_at(rate).0 < wanted {
                return Next::Probe { rate, repeat: true };
            }
        }
        Next::Done(SearchEnd::Found)
    }

    fn probe(&self, rate: f64) -> Next {
        Next::Probe {
            rate,
            repeat: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> SearchConfig {
        SearchConfig {
            from: 1000.0,
            to: 100_000.0,
            factor: 2.0,
            precision: 0.02,
            repeats: 2,
            max_steps: 60,
        }
    }

    /// Runs the search against a service whose capacity is `cap` (noise-free).
    fn against(
        cfg: SearchConfig,
        verdict: impl Fn(f64) -> StepVerdict,
    ) -> (Search, SearchEnd, Vec<f64>) {
        let mut s = Search::new(cfg);
        let mut rates = Vec::new();
        loop {
            match s.next_step() {
                Next::Probe { rate, .. } => {
                    rates.push(rate);
                    s.record(rate, &verdict(rate));
                }
                Next::Done(end) => return (s, end, rates),
            }
        }
    }

    fn cap(c: f64) -> impl Fn(f64) -> StepVerdict {
        move |r| {
            if r <= c {
                StepVerdict::Met
            } else {
                StepVerdict::Broke(vec!["p99 < 20ms".into()])
            }
        }
    }

    #[test]
    fn rises_geometrically_then_bisects_to_the_precision_and_repeats_the_boundary() {
        let (s, end, rates) = against(cfg(), cap(5_000.0));
        assert_eq!(end, SearchEnd::Found);
        assert_eq!(&rates[..4], &[1000.0, 2000.0, 4000.0, 8000.0]);
        let (pass, fail) = (s.last_pass().unwrap(), s.first_fail().unwrap());
        assert!(pass <= 5_000.0 && fail > 5_000.0, "{pass} {fail}");
        assert!((fail - pass) / pass <= 0.02);
        assert_eq!((s.runs_at(pass), s.runs_at(fail)), ((3, 0), (3, 3)));
        assert!(rates.len() < 20, "{rates:?}");
    }

    #[test]
    fn ends_at_to_at_from_and_on_a_client_or_server_limit() {
        let (s, end, rates) = against(cfg(), cap(1e9));
        assert_eq!(end, SearchEnd::MetAtTo);
        assert_eq!(*rates.last().unwrap(), 100_000.0);
        assert_eq!(s.last_pass(), Some(100_000.0));
        let (_, end, rates) = against(cfg(), cap(10.0));
        assert_eq!((end, rates.len()), (SearchEnd::BrokeAtFrom, 1));
        let (s, end, _) = against(cfg(), |r| {
            if r > 3000.0 {
                StepVerdict::ClientLimited("busy".into())
            } else {
                StepVerdict::Met
            }
        });
        assert_eq!(
            (end, s.last_pass()),
            (SearchEnd::ClientLimited, Some(2000.0))
        );
        let (_, end, _) = against(cfg(), |_| StepVerdict::ServerDown("connect".into()));
        assert_eq!(end, SearchEnd::ServerDown);
    }

    #[test]
    fn a_rate_that_broke_once_runs_again_and_its_majority_decides() {
        use std::cell::Cell;
        // The rate just under capacity fails once, on its first repeat.
        let failed_once = Cell::new(false);
        let (s, end, _) = against(cfg(), |r| {
            if r > 4950.0 && r <= 5000.0 && !failed_once.get() && r > 4000.0 {
                let seen = failed_once.replace(true);
                if seen {
                    StepVerdict::Met
                } else {
                    StepVerdict::Broke(vec!["p99".into()])
                }
            } else {
                cap(5000.0)(r)
            }
        });
        assert_eq!(end, SearchEnd::Found);
        // The rate that broke once ran again until its majority met: the answer stands.
        let pass = s.last_pass().unwrap();
        assert!(pass > 4950.0 && pass <= 5000.0, "{pass}");
        let (runs, broke) = s.runs_at(pass);
        assert!(runs >= 3 && broke == 1, "{runs} {broke}");
        // A budget ends it.
        let (_, end, rates) = against(
            SearchConfig {
                max_steps: 3,
                ..cfg()
            },
            cap(5000.0),
        );
        assert_eq!((end, rates.len()), (SearchEnd::StepLimit, 3));
    }
}
