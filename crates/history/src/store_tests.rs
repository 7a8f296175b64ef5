//! The store on real SQLite files: migrations, refusals, concurrent writers.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::{Location, NewRun, RunInfo, Store, StoreError, SCHEMA_VERSION};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "loadmark-history-unit-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub(crate) fn run(i: usize, p99: f64) -> NewRun {
    NewRun {
        info: RunInfo {
            started_at: format!("2026-11-{:02}T10:00:00Z", 1 + i % 28),
            plan_hash: "ab".repeat(20),
            step: None,
            params: String::new(),
            target: "http://127.0.0.1:8080/".into(),
            loadmark_version: "0.1.0".into(),
            tags: BTreeMap::from([("env".to_string(), "ci".to_string())]),
            metrics: BTreeMap::from([("p99".to_string(), p99), ("rps".to_string(), 1000.0)]),
            source: None,
        },
        result: format!("{{\"run\": {i}}}"),
    }
}

#[test]
fn runs_are_stored_listed_and_read_back_once() {
    let dir = temp("roundtrip");
    let loc = Location::Sqlite(dir.join("sub/h.sqlite"));
    let mut store = Store::open(&loc).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let done = store.insert(&[run(0, 900.0), run(1, 950.0)]).unwrap();
    assert_eq!(done.ids.len(), 2);
    // The same result again is not stored twice.
    let again = store.insert(&[run(1, 950.0)]).unwrap();
    assert_eq!((again.ids.len(), again.duplicates), (0, 1));
    let runs = Store::open(&loc).unwrap().runs().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1].metrics["p99"], 950.0);
    assert_eq!(runs[1].tags["env"], "ci");
    assert_eq!(store.result(runs[0].id).unwrap(), "{\"run\": 0}");
    assert!(matches!(
        store.result(999),
        Err(StoreError::NoRun { id: 999, .. })
    ));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn corrupt_foreign_and_newer_stores_are_refused_by_name() {
    let dir = temp("refused");
    let corrupt = dir.join("corrupt.sqlite");
    std::fs::write(&corrupt, vec![b'x'; 4096]).unwrap();
    let e = Store::open(&Location::Sqlite(corrupt.clone()))
        .err()
        .unwrap();
    assert!(matches!(e, StoreError::NotADatabase { .. }), "{e:?}");
    assert!(e.to_string().contains("corrupt.sqlite"), "{e}");

    let foreign = dir.join("foreign.sqlite");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE invoices (id INTEGER)")
        .unwrap();
    let e = Store::open(&Location::Sqlite(foreign)).err().unwrap();
    assert!(matches!(e, StoreError::Foreign { .. }), "{e:?}");
    assert!(e.to_string().contains("foreign.sqlite"), "{e}");

    let newer = Location::Sqlite(dir.join("newer.sqlite"));
    Store::open(&newer)
        .unwrap()
        .execute_raw("UPDATE loadmark_history SET value = '99' WHERE key = 'schema_version'")
        .unwrap();
    let e = Store::open(&newer).err().unwrap();
    assert!(matches!(e, StoreError::TooNew { found: 99, .. }), "{e:?}");
    assert!(e.to_string().contains("version 99"), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_store_of_the_first_schema_is_migrated_with_its_runs() {
    let dir = temp("migrate");
    let loc = Location::Sqlite(dir.join("v1.sqlite"));
    let mut v1 = Store::open_at_version(&loc, 1).unwrap();
    assert_eq!(v1.schema_version().unwrap(), 1);
    v1.execute_raw(
        "INSERT INTO runs (recorded_at, started_at, plan_hash, step, target, loadmark_version, \
         tags, metrics, result) VALUES ('2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', 'abc', \
         NULL, 'http://h/', '0.1.0', '{}', '{\"p99\": 1200}', '{}')",
    )
    .unwrap();
    drop(v1);
    let mut store = Store::open(&loc).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (runs[0].params.as_str(), runs[0].metrics["p99"]),
        ("", 1200.0)
    );
    store.insert(&[run(3, 1.0)]).unwrap();
    assert_eq!(store.runs().unwrap().len(), 2);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn two_writers_at_once_lose_nothing() {
    let dir = temp("writers");
    let loc = Location::Sqlite(dir.join("shared.sqlite"));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let loc = loc.clone();
            std::thread::spawn(move || {
                // Each opens (and so may migrate) the new store at the same time.
                let mut store = Store::open(&loc).unwrap();
                for i in 0..25 {
                    store.insert(&[run(w * 100 + i, i as f64)]).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(Store::open(&loc).unwrap().runs().unwrap().len(), 50);
    std::fs::remove_dir_all(dir).unwrap();
}
