//! The two databases behind [`crate::Store`]: the same SQL (placeholders `$1`…, which both
//! understand), the same tables; only connecting, locking and error codes differ.

use std::collections::BTreeMap;

use crate::record::{NewRun, RunInfo};
use crate::store::{
    ensure_parent, metrics_text, migration_sql, tags_text, Inserted, Location, StoreError,
    StoredRun, BUSY_TIMEOUT, SCHEMA_VERSION,
};

pub(crate) enum Backend {
    Sqlite(rusqlite::Connection),
    Postgres(Box<postgres::Client>),
}

const INSERT: &str = "INSERT INTO runs (recorded_at, started_at, plan_hash, step, params, target, \
     loadmark_version, tags, metrics, result, source, digest) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (digest) DO NOTHING";

const SELECT_RUNS: &str = "SELECT id, recorded_at, started_at, plan_hash, step, params, target, \
     loadmark_version, tags, metrics, source FROM runs ORDER BY started_at, id";

const SET_VERSION: &str =
    "INSERT INTO loadmark_history (key, value) VALUES ('schema_version', $1) \
     ON CONFLICT (key) DO UPDATE SET value = excluded.value";

/// Any key of PostgreSQL's advisory locks, fixed: loadmark's migrations take it.
const MIGRATION_LOCK: i64 = 0x6c6d_6869_7374;

fn db<'a>(name: &'a str, what: &'static str) -> impl Fn(&dyn std::error::Error) -> StoreError + 'a {
    move |e| {
        let mut message = e.to_string();
        let mut source = e.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            if !message.contains(&text) {
                message = format!("{message}: {text}");
            }
            source = cause.source();
        }
        StoreError::Database {
            store: name.to_string(),
            what,
            message,
        }
    }
}

fn sqlite_err<'a>(
    name: &'a str,
    what: &'static str,
) -> impl Fn(rusqlite::Error) -> StoreError + 'a {
    move |e| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => StoreError::NotADatabase {
            store: name.to_string(),
        },
        _ => db(name, what)(&e),
    }
}

fn pg_err<'a>(name: &'a str, what: &'static str) -> impl Fn(postgres::Error) -> StoreError + 'a {
    move |e| db(name, what)(&e)
}

/// Switches `conn`'s database to WAL. The switch of a new store takes an exclusive lock and
/// SQLite answers "database is locked" at once, without the busy timeout, when another
/// process is switching or reading it in that instant (two loadmarks recording into a new
/// store at once, seen in CI); so it is tried again until the busy timeout has passed.
fn wal(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(())) {
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            done => return done,
        }
    }
}

impl Backend {
    pub(crate) fn connect(location: &Location, name: &str) -> Result<Backend, StoreError> {
        match location {
            Location::Sqlite(path) => {
                ensure_parent(path, name)?;
                let conn = rusqlite::Connection::open(path).map_err(sqlite_err(name, "opening"))?;
                conn.busy_timeout(BUSY_TIMEOUT)
                    .map_err(sqlite_err(name, "opening"))?;
                // WAL: readers never wait for a writer; writers queue on the busy timeout.
                wal(&conn).map_err(sqlite_err(name, "opening"))?;
                Ok(Backend::Sqlite(conn))
            }
            Location::Postgres(url) => {
                let mut config: postgres::Config =
                    url.parse().map_err(pg_err(name, "reading the URL"))?;
                config.application_name("loadmark");
                if config.get_connect_timeout().is_none() {
                    config.connect_timeout(std::time::Duration::from_secs(10));
                }
                let client = config
                    .connect(postgres::NoTls)
                    .map_err(pg_err(name, "connecting"))?;
                Ok(Backend::Postgres(Box::new(client)))
            }
        }
    }

    /// Brings the store to `target` (at most [`SCHEMA_VERSION`]) under an exclusive lock.
    pub(crate) fn migrate(&mut self, name: &str, target: u32) -> Result<(), StoreError> {
        match self {
            Backend::Sqlite(conn) => {
                let e = |what| sqlite_err(name, what);
                let tx = conn
                    .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                    .map_err(e("locking it to migrate"))?;
                let mut tables = Vec::new();
                {
                    let mut stmt = tx
                        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
                        .map_err(e("reading its tables"))?;
                    let rows = stmt
                        .query_map([], |r| r.get::<_, String>(0))
                        .map_err(e("reading its tables"))?;
                    for row in rows {
                        tables.push(row.map_err(e("reading its tables"))?);
                    }
                }
                let ours = tables.iter().any(|t| t == "loadmark_history");
                let others = tables.iter().any(|t| !t.starts_with("sqlite_"));
                if !ours && others {
                    return Err(StoreError::Foreign {
                        store: name.to_string(),
                    });
                }
                let current = if ours { sqlite_version(&tx, name)? } else { 0 };
                check_version(name, current)?;
                for i in current..target {
                    tx.execute_batch(&migration_sql(i as usize, false))
                        .map_err(e("migrating it"))?;
                    tx.execute(SET_VERSION, [(i + 1).to_string()])
                        .map_err(e("migrating it"))?;
                }
                tx.commit().map_err(e("migrating it"))
            }
            Backend::Postgres(client) => {
                let e = |what| pg_err(name, what);
                let mut tx = client.transaction().map_err(e("migrating it"))?;
                tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                    .map_err(e("locking it to migrate"))?;
                let tables: Vec<String> = tx
                    .query(
                        "SELECT table_name::text FROM information_schema.tables \
                         WHERE table_schema = current_schema()",
                        &[],
                    )
                    .map_err(e("reading its tables"))?
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                let ours = tables.iter().any(|t| t == "loadmark_history");
                // A shared database may hold other tables; only a `runs` of someone else's
                // stands in the way.
                if !ours && tables.iter().any(|t| t == "runs") {
                    return Err(StoreError::Foreign {
                        store: name.to_string(),
                    });
                }
                let current = if ours {
                    let row = tx
                        .query_opt(
                            "SELECT value FROM loadmark_history WHERE key = 'schema_version'",
                            &[],
                        )
                        .map_err(e("reading its version"))?;
                    parse_version(name, row.map(|r| r.get::<_, String>(0)))?
                } else {
                    0
                };
                check_version(name, current)?;
                for i in current..target {
                    tx.batch_execute(&migration_sql(i as usize, true))
                        .map_err(e("migrating it"))?;
                    tx.execute(SET_VERSION, &[&(i + 1).to_string()])
                        .map_err(e("migrating it"))?;
                }
                tx.commit().map_err(e("migrating it"))
            }
        }
    }

    pub(crate) fn version(&mut self, name: &str) -> Result<u32, StoreError> {
        match self {
            Backend::Sqlite(conn) => sqlite_version(conn, name),
            Backend::Postgres(client) => {
                let row = client
                    .query_opt(
                        "SELECT value FROM loadmark_history WHERE key = 'schema_version'",
                        &[],
                    )
                    .map_err(pg_err(name, "reading its version"))?;
                parse_version(name, row.map(|r| r.get::<_, String>(0)))
            }
        }
    }

    pub(crate) fn insert(
        &mut self,
        name: &str,
        recorded_at: &str,
        runs: &[NewRun],
    ) -> Result<Inserted, StoreError> {
        let mut done = Inserted::default();
        match self {
            Backend::Sqlite(conn) => {
                let e = |what| sqlite_err(name, what);
                let tx = conn
                    .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                    .map_err(e("recording"))?;
                for run in runs {
                    let added = tx
                        .execute(
                            INSERT,
                            rusqlite::params![
                                recorded_at,
                                run.started_at,
                                run.plan_hash,
                                run.step,
                                run.params,
                                run.target,
                                run.loadmark_version,
                                tags_text(&run.tags),
                                metrics_text(&run.metrics),
                                run.result,
                                run.source,
                                run.digest()
                            ],
                        )
                        .map_err(e("recording"))?;
                    if added == 1 {
                        done.ids.push(tx.last_insert_rowid());
                    } else {
                        done.duplicates += 1;
                    }
                }
                tx.commit().map_err(e("recording"))?;
            }
            Backend::Postgres(client) => {
                let e = |what| pg_err(name, what);
                let mut tx = client.transaction().map_err(e("recording"))?;
                let sql = format!("{INSERT} RETURNING id");
                for run in runs {
                    let (tags, metrics, digest) = (
                        tags_text(&run.tags),
                        metrics_text(&run.metrics),
                        run.digest(),
                    );
                    let rows = tx
                        .query(
                            &sql,
                            &[
                                &recorded_at,
                                &run.started_at,
                                &run.plan_hash,
                                &run.step,
                                &run.params,
                                &run.target,
                                &run.loadmark_version,
                                &tags,
                                &metrics,
                                &run.result,
                                &run.source,
                                &digest,
                            ],
                        )
                        .map_err(e("recording"))?;
                    match rows.first() {
                        Some(row) => done.ids.push(row.get(0)),
                        None => done.duplicates += 1,
                    }
                }
                tx.commit().map_err(e("recording"))?;
            }
        }
        Ok(done)
    }

    pub(crate) fn runs(&mut self, name: &str) -> Result<Vec<StoredRun>, StoreError> {
        type Raw = (i64, [String; 4], Option<i64>, [String; 5], Option<String>);
        let raws: Vec<Raw> = match self {
            Backend::Sqlite(conn) => {
                let e = |what| sqlite_err(name, what);
                let mut stmt = conn.prepare(SELECT_RUNS).map_err(e("listing runs"))?;
                let rows = stmt
                    .query_map([], |r| {
                        Ok((
                            r.get(0)?,
                            [r.get(1)?, r.get(2)?, r.get(3)?, r.get(5)?],
                            r.get(4)?,
                            [r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?, String::new()],
                            r.get(10)?,
                        ))
                    })
                    .map_err(e("listing runs"))?;
                rows.collect::<Result<_, _>>().map_err(e("listing runs"))?
            }
            Backend::Postgres(client) => client
                .query(SELECT_RUNS, &[])
                .map_err(pg_err(name, "listing runs"))?
                .iter()
                .map(|r| {
                    (
                        r.get(0),
                        [r.get(1), r.get(2), r.get(3), r.get(5)],
                        r.get(4),
                        [r.get(6), r.get(7), r.get(8), r.get(9), String::new()],
                        r.get(10),
                    )
                })
                .collect(),
        };
        raws.into_iter()
            .map(
                |(id, [recorded_at, started_at, plan_hash, params], step, rest, source)| {
                    let [target, loadmark_version, tags, metrics, _] = rest;
                    let bad = |message: String| StoreError::BadRow {
                        store: name.to_string(),
                        id,
                        message,
                    };
                    let tags: BTreeMap<String, String> =
                        serde_json::from_str(&tags).map_err(|e| bad(format!("its tags: {e}")))?;
                    let metrics: BTreeMap<String, f64> = serde_json::from_str(&metrics)
                        .map_err(|e| bad(format!("its metrics: {e}")))?;
                    Ok(StoredRun {
                        id,
                        recorded_at,
                        info: RunInfo {
                            started_at,
                            plan_hash,
                            step,
                            params,
                            target,
                            loadmark_version,
                            tags,
                            metrics,
                            source,
                        },
                    })
                },
            )
            .collect()
    }

    pub(crate) fn result(&mut self, name: &str, id: i64) -> Result<String, StoreError> {
        const SQL: &str = "SELECT result FROM runs WHERE id = $1";
        let found: Option<String> = match self {
            Backend::Sqlite(conn) => {
                use rusqlite::OptionalExtension;
                conn.query_row(SQL, [id], |r| r.get(0))
                    .optional()
                    .map_err(sqlite_err(name, "reading a result"))?
            }
            Backend::Postgres(client) => client
                .query_opt(SQL, &[&id])
                .map_err(pg_err(name, "reading a result"))?
                .map(|r| r.get(0)),
        };
        found.ok_or_else(|| StoreError::NoRun {
            store: name.to_string(),
            id,
        })
    }

    pub(crate) fn execute_raw(&mut self, name: &str, sql: &str) -> Result<(), StoreError> {
        match self {
            Backend::Sqlite(conn) => conn.execute_batch(sql).map_err(sqlite_err(name, "SQL")),
            Backend::Postgres(client) => client.batch_execute(sql).map_err(pg_err(name, "SQL")),
        }
    }
}

fn sqlite_version(conn: &rusqlite::Connection, name: &str) -> Result<u32, StoreError> {
    use rusqlite::OptionalExtension;
    let value: Option<String> = conn
        .query_row(
            "SELECT value FROM loadmark_history WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(sqlite_err(name, "reading its version"))?;
    parse_version(name, value)
}

fn parse_version(name: &str, value: Option<String>) -> Result<u32, StoreError> {
    match value {
        // Migration 1 made the table; its version row is written in the same transaction.
        None => Err(StoreError::Foreign {
            store: name.to_string(),
        }),
        Some(v) => v.trim().parse().map_err(|_| StoreError::Foreign {
            store: name.to_string(),
        }),
    }
}

fn check_version(name: &str, found: u32) -> Result<(), StoreError> {
    if found > SCHEMA_VERSION {
        return Err(StoreError::TooNew {
            store: name.to_string(),
            found,
        });
    }
    Ok(())
}
