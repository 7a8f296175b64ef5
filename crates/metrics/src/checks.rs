//! [`CheckStats`]: response checks counted by name (issue 17), mergeable by addition.
//!
//! A check that fails does not turn a response into an error: the response keeps its
//! latency and status, and the failure is counted here, apart from transport errors. Memory
//! is bounded: per check two counters and one example (the first failure seen).

use serde::{Deserialize, Serialize};

/// The most characters of a failure example kept (a body excerpt is cut there).
pub const CHECK_EXAMPLE_CHARS: usize = 200;

/// One check's counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckStat {
    /// The check's name: `NAME` of `NAME: EXPR`, else the expression as written.
    pub name: String,
    pub passed: u64,
    pub failed: u64,
    /// What the first failure saw, e.g. `status 500; body: {"error":...}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
}

/// Every check of a run, in the order they were given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckStats {
    pub checks: Vec<CheckStat>,
    /// Responses with at least one failed check (each counted once, whatever number of
    /// its checks failed): the "failed checks" a threshold on requests means.
    pub failed_responses: u64,
    /// Responses that were checked.
    pub checked_responses: u64,
    /// Responses with a 2xx/3xx status and at least one failed check: what checks add to
    /// the run's failed requests (non-2xx/3xx responses are failed already).
    #[serde(default)]
    pub failed_success_responses: u64,
}

impl CheckStats {
    /// The stat of check `index` named `name`, created (with the names before it) when new.
    fn slot(&mut self, index: usize, names: &[String]) -> &mut CheckStat {
        while self.checks.len() <= index {
            let name = names[self.checks.len()].clone();
            self.checks.push(CheckStat {
                name,
                passed: 0,
                failed: 0,
                first_failure: None,
            });
        }
        &mut self.checks[index]
    }

    /// Counts one response's outcomes: `failures` yields the index of each failed check
    /// with what it saw (only rendered when it is the first failure of that check).
    pub fn record(
        &mut self,
        names: &[String],
        status: u16,
        failed: &[bool],
        mut example: impl FnMut(usize) -> String,
    ) {
        self.checked_responses += 1;
        let mut any = false;
        for (i, &f) in failed.iter().enumerate() {
            let stat = self.slot(i, names);
            if f {
                any = true;
                stat.failed += 1;
                if stat.first_failure.is_none() {
                    stat.first_failure = Some(cut(example(i)));
                }
            } else {
                stat.passed += 1;
            }
        }
        self.failed_responses += u64::from(any);
        self.failed_success_responses += u64::from(any && (200..400).contains(&status));
    }

    /// As [`CheckStats::record`], each check's stat found (or added) by its name: for
    /// responses of different kinds (a scenario's steps) recorded into one list.
    pub fn record_named(
        &mut self,
        names: &[String],
        status: u16,
        failed: &[bool],
        mut example: impl FnMut(usize) -> String,
    ) {
        self.checked_responses += 1;
        let mut any = false;
        for (i, &f) in failed.iter().enumerate() {
            let stat = match self.checks.iter().position(|c| c.name == names[i]) {
                Some(at) => &mut self.checks[at],
                None => {
                    self.checks.push(CheckStat {
                        name: names[i].clone(),
                        passed: 0,
                        failed: 0,
                        first_failure: None,
                    });
                    self.checks.last_mut().expect("just pushed")
                }
            };
            if f {
                any = true;
                stat.failed += 1;
                if stat.first_failure.is_none() {
                    stat.first_failure = Some(cut(example(i)));
                }
            } else {
                stat.passed += 1;
            }
        }
        self.failed_responses += u64::from(any);
        self.failed_success_responses += u64::from(any && (200..400).contains(&status));
    }

    /// Checks counted: passes plus failures over every check.
    pub fn evaluated(&self) -> u64 {
        self.checks.iter().map(|c| c.passed + c.failed).sum()
    }

    pub fn passed(&self) -> u64 {
        self.checks.iter().map(|c| c.passed).sum()
    }

    pub fn get(&self, name: &str) -> Option<&CheckStat> {
        self.checks.iter().find(|c| c.name == name)
    }

    /// Adds `other` into `self`, matching checks by name (new names are appended in their
    /// order). The first example kept is `self`'s when it has one.
    pub fn merge(&mut self, other: &CheckStats) {
        self.failed_responses += other.failed_responses;
        self.checked_responses += other.checked_responses;
        self.failed_success_responses += other.failed_success_responses;
        for theirs in &other.checks {
            match self.checks.iter_mut().find(|c| c.name == theirs.name) {
                Some(mine) => {
                    mine.passed += theirs.passed;
                    mine.failed += theirs.failed;
                    if mine.first_failure.is_none() {
                        mine.first_failure.clone_from(&theirs.first_failure);
                    }
                }
                None => self.checks.push(theirs.clone()),
            }
        }
    }
}

fn cut(mut s: String) -> String {
    if let Some((i, _)) = s.char_indices().nth(CHECK_EXAMPLE_CHARS) {
        s.truncate(i);
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_keep_first_example_and_merge_exactly() {
        let names = vec!["a".to_string(), "b".to_string()];
        let mut one = CheckStats::default();
        one.record(&names, 200, &[false, true], |i| format!("first {i}"));
        one.record(&names, 200, &[true, true], |i| format!("second {i}"));
        one.record(&names, 200, &[false, false], |_| unreachable!());
        assert_eq!(one.checks[0].passed, 2);
        assert_eq!(one.checks[0].failed, 1);
        assert_eq!(one.checks[1].failed, 2);
        assert_eq!(one.checks[1].first_failure.as_deref(), Some("first 1"));
        assert_eq!(one.checks[0].first_failure.as_deref(), Some("second 0"));
        assert_eq!((one.failed_responses, one.checked_responses), (2, 3));

        let mut other = CheckStats::default();
        let names2 = vec!["b".to_string(), "c".to_string()];
        other.record(&names2, 500, &[false, true], |_| "x".repeat(500));
        let mut merged = one.clone();
        merged.merge(&other);
        assert_eq!(merged.get("b").unwrap().passed, 2);
        assert_eq!(merged.get("b").unwrap().failed, 2);
        assert_eq!(merged.get("c").unwrap().failed, 1);
        assert_eq!(
            merged
                .get("c")
                .unwrap()
                .first_failure
                .as_ref()
                .unwrap()
                .chars()
                .count(),
            CHECK_EXAMPLE_CHARS + 1
        );
        assert_eq!((merged.failed_responses, merged.checked_responses), (3, 4));
        assert_eq!(
            merged.failed_success_responses, 2,
            "the 500 was failed already"
        );
        assert_eq!(merged.evaluated(), 8);
        let json = serde_json::to_string(&merged).unwrap();
        assert_eq!(serde_json::from_str::<CheckStats>(&json).unwrap(), merged);
    }
}
