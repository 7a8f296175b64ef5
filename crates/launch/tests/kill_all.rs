//! `kill_all_launched` kills every server this process launched, so it gets a test binary
//! (a process) of its own.

use std::time::{Duration, Instant};

use loadmark_launch::{kill_all_launched, launch, LaunchSpec, Readiness};
use loadmark_test_support::{wait_until, TempDir};

fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s[s.rfind(')').unwrap() + 1..].trim_start().starts_with('Z'))
}

#[test]
fn kill_all_launched_kills_running_servers_from_another_thread() {
    let dir = TempDir::new("launch-killall");
    let servers: Vec<_> = (0..2)
        .map(|i| {
            // Ignoring SIGTERM proves the kill is a SIGKILL, not a polite request.
            let mut spec = LaunchSpec::new(
                format!("server{i}"),
                "trap '' TERM; sleep 30",
                Readiness::Delay(Duration::from_millis(50)),
                dir.join(format!("server{i}.log")),
            );
            spec.stop_grace = Duration::from_secs(20);
            launch(&spec).unwrap()
        })
        .collect();
    let pids: Vec<u32> = servers.iter().map(|s| s.pid()).collect();
    assert!(pids.iter().all(|&p| running(p)));

    // As a Ctrl-C handler would: from another thread, while the owners hold their servers.
    std::thread::spawn(kill_all_launched).join().unwrap();
    wait_until("the servers to die of kill_all_launched", || {
        !pids.iter().any(|&p| running(p))
    });

    // Stopping afterwards only reaps: no 20 s grace period (the bound leaves a loaded machine
    // plenty of room below it), no error.
    let started = Instant::now();
    for server in servers {
        let stopped = server.stop().unwrap();
        assert_eq!(stopped.signal, Some(libc::SIGKILL));
    }
    assert!(started.elapsed() < Duration::from_secs(15));
}
