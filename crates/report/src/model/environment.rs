//! Where a run happened: enough to judge whether two reports are comparable.
//!
//! Part of the model: imports `model` siblings and `units` only, never a renderer.

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
    /// The host's state that timing figures depend on (absent in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostState>,
}

/// What a machine's idle loop and clock do: figures at microseconds (schedule lag, lingering,
/// wake-ups) move with them, so they are recorded beside every result (issue 43). On a KVM
/// guest the `haltpoll` cpuidle driver polls for `guest_halt_poll_ns` before it halts an
/// idle CPU, so a wake-up costs no exit to the hypervisor; with another driver (or none) the
/// value is there but unused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct HostState {
    /// The CPUs loadmark could run on (its affinity mask), of `cores`.
    pub usable_cpus: usize,
    /// /sys/devices/system/cpu/cpuidle/current_driver ("none" when no driver is bound).
    pub cpuidle_driver: String,
    /// /sys/module/haltpoll/parameters/guest_halt_poll_ns, when the module is there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_halt_poll_ns: Option<u64>,
    /// The kernel's clock source (tsc, kvm-clock, ...): a slow one makes every timestamp
    /// a system call.
    pub clocksource: String,
}

impl HostState {
    /// Whether an idle CPU polls before it halts (the haltpoll driver with a non-zero poll
    /// time): wake-ups then cost far less.
    pub fn idle_polls(&self) -> bool {
        self.cpuidle_driver == "haltpoll" && self.guest_halt_poll_ns.is_some_and(|ns| ns > 0)
    }

    /// One line: `idle: haltpoll, polls 200000 ns; clock tsc; 1 of 2 CPUs usable`.
    pub fn line(&self, cores: usize) -> String {
        let idle = match (self.idle_polls(), self.guest_halt_poll_ns) {
            (true, Some(ns)) => format!("idle loop polls {ns} ns (haltpoll)"),
            (false, Some(ns)) => format!(
                "idle loop halts at once (cpuidle driver {}; guest_halt_poll_ns={ns} unused)",
                self.cpuidle_driver
            ),
            (_, None) => format!("idle: cpuidle driver {}", self.cpuidle_driver),
        };
        format!(
            "{idle}; clock {}; {} of {cores} CPUs usable",
            self.clocksource, self.usable_cpus
        )
    }

    /// Reads the state from /sys (Linux); `usable_cpus` is given by the caller, which knows
    /// its affinity.
    pub fn detect(usable_cpus: usize) -> Self {
        let trimmed = |p: &str| read(p).trim().to_string();
        let driver = trimmed("/sys/devices/system/cpu/cpuidle/current_driver");
        HostState {
            usable_cpus,
            cpuidle_driver: if driver.is_empty() {
                "none".to_string()
            } else {
                driver
            },
            guest_halt_poll_ns: trimmed("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
                .parse()
                .ok(),
            clocksource: trimmed(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            ),
        }
    }
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
            host: None,
        }
    }
}
