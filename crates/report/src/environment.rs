//! Where a run happened: enough to judge whether two reports are comparable.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct Environment {
    pub cpu_model: String,
    /// The machine's logical CPUs, whatever CPU affinity (taskset) loadmark ran under.
    pub cores: usize,
    pub memory_bytes: u64,
    pub os: String,
    pub kernel: String,
    /// The loadmark build that made the run (absent in results written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Build>,
}

/// Which loadmark binary ran: what `loadmark --version` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct Build {
    /// The crate version, e.g. "0.1.0".
    pub version: String,
    /// The git commit it was built from (12 hex digits), or "unknown" when built without git.
    pub commit: String,
    /// The cargo features that were on, e.g. `["mimalloc"]`.
    pub features: Vec<String>,
    /// The target triple: `x86_64-unknown-linux-musl` is the static binary.
    pub target: String,
}

impl std::fmt::Display for Build {
    /// One line: `0.1.0 (commit 0123456789ab, x86_64-unknown-linux-musl, features: mimalloc)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let features = if self.features.is_empty() {
            "none".to_string()
        } else {
            self.features.join(",")
        };
        write!(
            f,
            "{} (commit {}, {}, features: {features})",
            self.version, self.commit, self.target
        )
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

impl Environment {
    /// Reads the facts from /proc and /etc (Linux); unknown fields stay empty. `build` is
    /// left to the binary, which alone knows how it was built.
    pub fn detect() -> Self {
        let cpuinfo = read("/proc/cpuinfo");
        // The machine's CPUs, not the ones this process may use: a benchmark pinned with
        // taskset still ran on a machine of this size.
        let listed = cpuinfo
            .lines()
            .filter(|l| l.starts_with("processor"))
            .count();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default();
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024);
        let os = read("/etc/os-release")
            .lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_string())
            .unwrap_or_else(|| std::env::consts::OS.to_string());
        Environment {
            cpu_model,
            cores: if listed > 0 {
                listed
            } else {
                std::thread::available_parallelism().map_or(1, |n| n.get())
            },
            memory_bytes,
            os,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            build: None,
        }
    }
}
