//! The results history (issue 38) end to end: runs recorded by `run --record` against the
//! built-in target, series imported from result files, trends, detection and the gate, on a
//! SQLite file and on a real PostgreSQL server started here on loopback.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use common::{loadmark, target, temp_dir, Daemon};
use loadmark_history::{Location, Store};

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn ok(mut cmd: Command) -> String {
    let o = cmd.output().unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{cmd:?} failed: {out}\n{err}");
    out
}

/// A short closed-loop run of the built-in target, its JSON result written to `out`.
fn run_to(url: &str, out: &Path, extra: &[&str]) -> Output {
    loadmark()
        .args(["run", url, "-n", "200", "-c", "2", "-q", "-o"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

/// Copies of a real result with the p99 and start time given: a series of known shape.
fn series(real: &Path, dir: &Path, p99s: &[f64], first_age: Duration) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let base: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(real).unwrap()).unwrap();
    p99s.iter()
        .enumerate()
        .map(|(i, p99)| {
            let mut v = base.clone();
            let at = SystemTime::now() - first_age + Duration::from_secs(60 * i as u64);
            v["run"]["started_at"] = loadmark_report::rfc3339(at).into();
            for p in v["summary"]["latency"]["percentiles_us"]
                .as_array_mut()
                .unwrap()
            {
                if p["p"] == 99.0 {
                    p["us"] = (*p99 as u64).into();
                }
            }
            let path = dir.join(format!("s{i:02}.json"));
            std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
            path
        })
        .collect()
}

/// Two loadmarks importing into `store` at once, 15 result files each (copies of `real`), one
/// process per file, so their transactions interleave: each must succeed.
fn import_at_once(store: &str, real: &Path, dir: &Path) {
    let a = series(
        real,
        &dir.join("a"),
        &[1000.0; 15],
        Duration::from_secs(7200),
    );
    let b = series(
        real,
        &dir.join("b"),
        &[2000.0; 15],
        Duration::from_secs(3600),
    );
    let writers: Vec<_> = [a, b]
        .into_iter()
        .map(|files| {
            let store = store.to_string();
            std::thread::spawn(move || {
                for f in files {
                    let o = loadmark()
                        .args(["history", "import", "--store", &store])
                        .arg(f)
                        .output()
                        .unwrap();
                    assert!(o.status.success(), "{}", text(&o).1);
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
}

/// 1000 µs ± 1.5% for ten runs, then 1300 µs ± 1.5%: one change, at the 11th.
const STEP: [f64; 20] = [
    1000.0, 1012.0, 990.0, 1005.0, 985.0, 1010.0, 998.0, 1015.0, 992.0, 1003.0, 1290.0, 1310.0,
    1302.0, 1285.0, 1315.0, 1296.0, 1308.0, 1292.0, 1305.0, 1299.0,
];

#[test]
fn runs_are_recorded_after_the_load_and_trended_detected_and_gated() {
    let dir = temp_dir("history", "sqlite");
    let store = dir.path().join("h.sqlite");
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    // Two runs recorded with their tags; the result file is written as well.
    for commit in ["c1", "c2"] {
        let out = dir.path().join(format!("{commit}.json"));
        let o = run_to(
            &url,
            &out,
            &[
                "--store",
                store.to_str().unwrap(),
                "--tag",
                &format!("commit={commit}"),
                "--tag",
                "env=ci",
            ],
        );
        let (_, err) = text(&o);
        assert!(o.status.success(), "{err}");
        assert!(err.contains("recorded in") && out.exists(), "{err}");
    }
    let listed = ok({
        let mut c = loadmark();
        c.args([
            "history", "list", "--since", "1d", "--tag", "env=ci", "--store",
        ])
        .arg(&store);
        c
    });
    assert!(listed.starts_with("2 runs in"), "{listed}");
    assert!(
        listed.contains("commit=c2 env=ci") && listed.contains(&url),
        "{listed}"
    );

    // A plan's steps, recorded by bench: a run each, selected by plan file and parameters;
    // its bundle imported again adds nothing.
    let plan = dir.path().join("sweep.yaml");
    std::fs::write(
        &plan,
        // The target is this test process: attached, its CPU and RSS are the steps' server_*.
        format!(
            "targets:\n  api:\n    url: {url}\n    attach: {{pid: {}}}\nload:\n  requests: 100\n\
             sweep:\n  connections: [1, 2]\nmonitor: {{interval: 100ms}}\n",
            std::process::id()
        ),
    )
    .unwrap();
    let bench_dir = dir.path().join("bench");
    ok({
        let mut c = loadmark();
        c.arg("bench")
            .arg(&plan)
            .arg("--out")
            .arg(&bench_dir)
            .args(["-q", "--tag", "env=bench", "--store"])
            .arg(&store);
        c
    });
    let steps = ok({
        let mut c = loadmark();
        c.args(["history", "list", "--step", "connections=2", "--plan"])
            .arg(&plan)
            .arg("--store")
            .arg(&store);
        c
    });
    assert!(
        steps.starts_with("1 run in") && steps.contains("step 2 (connections=2) · api"),
        "{steps}"
    );
    // The monitor's figures are trended as any other: a value for each step.
    let server = ok({
        let mut c = loadmark();
        c.args([
            "history",
            "trend",
            "--metric",
            "server_cpu",
            "--metric",
            "server_rss",
            "--format",
            "csv",
            "--plan",
        ])
        .arg(&plan)
        .arg("--store")
        .arg(&store);
        c
    });
    let rss: Vec<f64> = server
        .lines()
        .filter(|l| l.contains(",server_rss,"))
        .map(|l| l.split(',').nth(9).unwrap().parse().unwrap())
        .collect();
    assert!(rss.len() == 2 && rss.iter().all(|b| *b > 1e6), "{server}");
    assert_eq!(server.matches(",server_cpu,").count(), 2, "{server}");
    let again = ok({
        let mut c = loadmark();
        c.args(["history", "import", "--store"])
            .arg(&store)
            .arg(bench_dir.join("bundle.json"));
        c
    });
    assert!(
        again.contains("imported 0 runs") && again.contains("(2 already stored)"),
        "{again}"
    );

    // Both runs' latency compared exactly from their stored histograms, as `compare` does.
    let stored = ok({
        let mut c = loadmark();
        c.args(["history", "compare", "1", "2", "--store"])
            .arg(&store);
        c
    });
    let files = ok({
        let mut c = loadmark();
        c.arg("compare")
            .arg(dir.path().join("c1.json"))
            .arg(dir.path().join("c2.json"));
        c
    });
    let relabel = |s: &str| {
        s.replace(&dir.path().join("c1.json").display().to_string(), "A")
            .replace(&dir.path().join("c2.json").display().to_string(), "B")
            .replace("run 1", "A")
            .replace("run 2", "B")
    };
    assert_eq!(relabel(&stored), relabel(&files));

    // A series with a known step change, imported (and an old run --since leaves out).
    let c1 = dir.path().join("c1.json");
    let paths = series(
        &c1,
        &dir.path().join("steps"),
        &STEP,
        Duration::from_secs(3600),
    );
    let old = series(
        &c1,
        &dir.path().join("old"),
        &[5000.0],
        Duration::from_secs(90 * 86_400),
    );
    let imported = ok({
        let mut c = loadmark();
        c.args(["history", "import", "--tag", "env=synthetic", "--store"])
            .arg(&store)
            .args(&paths)
            .args(&old);
        c
    });
    assert!(
        imported.starts_with("imported 21 runs from 21 files"),
        "{imported}"
    );
    let again = ok({
        let mut c = loadmark();
        c.args(["history", "import", "--store"])
            .arg(&store)
            .arg(&paths[0]);
        c
    });
    assert!(
        again.contains("imported 0 runs") && again.contains("1 already stored"),
        "{again}"
    );
    let sel = [
        "--tag",
        "env=synthetic",
        "--since",
        "30d",
        "--store",
        store.to_str().unwrap(),
    ];

    // The series' run ids, oldest first (ids are the store's to give).
    let listed: serde_json::Value = serde_json::from_str(&ok({
        let mut c = loadmark();
        c.args(["history", "list", "--format", "json"]).args(sel);
        c
    }))
    .unwrap();
    let ids: Vec<i64> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), 20);
    let (first, change, newest) = (ids[0], ids[10], ids[19]);
    let detected = ok({
        let mut c = loadmark();
        c.args(["history", "detect", "--metric", "p99"]).args(sel);
        c
    });
    // The change is at the series' 11th run.
    assert!(detected.contains("(20 runs)"), "{detected}");
    assert!(
        detected.contains(&format!(
            "p99: change at run {change}: +29.9% (1.00ms → 1.30ms)"
        )),
        "{detected}"
    );
    assert!(detected.contains("1 change point\n"), "{detected}");

    let csv = ok({
        let mut c = loadmark();
        c.args([
            "history", "trend", "--metric", "p99", "--metric", "rps", "--format", "csv",
        ])
        .args(sel);
        c
    });
    assert_eq!(csv.lines().count(), 1 + 2 * 20, "{csv}");
    assert!(
        csv.lines()
            .any(|l| l.contains(&format!(",{change},")) && l.contains(",p99,1290,true,")),
        "{csv}"
    );
    // The table: the change's run starred, the change point (with its p-value) below.
    let table = ok({
        let mut c = loadmark();
        c.args(["history", "trend", "--metric", "p99"]).args(sel);
        c
    });
    assert!(
        table
            .lines()
            .any(|l| l.trim_start().starts_with(&format!("{change} ")) && l.ends_with('*')),
        "{table}"
    );
    assert!(
        table.contains(&format!(
            "  * p99 change at run {change}: +29.9% (1.00ms → 1.30ms), p = "
        )),
        "{table}"
    );
    let html_path = dir.path().join("trend.html");
    ok({
        let mut c = loadmark();
        c.args(["history", "trend", "--metric", "p99", "-o"])
            .arg(&html_path)
            .args(sel);
        c
    });
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(
        html.contains(&format!(
            "data-chart=\"p99\" data-change-points=\"{change}\""
        )),
        "{html}"
    );
    assert!(
        html.contains(&format!(
            "<polyline class=\"line\" data-points=\"{first}:1000 {}:1012",
            ids[1]
        )),
        "{html}"
    );
    assert!(!html.contains("<script") && !html.contains("http://www.w3.org/2000/svg\" src"));

    // The gate: the newest run at the current level passes; one 25% above it fails.
    let gate = |extra: &[&str]| {
        let mut c = loadmark();
        c.args([
            "history",
            "gate",
            "--metric",
            "p99",
            "--max-regression",
            "5%",
        ])
        .args(sel)
        .args(extra);
        c.output().unwrap()
    };
    let o = gate(&[]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(
        out.contains(&format!("ok   p99: run {newest}"))
            && out.contains("within the series' noise"),
        "{out}"
    );
    let worse = series(&c1, &dir.path().join("worse"), &[1625.0], Duration::ZERO);
    let o = gate(&["--result", worse[0].to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains("FAIL p99:") && out.contains("25.0% above the mean of the 10 runs before it"),
        "{out}"
    );
    assert!(out.contains("a regression"), "{out}");
    assert!(err.contains("1 significant regression"), "{err}");
    // A result file at the series' level passes, and neither file was recorded.
    let level = series(&c1, &dir.path().join("level"), &[1301.0], Duration::ZERO);
    let o = gate(&["--result", level[0].to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(
        out.contains("ok   p99:") && out.contains("within the series' noise"),
        "{out}"
    );
    let listed = ok({
        let mut c = loadmark();
        c.args(["history", "list"]).args(sel);
        c
    });
    assert!(listed.starts_with("20 runs in"), "{listed}");
}

/// The shell run in a mount namespace of its own (`unshare -rm`, root or not): a 512 KiB
/// tmpfs at $1, a store made on it, the disk filled but for 36 KiB (room to open the store,
/// whose shared-memory file takes 32, not to record a run), then `loadmark run` ($2) of $3
/// recording there, its result file $4 on another disk. The mount ends with the namespace.
const FULL_DISK: &str = r#"set -e
mount -t tmpfs -o size=512K loadmark-full "$1"
"$2" history list --store "$1/h.sqlite" >/dev/null
head -c 36K /dev/zero >"$1/reserve"
head -c 1M /dev/zero >"$1/filler" 2>/dev/null || true
rm "$1/reserve"
exec "$2" run "$3" -n 200 -c 2 -q --store "$1/h.sqlite" -o "$4"
"#;

#[test]
fn sqlite_store_takes_two_writers_and_a_full_disk_fails_the_recording_loudly() {
    let dir = temp_dir("history", "sqlite-full");
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    let real = dir.path().join("real.json");
    assert!(run_to(&url, &real, &[]).status.success());

    // Two loadmarks import into one new store at once: both migrate it, every run arrives.
    let store = dir.path().join("shared.sqlite");
    import_at_once(store.to_str().unwrap(), &real, dir.path());
    let runs = Store::open(&Location::Sqlite(store))
        .unwrap()
        .runs()
        .unwrap();
    assert_eq!(runs.len(), 30);

    let disk = dir.path().join("disk");
    std::fs::create_dir(&disk).unwrap();
    let out = dir.path().join("kept.json");
    let o = Command::new("unshare")
        .args(["-rm", "sh", "-c", FULL_DISK, "sh"])
        .arg(&disk)
        .arg(env!("CARGO_BIN_EXE_loadmark"))
        .arg(&url)
        .arg(&out)
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("recording the run failed")
            && err.contains("disk/h.sqlite")
            && err.contains("database or disk is full"),
        "{err}"
    );
    assert!(
        err.contains("the result is in") && err.contains("kept.json"),
        "{err}"
    );
    let report = common::report_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(report.summary.requests.responses, 200);
}

#[test]
fn bad_stores_and_files_are_refused_by_name_before_any_load() {
    let dir = temp_dir("history", "refused");
    let corrupt = dir.path().join("corrupt.sqlite");
    std::fs::write(&corrupt, vec![7u8; 8192]).unwrap();
    // Refused before the run: the URL is never loaded (nothing listens there anyway).
    let o = loadmark()
        .args([
            "run",
            "http://127.0.0.1:9/",
            "-n",
            "1",
            "-q",
            "--record",
            "--store",
        ])
        .arg(&corrupt)
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("corrupt.sqlite: not a loadmark history store"),
        "{err}"
    );
    let notes = dir.path().join("notes.json");
    std::fs::write(&notes, "{\"hello\": 1}").unwrap();
    let o = loadmark()
        .args(["history", "import", "--store"])
        .arg(dir.path().join("h.sqlite"))
        .arg(&notes)
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("notes.json: not a loadmark report"), "{err}");
}

/// A PostgreSQL server of Debian's package, in a temp directory, on a free loopback port,
/// trust authentication; as root it runs as the `postgres` user (initdb refuses root).
struct Postgres {
    daemon: Daemon,
    port: u16,
    bin: PathBuf,
}

fn postgres_bin() -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| d.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    versions.retain(|b| b.join("postgres").exists() && b.join("initdb").exists());
    versions.sort();
    versions.pop().expect(
        "PostgreSQL's server (Debian's postgresql-15) is not installed: .ci/run installs it",
    )
}

fn as_postgres_user(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let id = |flag: &str| -> u32 {
            let o = Command::new("id")
                .args([flag, "postgres"])
                .output()
                .unwrap();
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse()
                .expect("the postgres user exists")
        };
        cmd.uid(id("-u")).gid(id("-g"));
    }
}

impl Postgres {
    fn start(dir: &Path) -> Postgres {
        let bin = postgres_bin();
        let data = dir.join("pg");
        std::fs::create_dir_all(&data).unwrap();
        let mut chown = Command::new("chown");
        chown.args(["-R", "postgres:postgres"]).arg(&data);
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            assert!(chown.status().unwrap().success());
        }
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "-D",
            ])
            .arg(data.join("data"));
        as_postgres_user(&mut initdb);
        let o = initdb.output().unwrap();
        assert!(o.status.success(), "initdb: {}", text(&o).1);
        common::retry_on_port_conflict("postgres", || {
            let port = common::port();
            let mut cmd = Command::new(bin.join("postgres"));
            cmd.arg("-D")
                .arg(data.join("data"))
                .args([
                    "-p",
                    &port.to_string(),
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    "fsync=off",
                    "-k",
                ])
                .arg(&data);
            as_postgres_user(&mut cmd);
            let daemon = Daemon::spawn("postgres", cmd).map_err(|e| e.to_string())?;
            // Its own line, written once it listens and takes sessions: never mistaken for
            // another process that took the port meanwhile. A postgres that lost the port
            // exits saying "Address already in use", and the Err carries that (retried).
            daemon.wait_for_line(Duration::from_secs(30), |l| {
                l.contains("ready to accept connections").then_some(())
            })?;
            let pg = Postgres {
                daemon,
                port,
                bin: bin.clone(),
            };
            pg.psql("SELECT 1")?;
            Ok(pg)
        })
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn psql(&self, sql: &str) -> Result<String, String> {
        let o = Command::new(self.bin.join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-tAc",
                sql,
            ])
            .output()
            .map_err(|e| e.to_string())?;
        if o.status.success() {
            Ok(text(&o).0.trim().to_string())
        } else {
            Err(text(&o).1)
        }
    }
}

#[test]
fn postgres_store_migrates_takes_two_writers_and_fails_loudly_when_dropped() {
    let dir = temp_dir("history", "postgres");
    let pg = Postgres::start(dir.path());
    let loc = Location::Postgres(pg.url());

    // A store of the first schema, with a run, is migrated and keeps it.
    let mut v1 = Store::open_at_version(&loc, 1).unwrap();
    v1.execute_raw(
        "INSERT INTO runs (recorded_at, started_at, plan_hash, step, target, loadmark_version, \
         tags, metrics, result) VALUES ('2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', 'abc', \
         NULL, 'http://h/', '0.1.0', '{}', '{\"p99\": 1200}', '{}')",
    )
    .unwrap();
    drop(v1);
    assert_eq!(
        Store::open(&loc).unwrap().schema_version().unwrap(),
        loadmark_history::SCHEMA_VERSION
    );

    // Two loadmarks import at once: every run arrives.
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    let real = dir.path().join("real.json");
    assert!(run_to(&url, &real, &[]).status.success());
    import_at_once(&pg.url(), &real, dir.path());
    assert_eq!(pg.psql("SELECT count(*) FROM runs").unwrap(), "31");

    // Another program's database (its own `runs`) is refused by name, and left as it is.
    pg.psql("CREATE DATABASE invoicing").unwrap();
    let other = format!("postgres://postgres@127.0.0.1:{}/invoicing", pg.port);
    let o = Command::new(pg.bin.join("psql"))
        .args(["-d", &other, "-c", "CREATE TABLE runs (invoice int)"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    let o = loadmark()
        .args(["history", "list", "--store", &other])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("/invoicing: not a loadmark history store (a database of something else"),
        "{err}"
    );

    // A store of a newer schema is refused with its version, and left as it is.
    pg.psql("UPDATE loadmark_history SET value = '99' WHERE key = 'schema_version'")
        .unwrap();
    let o = loadmark()
        .args(["history", "list", "--store", &pg.url()])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("127.0.0.1:{}", pg.port))
            && err.contains("history schema version 99 is newer than this loadmark understands"),
        "{err}"
    );
    assert_eq!(pg.psql("SELECT count(*) FROM runs").unwrap(), "31");
    pg.psql(&format!(
        "UPDATE loadmark_history SET value = '{}' WHERE key = 'schema_version'",
        loadmark_history::SCHEMA_VERSION
    ))
    .unwrap();

    // The connection drops during the run (the server stops): the recording fails loudly
    // after the run, the exit code says so, and the result file is there.
    let out = dir.path().join("dropped.json");
    let stderr = dir.path().join("dropped.err");
    let mut child = loadmark()
        .args([
            "run",
            &url,
            "-d",
            "2s",
            "-c",
            "1",
            "-q",
            "--record",
            "--store",
            &pg.url(),
            "-o",
        ])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    // Connected, and its store opened and migrated (the COMMIT done): the run is under way.
    common::wait_until("loadmark connected to the store", || {
        pg.psql(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'loadmark' \
             AND state = 'idle' AND query = 'COMMIT'",
        )
        .is_ok_and(|n| n == "1")
    });
    pg.daemon.signal(libc::SIGINT); // fast shutdown: sessions are ended
    pg.daemon.wait(Duration::from_secs(20)).unwrap();
    let status = child.wait().unwrap();
    let err = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("recording the run failed"), "{err}");
    assert!(
        err.contains("the result is in") && err.contains("dropped.json"),
        "{err}"
    );
    let report = common::report_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(report.summary.requests.responses > 0);
}
