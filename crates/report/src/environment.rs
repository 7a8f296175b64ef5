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
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

impl Environment {
    /// Reads the facts from /proc and /etc (Linux); unknown fields stay empty.
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
        }
    }
}
