//! The store: one schema, written for SQLite (a file, the default) and PostgreSQL (a server a
//! team shares), and versioned migrations that bring any older store up to date.
//!
//! Safe concurrent writers: every write is one transaction (SQLite: `BEGIN IMMEDIATE` under
//! WAL with a busy timeout, so writers queue instead of failing; PostgreSQL: row inserts need
//! no lock), and migrations run under an exclusive lock (SQLite's write lock, PostgreSQL's
//! advisory lock), so two loadmarks opening a new store at once migrate it once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::record::{NewRun, RunInfo};

/// The schema version this build writes; a store of a newer one is refused.
pub const SCHEMA_VERSION: u32 = 2;

/// The migrations, in order: the store at version N has run the first N. `{ID}` is each
/// dialect's auto-numbered primary key. Never edit one that shipped: add the next.
const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    "CREATE TABLE loadmark_history (key TEXT PRIMARY KEY, value TEXT NOT NULL);
     INSERT INTO loadmark_history (key, value) VALUES ('format', 'loadmark results history');
     CREATE TABLE runs (
         id {ID},
         recorded_at TEXT NOT NULL,
         started_at TEXT NOT NULL,
         plan_hash TEXT NOT NULL,
         step BIGINT,
         target TEXT NOT NULL,
         loadmark_version TEXT NOT NULL,
         tags TEXT NOT NULL,
         metrics TEXT NOT NULL,
         result TEXT NOT NULL
     );",
    // 2: a step's parameters, the file a run was imported from, a digest of the result so
    // the same result is stored once, and an index by series and time.
    "ALTER TABLE runs ADD COLUMN params TEXT NOT NULL DEFAULT '';
     ALTER TABLE runs ADD COLUMN source TEXT;
     ALTER TABLE runs ADD COLUMN digest TEXT;
     CREATE UNIQUE INDEX runs_digest ON runs (digest);
     CREATE INDEX runs_series ON runs (plan_hash, step, target, started_at);",
];

/// Where a store is: a SQLite file, or a PostgreSQL URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Location {
    /// `postgres://…` or `postgresql://…` is a server; anything else a file.
    pub fn parse(text: &str) -> Location {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Location::Postgres(text.to_string())
        } else {
            Location::Sqlite(PathBuf::from(text))
        }
    }
}

impl std::fmt::Display for Location {
    /// The file, or the URL without its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => f.write_str(&without_password(url)),
        }
    }
}

fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.split_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split(':').next().unwrap_or("");
            format!("{scheme}://{name}:***@{host}")
        }
        _ => url.to_string(),
    }
}

/// What went wrong with a store. Each names the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file is not a SQLite database (or is damaged): point --store elsewhere.
    #[error("{store}: not a loadmark history store (not a SQLite database, or a damaged one)")]
    NotADatabase { store: String },
    /// A database of something else: loadmark does not write into it.
    #[error("{store}: not a loadmark history store (a database of something else: it has tables, none of them loadmark's)")]
    Foreign { store: String },
    /// Written by a newer loadmark: upgrade loadmark to use it.
    #[error("{store}: history schema version {found} is newer than this loadmark understands ({SCHEMA_VERSION}); upgrade loadmark")]
    TooNew { store: String, found: u32 },
    /// The database refused or failed an operation (disk full, connection dropped, …).
    #[error("{store}: {what}: {message}")]
    Database {
        store: String,
        what: &'static str,
        message: String,
    },
    /// A stored row could not be read back (edited by hand?).
    #[error("{store}: run {id}: {message}")]
    BadRow {
        store: String,
        id: i64,
        message: String,
    },
    /// No run with this id.
    #[error("{store}: no run {id}")]
    NoRun { store: String, id: i64 },
}

/// A run as the store lists it (without its result JSON, read with [`Store::result`]).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    pub id: i64,
    pub recorded_at: String,
    pub info: RunInfo,
}

impl std::ops::Deref for StoredRun {
    type Target = RunInfo;
    fn deref(&self) -> &RunInfo {
        &self.info
    }
}

/// How an insert went: runs added, and those already stored (the same result).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inserted {
    pub ids: Vec<i64>,
    pub duplicates: usize,
}

/// An open store, migrated to [`SCHEMA_VERSION`].
pub struct Store {
    location: Location,
    backend: crate::backend::Backend,
}

impl Store {
    /// Opens (creating a new file or an empty database's tables) and migrates the store.
    pub fn open(location: &Location) -> Result<Store, StoreError> {
        Store::open_at_version(location, SCHEMA_VERSION)
    }

    /// Opens the store, migrated only up to `version`: for tests of migrations.
    #[doc(hidden)]
    pub fn open_at_version(location: &Location, version: u32) -> Result<Store, StoreError> {
        let name = location.to_string();
        let mut backend = crate::backend::Backend::connect(location, &name)?;
        backend.migrate(&name, version.min(SCHEMA_VERSION))?;
        Ok(Store {
            location: location.clone(),
            backend,
        })
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The schema version the store is at.
    pub fn schema_version(&mut self) -> Result<u32, StoreError> {
        let name = self.location.to_string();
        self.backend.version(&name)
    }

    /// Adds runs in one transaction: all or none. A result already stored is skipped.
    pub fn insert(&mut self, runs: &[NewRun]) -> Result<Inserted, StoreError> {
        let name = self.location.to_string();
        let recorded_at = loadmark_report::rfc3339(std::time::SystemTime::now());
        self.backend.insert(&name, &recorded_at, runs)
    }

    /// Every run, oldest first (by start time, then id).
    pub fn runs(&mut self) -> Result<Vec<StoredRun>, StoreError> {
        let name = self.location.to_string();
        self.backend.runs(&name)
    }

    /// A run's full result JSON.
    pub fn result(&mut self, id: i64) -> Result<String, StoreError> {
        let name = self.location.to_string();
        self.backend.result(&name, id)
    }

    /// Runs SQL as it is: for tests that build a store of an older schema by hand.
    #[doc(hidden)]
    pub fn execute_raw(&mut self, sql: &str) -> Result<(), StoreError> {
        let name = self.location.to_string();
        self.backend.execute_raw(&name, sql)
    }
}

/// How long a SQLite writer waits for another's transaction before failing.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The store file's folder, made when missing.
pub(crate) fn ensure_parent(path: &Path, name: &str) -> Result<(), StoreError> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.exists() => std::fs::create_dir_all(dir)
            .map_err(|e| StoreError::Database {
                store: name.to_string(),
                what: "creating its folder",
                message: e.to_string(),
            }),
        _ => Ok(()),
    }
}

/// The default store: `$XDG_DATA_HOME/loadmark/history.sqlite`, else
/// `~/.local/share/loadmark/history.sqlite`.
pub fn default_location() -> Option<Location> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(Location::Sqlite(
        data.join("loadmark").join("history.sqlite"),
    ))
}

pub(crate) fn tags_text(tags: &BTreeMap<String, String>) -> String {
    serde_json::to_string(tags).expect("tags serialize")
}

pub(crate) fn metrics_text(metrics: &BTreeMap<String, f64>) -> String {
    serde_json::to_string(metrics).expect("metrics serialize")
}

pub(crate) fn migration_sql(index: usize, postgres: bool) -> String {
    let id = if postgres {
        "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
    } else {
        "INTEGER PRIMARY KEY AUTOINCREMENT"
    };
    MIGRATIONS[index].replace("{ID}", id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(
            Location::parse("postgres://lm:secret@db:5432/h").to_string(),
            "postgres://lm:***@db:5432/h"
        );
        assert_eq!(
            Location::parse("history.sqlite"),
            Location::Sqlite("history.sqlite".into())
        );
    }
}
