//! Monitors real processes this test spawns; every wait is bounded by a deadline.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use loadmark_monitor::{
    find_pid_by_listener, find_pid_by_name, sample_once, Listener, Monitor, MonitorError,
};
use loadmark_test_support::{wait_until, TempDir, PATIENCE};

/// Kills the child's whole process group and reaps it, also when an assertion fails.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        // SAFETY: kill(2) has no memory-safety preconditions; the group is the child's own.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(command: &mut Command) -> Guard {
    command.process_group(0);
    // A binary copied by another test of this process can be briefly "busy" (ETXTBSY) while
    // a concurrently forked child still holds its write descriptor (until it execs, which a
    // loaded machine can delay); retry for as long as any wait of the suite.
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        match command.spawn() {
            Ok(child) => return Guard(child),
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("spawn {command:?}: {e}"),
        }
    }
    panic!("spawn {command:?}: text file stayed busy");
}

/// A copy of /bin/sleep under a name no other process has, in a directory of its own.
fn sleeper(name: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new("monitor");
    let path = dir.join(name);
    std::fs::copy("/bin/sleep", &path).unwrap();
    (dir, path)
}

fn count_named(name: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim_end() == name)
        })
        .count()
}

#[test]
fn sees_memory_grow_and_cpu_burn() {
    // Burns 0.4 s of its own CPU time, touches 64 MiB, burns 0.2 s more, then says so and
    // waits to be killed. CPU time, not wall time: on a loaded machine a wall-clock burn gets
    // whatever share the scheduler gives it (29.99% of a core was seen at load average 11),
    // while the CPU it used is what the monitor must account for.
    let script = "import time, sys\n\
                  t = time.process_time()\n\
                  while time.process_time() - t < 0.4: pass\n\
                  data = b'x' * (64 << 20)\n\
                  t = time.process_time()\n\
                  while time.process_time() - t < 0.2: pass\n\
                  print('done', flush=True)\n\
                  time.sleep(30)\n";
    let mut child = spawn(
        Command::new("python3")
            .args(["-c", script])
            .stdout(Stdio::piped()),
    );
    let monitor = Monitor::start(child.0.id(), Duration::from_millis(100)).unwrap();
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "done");
    let series = monitor.stop();
    assert_eq!(series.pid, child.0.id());
    assert_eq!(series.interval_ms, 100);
    assert_eq!(series.stopped_early, None);
    let summary = series.summary().unwrap();
    assert!(summary.samples >= 3, "{series:?}");
    assert!(
        summary.rss_end_bytes >= summary.rss_start_bytes + (48 << 20),
        "RSS did not grow: {summary:?}"
    );
    assert!(summary.rss_peak_bytes >= summary.rss_end_bytes);
    // The CPU seen between the first and the last sample: most of the 0.6 s burned (the
    // child may burn a little before the first sample when the test thread is descheduled).
    let first_to_last_s =
        (series.samples.last().unwrap().at_ms - series.samples[0].at_ms) as f64 / 1e3;
    let cpu_seen_s = summary.cpu_mean_percent / 100.0 * first_to_last_s;
    assert!(cpu_seen_s >= 0.3, "{cpu_seen_s} s of CPU seen: {summary:?}");
    assert!(summary.cpu_peak_percent > 0.0, "{summary:?}");
    assert!(summary.cpu_peak_percent < 100.0 * 64.0, "{summary:?}");
    assert!(summary.threads_peak >= 1);
    assert!(summary.fds_peak >= 3, "stdin, stdout, stderr: {summary:?}");
    // Samples are in time order and the first is at the start.
    assert_eq!(series.samples[0].at_ms, 0);
    assert!(series.samples.windows(2).all(|p| p[0].at_ms <= p[1].at_ms));
    // The series survives a JSON round trip unchanged (it goes into the report bundle).
    let json = serde_json::to_string(&series).unwrap();
    assert_eq!(
        serde_json::from_str::<loadmark_monitor::ProcessSeries>(&json).unwrap(),
        series
    );
}

#[test]
fn sums_a_process_tree() {
    let child = spawn(Command::new("sh").args(["-c", "sleep 30 & sleep 30 & wait"]));
    let pid = child.0.id();
    wait_until("sh to start two sleeps", || {
        sample_once(pid).is_ok_and(|s| s.processes >= 3)
    });
    let alone = sample_once(pid).unwrap();
    assert_eq!(alone.processes, 3);
    assert!(alone.threads >= 3);
    assert!(alone.rss_bytes > 0);
    let series = Monitor::start(pid, Duration::from_millis(20))
        .unwrap()
        .stop();
    assert!(
        series.samples.iter().all(|s| s.processes == 3),
        "{series:?}"
    );
    assert_eq!(series.name, "sh");
}

#[test]
fn a_process_that_exits_ends_the_series_cleanly() {
    let mut child = spawn(Command::new("sleep").arg("0.2"));
    let monitor = Monitor::start(child.0.id(), Duration::from_millis(20)).unwrap();
    child.0.wait().unwrap();
    let series = monitor.stop();
    assert!(!series.samples.is_empty());
    let reason = series.stopped_early.as_deref().unwrap();
    assert!(reason.contains("exited"), "{reason}");
    assert!(series.summary().is_some());
}

#[test]
fn dropping_a_monitor_stops_its_thread() {
    let child = spawn(Command::new("sleep").arg("30"));
    let started = Instant::now();
    drop(Monitor::start(child.0.id(), Duration::from_secs(60)).unwrap());
    // The thread is woken by the channel, not by the end of its 60 s interval (the bound
    // leaves a loaded machine plenty of room below that).
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn finds_a_uniquely_named_process() {
    let name = format!("lmk{}a", std::process::id());
    let (dir, path) = sleeper(&name);
    let child = spawn(Command::new(&path).arg("30"));
    wait_until("the sleeper to run", || count_named(&name) == 1);
    assert_eq!(find_pid_by_name(&name).unwrap(), child.0.id());
    drop(child);
    drop(dir);
}

#[test]
fn finds_a_long_name_by_argv0_although_comm_is_cut() {
    let name = format!("loadmark-monitor-long-sleeper-{}", std::process::id());
    let (dir, path) = sleeper(&name);
    let child = spawn(Command::new(&path).arg("30"));
    let comm = &name[..15];
    wait_until("the sleeper to run", || count_named(comm) == 1);
    assert_eq!(find_pid_by_name(&name).unwrap(), child.0.id());
    drop(child);
    drop(dir);
}

#[test]
fn several_unrelated_processes_are_ambiguous() {
    let name = format!("lmk{}b", std::process::id());
    let (dir, path) = sleeper(&name);
    let first = spawn(Command::new(&path).arg("30"));
    let second = spawn(Command::new(&path).arg("30"));
    wait_until("both sleepers to run", || count_named(&name) == 2);
    match find_pid_by_name(&name) {
        Err(MonitorError::Ambiguous { name: n, pids }) => {
            assert_eq!(n, name);
            let mut expected = vec![first.0.id(), second.0.id()];
            expected.sort_unstable();
            assert_eq!(pids, expected);
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }
    drop(dir);
}

#[test]
fn a_tree_of_same_named_processes_resolves_to_its_top() {
    // Like nginx: a master and its worker share a name; the master is the answer.
    let name = format!("lmk{}c", std::process::id());
    let (dir, path) = sleeper(&name);
    let script = format!("'{0}' 30 & exec '{0}' 30", path.display());
    let child = spawn(Command::new("sh").args(["-c", &script]));
    wait_until("master and worker to run", || count_named(&name) == 2);
    assert_eq!(find_pid_by_name(&name).unwrap(), child.0.id());
    drop(dir);
}

#[test]
fn unknown_names_and_pids_are_errors() {
    let name = format!("no-such-process-{}", std::process::id());
    match find_pid_by_name(&name) {
        Err(e @ MonitorError::NotFound { .. }) => assert!(e.to_string().contains(&name)),
        other => panic!("expected NotFound, got {other:?}"),
    }
    // Above the kernel's largest possible pid_max (2^22).
    let pid = u32::MAX - 1;
    assert!(matches!(sample_once(pid), Err(MonitorError::NoSuchProcess { pid: p }) if p == pid));
    assert!(matches!(
        Monitor::start(pid, Duration::from_secs(1)),
        Err(MonitorError::NoSuchProcess { .. })
    ));
}

#[test]
fn a_zombie_counts_as_exited() {
    let mut child = spawn(Command::new("sh").args(["-c", "exit 0"]));
    let pid = child.0.id();
    // Not reaped yet: wait until the kernel shows it as a zombie.
    wait_until("the child to become a zombie", || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    });
    assert!(matches!(
        sample_once(pid),
        Err(MonitorError::NoSuchProcess { .. })
    ));
    child.0.wait().unwrap();
}

/// A stop shortly after a sample does not end the series on a short interval (whose CPU % is
/// tick noise, 0 to 200 % of a core): it is folded into the interval before.
#[test]
fn a_short_last_interval_is_folded_into_the_one_before() {
    // One busy thread: at most one core (100 %) in any honest interval.
    let child = spawn(Command::new("sh").args(["-c", "while :; do :; done"]));
    let interval = Duration::from_millis(300);
    let monitor = Monitor::start(child.0.id(), interval).unwrap();
    // Stop 40 ms after the first timed sample: a last interval under half the interval. The
    // sleep is the length of the run being measured, not a wait for an event.
    std::thread::sleep(Duration::from_millis(340));
    let series = monitor.stop();
    assert!(series.samples.len() >= 2, "{series:?}");
    assert!(
        series.samples.last().unwrap().at_ms >= 330,
        "the last point ends at the stop: {series:?}"
    );
    for pair in series.samples.windows(2) {
        assert!(
            pair[1].at_ms - pair[0].at_ms >= 150,
            "no interval under half the sampling interval: {series:?}"
        );
        // A 40 ms interval alone could read 150 % (4 ticks of 10 ms in it, or 6); over
        // 150 ms or more the tick error is under 7 %, and the process uses at most one core.
        assert!(pair[1].cpu_percent <= 110.0, "{series:?}");
    }
}

/// A server listening on a Unix socket and on a TCP port, with a forked worker holding both
/// (as nginx's workers inherit its listeners): found by either, as the topmost process.
#[test]
fn finds_the_server_behind_a_unix_socket_or_a_tcp_port() {
    const SERVER: &str = r#"
import os, socket, sys, time
unix = socket.socket(socket.AF_UNIX)
unix.bind(sys.argv[1])
unix.listen()
tcp = socket.socket()
tcp.bind(("127.0.0.1", 0))
tcp.listen()
if os.fork() == 0:
    time.sleep(30)
    os._exit(0)
print(tcp.getsockname()[1], flush=True)
time.sleep(30)
"#;
    let dir = TempDir::new("lmk-listener");
    let socket = dir.path().join("app.sock");
    let mut server = spawn(
        Command::new("python3")
            .args(["-c", SERVER])
            .arg(&socket)
            .stdout(Stdio::piped()),
    );
    let mut line = String::new();
    BufReader::new(server.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().parse().expect("the server's port");
    let pid = server.0.id();
    assert_eq!(
        find_pid_by_listener(&Listener::Unix(socket.clone())).unwrap(),
        pid
    );
    assert_eq!(find_pid_by_listener(&Listener::Tcp(port)).unwrap(), pid);

    // Nobody listens on another path of the same directory.
    match find_pid_by_listener(&Listener::Unix(dir.path().join("none.sock"))) {
        Err(e @ MonitorError::NoListener { .. }) => {
            assert!(e.to_string().contains("none.sock"), "{e}")
        }
        other => panic!("expected NoListener, got {other:?}"),
    }
    drop(server);
}
