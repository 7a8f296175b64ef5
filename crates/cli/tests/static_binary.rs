//! The static binary (`cargo build-static`) on a machine without any C library: inside an empty
//! root holding only the binary, with /dev and /proc mounted, it serves the built-in target and
//! loads it over loopback.
//!
//! Ignored by `cargo test`: it needs the musl build, which is slow, and root (a mount namespace
//! and chroot). `dist/check-static` builds the binary and runs it, and `.ci/run` calls that as
//! its own step: `LOADMARK_STATIC_BIN=PATH cargo test -p loadmark --test static_binary -- --ignored`.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Kills the server (unshare exec's into chroot, which exec's into loadmark: one PID) if the
/// test fails before stopping it.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn static_bin() -> PathBuf {
    let path = std::env::var_os("LOADMARK_STATIC_BIN").expect(
        "LOADMARK_STATIC_BIN must name the static binary: run dist/check-static, which builds it",
    );
    let path = PathBuf::from(path);
    assert!(path.is_file(), "{} is not a file", path.display());
    path
}

/// `unshare --mount` gives the mounts their own namespace, so they vanish with the process and
/// never show on the host; the shell mounts, then exec's (same PID) into the chroot.
fn in_empty_root(root: &Path, args: &[&str]) -> Command {
    let script = r#"set -e
        root=$1; shift
        mount --rbind /dev "$root/dev"
        mount -t proc proc "$root/proc"
        exec chroot "$root" /loadmark "$@""#;
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "sh",
    ])
    .arg(root)
    .args(args);
    cmd
}

#[test]
#[ignore = "needs the static binary and root: run dist/check-static"]
fn static_binary_runs_in_an_empty_root_and_loads_the_built_in_target() {
    let bin = static_bin();

    // What the tools say about it.
    let file = Command::new("file").arg("-L").arg(&bin).output().unwrap();
    let file = String::from_utf8_lossy(&file.stdout).to_string();
    assert!(
        file.contains("statically linked") || file.contains("static-pie linked"),
        "file: {file}"
    );
    let ldd = Command::new("ldd").arg(&bin).output().unwrap();
    let ldd_says = format!(
        "{}{}",
        String::from_utf8_lossy(&ldd.stdout),
        String::from_utf8_lossy(&ldd.stderr)
    );
    assert!(
        ldd_says.contains("not a dynamic executable") || ldd_says.contains("statically linked"),
        "ldd: {ldd_says}"
    );

    // The root: the binary, empty /dev and /proc to mount on, /out for the result. No libc,
    // no /etc, no shell.
    // A fresh directory, never one left over: /dev is bind-mounted under it, so it is only
    // ever emptied with non-recursive removals (see the end).
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let root = std::env::temp_dir().join(format!(
        "loadmark-static-root-{}-{stamp}",
        std::process::id()
    ));
    std::fs::create_dir(&root).unwrap();
    for d in ["dev", "proc", "out"] {
        std::fs::create_dir(root.join(d)).unwrap();
    }
    std::fs::copy(&bin, root.join("loadmark")).unwrap();
    let entries: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(entries.len(), 4, "nothing else in the root: {entries:?}");

    let version = in_empty_root(&root, &["--version"]).output().unwrap();
    let version_text = String::from_utf8_lossy(&version.stdout).to_string();
    assert!(
        version.status.success(),
        "--version in the empty root: {}",
        String::from_utf8_lossy(&version.stderr)
    );
    assert!(
        version_text.contains("x86_64-unknown-linux-musl") && version_text.contains("mimalloc"),
        "{version_text}"
    );

    let mut server = KillOnDrop(
        in_empty_root(&root, &["serve", "--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(server.0.stdout.take().unwrap()).lines();
    // The server names its port once it listens: that line is the readiness signal.
    let first = lines.next().expect("the server prints a line").unwrap();
    let addr = first
        .split("http://")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in: {first}"))
        .to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");

    const REQUESTS: u64 = 3000;
    let url = format!("http://{addr}/json");
    let n = REQUESTS.to_string();
    let client = in_empty_root(
        &root,
        &[
            "run",
            &url,
            "-n",
            &n,
            "-c",
            "8",
            "-t",
            "1",
            "--timeout",
            // Generous: a busy 2-core CI machine, not the binary, sets the pace.
            "30s",
            "-o",
            "/out/result.json",
        ],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&client.stdout);
    assert!(
        client.status.success(),
        "the client in the empty root failed: {stdout}\n{}",
        String::from_utf8_lossy(&client.stderr)
    );

    // SIGTERM: the server stops and prints the count it served.
    // SAFETY: a plain kill(2) of the child this test started.
    unsafe {
        libc::kill(server.0.id() as i32, libc::SIGTERM);
    }
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = server.0.wait().unwrap();
    assert!(status.success(), "server: {status:?} {rest:?}");
    assert!(
        rest.iter()
            .any(|l| l == &format!("served {REQUESTS} requests")),
        "the server counted what the client sent: {rest:?}"
    );

    let text = std::fs::read_to_string(root.join("out/result.json")).unwrap();
    let report = common::report_json(&text).unwrap();
    assert_eq!(report.summary.requests.responses, REQUESTS);
    assert_eq!(report.summary.status.get(200), REQUESTS);
    assert_eq!(report.summary.requests.errors, 0);
    let build = report
        .environment
        .build
        .expect("the result records the build");
    assert_eq!(build.target, "x86_64-unknown-linux-musl");
    assert_eq!(build.features, ["lua51", "mimalloc"]);
    // /proc was there: the machine's facts were read. /etc was not: the OS name falls back to
    // "linux", which shows the client really ran inside the empty root.
    assert!(report.environment.cores > 0 && !report.environment.kernel.is_empty());
    assert_eq!(report.environment.os, "linux");
    assert!(
        report.run.client_cpu.user_s + report.run.client_cpu.system_s > 0.0,
        "CPU time from /proc or getrusage"
    );

    // The mounts lived in the processes' namespace only: nothing is left mounted here.
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(
        !mounts.contains(root.to_str().unwrap()),
        "mounts leaked: {mounts}"
    );
    // Non-recursive on purpose: were /dev still mounted here, remove_dir would fail, not
    // delete the host's devices.
    std::fs::remove_file(root.join("out/result.json")).unwrap();
    std::fs::remove_file(root.join("loadmark")).unwrap();
    for d in ["out", "dev", "proc", ""] {
        std::fs::remove_dir(root.join(d)).unwrap();
    }
}
