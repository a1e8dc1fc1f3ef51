//! The results store: one SQLite file (through rusqlite, with SQLite built in, so nothing needs
//! installing), or a PostgreSQL server for a team sharing one history (`pg`), named by a
//! `postgres://` URL wherever a file is given. It keeps each run's result document as written,
//! its plan, its HDR histograms as blobs, its headline figures as rows, its benchmark, testbed
//! and labels. Both backends have the same tables, the same numbered migrations and the same
//! kinds of error; [`Store`] is an enum over the two rather than a trait object, because there
//! are two and will stay few, and a match shows at each call what each backend does.
//!
//! WAL mode lets readers (`history check` in one CI job) run while another job records; a busy
//! timeout makes a writer wait for another's transaction rather than fail, so two processes
//! recording into one file at once both land. Every run goes in as one transaction: a store
//! never holds half a run. Errors are kinds ([`StoreError`]) because the caller branches on
//! them: a store that is locked, corrupt or out of reach costs a run nothing but one line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode, OptionalExtension};

use super::migrate;

mod pg;
mod pg_tls;
pub use pg::{is_url, refuse_password};

/// How long a writer waits for another's transaction before giving up as locked.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the store could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file cannot be opened or created (no such folder, no permission).
    #[error("cannot open the history '{path}': {reason}")]
    Unreachable { path: String, reason: String },
    /// Another process held the database for longer than the busy timeout.
    #[error("the history is locked by another process: {0}")]
    Locked(String),
    /// The file is not an SQLite database, or a damaged one.
    #[error("the history is not a readable database: {0}")]
    Corrupt(String),
    /// The database was written by a later msgbench, with a schema this one does not know.
    #[error("the history has schema version {found}; this msgbench knows up to {known}")]
    Newer { found: i64, known: i64 },
    /// A run with this id is already stored.
    #[error("run {0} is already in the history")]
    Duplicate(String),
    /// A run asked for by id is not stored.
    #[error("no run {0} in the history")]
    NoSuchRun(String),
    /// Any other SQLite failure.
    #[error("the history: {0}")]
    Sqlite(String),
    /// Any other PostgreSQL failure.
    #[error("the history: {0}")]
    Postgres(String),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        let text = e.to_string();
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked(text),
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Corrupt(text),
            Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied | ErrorCode::ReadOnly) => {
                StoreError::Unreachable {
                    path: String::new(),
                    reason: text,
                }
            }
            _ => StoreError::Sqlite(text),
        }
    }
}

/// One run as the store takes it.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub run_id: String,
    /// The benchmark's identity (see `identity`).
    pub benchmark: String,
    /// `--name`, when given.
    pub name: Option<String>,
    pub scenario: String,
    /// The testbed's fingerprint and the facts it was made from.
    pub testbed: String,
    pub testbed_json: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub labels: BTreeMap<String, String>,
    pub plan_json: String,
    /// The result document exactly as `--json` writes it.
    pub result_json: String,
    /// Headline figures by name (`msgs_per_sec`, `p99`, …).
    pub metrics: Vec<(String, f64)>,
    /// HDR histograms by their JSON pointer in the result, decoded to their binary encoding.
    pub histograms: Vec<(String, Vec<u8>)>,
}

/// A stored run, as lists and checks see it.
#[derive(Debug, Clone)]
pub struct RunRow {
    pub run_id: String,
    pub benchmark: String,
    pub name: Option<String>,
    pub scenario: String,
    pub testbed: String,
    pub started_at: String,
    pub labels: BTreeMap<String, String>,
}

/// One value of one metric in a series, oldest first.
#[derive(Debug, Clone)]
pub struct Point {
    pub run: RunRow,
    pub value: f64,
}

/// An open store.
pub struct Store {
    backend: Backend,
    /// The file, or the server's URL with any password redacted.
    path: PathBuf,
}

enum Backend {
    Sqlite(Connection),
    // Boxed: a client with its runtime is three times an SQLite connection, and a store is
    // opened once per command.
    Postgres(Box<pg::Pg>),
}

impl Store {
    /// Opens (creating it if need be) the store at `path` and brings its schema up to date.
    /// A `path` that is a `postgres://` or `postgresql://` URL opens that server's database.
    ///
    /// # Errors
    /// A [`StoreError`] saying whether the file or server is out of reach, locked, corrupt or
    /// newer.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(url) = path.to_str().filter(|p| is_url(p)) {
            let pg = pg::Pg::open(url)?;
            return Ok(Store {
                path: PathBuf::from(pg.shown()),
                backend: Backend::Postgres(Box::new(pg)),
            });
        }
        let shown = path.display().to_string();
        let unreachable = |reason: String| StoreError::Unreachable {
            path: shown.clone(),
            reason,
        };
        let mut conn = Connection::open(path).map_err(|e| match StoreError::from(e) {
            StoreError::Unreachable { reason, .. } => unreachable(reason),
            other => other,
        })?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // SQLite does not call the busy handler everywhere: switching a new file to WAL, or
        // two processes creating the file at once, can answer "locked" at once. Those are
        // retried until the busy timeout has passed.
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        loop {
            match prepare(&mut conn) {
                Err(StoreError::Locked(_)) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => break other?,
            }
        }
        Ok(Store {
            backend: Backend::Sqlite(conn),
            path: path.to_path_buf(),
        })
    }

    /// Where the store is: its file, or its server's URL with any password redacted (so it can
    /// be shown as it is).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database.
    #[cfg(test)]
    pub fn version(&self) -> Result<i64, StoreError> {
        let conn = match &self.backend {
            Backend::Sqlite(c) => c,
            Backend::Postgres(pg) => return pg.version(),
        };
        Ok(conn.query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    /// Stores one run, all of it or nothing.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] when its id is stored already; others as [`Store::open`].
    pub fn insert(&mut self, run: &NewRun) -> Result<(), StoreError> {
        let conn = match &mut self.backend {
            Backend::Sqlite(c) => c,
            Backend::Postgres(pg) => return pg.insert(run),
        };
        let recorded_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let inserted = tx.execute(
            "INSERT INTO runs (run_id, benchmark, name, scenario, testbed, testbed_json,
                               started_at, recorded_at, plan_json, result_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
             ON CONFLICT (run_id) DO NOTHING",
            params![
                run.run_id,
                run.benchmark,
                run.name,
                run.scenario,
                run.testbed,
                run.testbed_json,
                run.started_at,
                recorded_at.to_string(),
                run.plan_json,
                run.result_json
            ],
        )?;
        if inserted == 0 {
            return Err(StoreError::Duplicate(run.run_id.clone()));
        }
        let id = tx.last_insert_rowid();
        {
            let mut m =
                tx.prepare("INSERT INTO metrics (run, metric, value) VALUES (?1, ?2, ?3)")?;
            for (name, value) in &run.metrics {
                m.execute(params![id, name, value])?;
            }
            let mut l = tx.prepare("INSERT INTO labels (run, key, value) VALUES (?1, ?2, ?3)")?;
            for (k, v) in &run.labels {
                l.execute(params![id, k, v])?;
            }
            let mut h =
                tx.prepare("INSERT INTO histograms (run, path, hdr) VALUES (?1, ?2, ?3)")?;
            for (path, bytes) in &run.histograms {
                h.execute(params![id, path, bytes])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Stored runs, oldest first, optionally of one benchmark.
    pub fn runs(&self, benchmark: Option<&str>) -> Result<Vec<RunRow>, StoreError> {
        let conn = match &self.backend {
            Backend::Sqlite(c) => c,
            Backend::Postgres(pg) => return pg.runs(benchmark),
        };
        let mut stmt = conn.prepare(
            "SELECT id, run_id, benchmark, name, scenario, testbed, started_at FROM runs
             WHERE ?1 IS NULL OR benchmark = ?1 ORDER BY started_at, id",
        )?;
        let rows = stmt
            .query_map(params![benchmark], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    RunRow {
                        run_id: r.get(1)?,
                        benchmark: r.get(2)?,
                        name: r.get(3)?,
                        scenario: r.get(4)?,
                        testbed: r.get(5)?,
                        started_at: r.get(6)?,
                        labels: BTreeMap::new(),
                    },
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        rows.into_iter()
            .map(|(id, mut row)| {
                row.labels = self.labels(id)?;
                Ok(row)
            })
            .collect()
    }

    fn labels(&self, id: i64) -> Result<BTreeMap<String, String>, StoreError> {
        let conn = match &self.backend {
            Backend::Sqlite(c) => c,
            Backend::Postgres(pg) => return pg.labels(id),
        };
        let mut stmt = conn.prepare_cached("SELECT key, value FROM labels WHERE run = ?1")?;
        let labels = stmt
            .query_map(params![id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        Ok(labels)
    }

    /// The values of `metric` for one benchmark on one testbed, oldest first; the newest
    /// `limit` when given.
    pub fn series(
        &self,
        benchmark: &str,
        testbed: &str,
        metric: &str,
        limit: Option<usize>,
    ) -> Result<Vec<Point>, StoreError> {
        let conn = match &self.backend {
            Backend::Sqlite(c) => c,
            Backend::Postgres(pg) => return pg.series(benchmark, testbed, metric, limit),
        };
        let mut stmt = conn.prepare(
            "SELECT r.id, r.run_id, r.benchmark, r.name, r.scenario, r.testbed, r.started_at,
                    m.value
             FROM runs r JOIN metrics m ON m.run = r.id
             WHERE r.benchmark = ?1 AND r.testbed = ?2 AND m.metric = ?3
             ORDER BY r.started_at DESC, r.id DESC LIMIT ?4",
        )?;
        let limit = limit.map_or(-1, |l| l as i64);
        let mut points = stmt
            .query_map(params![benchmark, testbed, metric, limit], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    Point {
                        run: RunRow {
                            run_id: r.get(1)?,
                            benchmark: r.get(2)?,
                            name: r.get(3)?,
                            scenario: r.get(4)?,
                            testbed: r.get(5)?,
                            started_at: r.get(6)?,
                            labels: BTreeMap::new(),
                        },
                        value: r.get(7)?,
                    },
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        points.reverse();
        points
            .into_iter()
            .map(|(id, mut p)| {
                p.run.labels = self.labels(id)?;
                Ok(p)
            })
            .collect()
    }

    /// The metrics stored for one benchmark on one testbed.
    pub fn metric_names(&self, benchmark: &str, testbed: &str) -> Result<Vec<String>, StoreError> {
        let conn = match &self.backend {
            Backend::Sqlite(c) => c,
            Backend::Postgres(pg) => return pg.metric_names(benchmark, testbed),
        };
        let mut stmt = conn.prepare(
            "SELECT DISTINCT m.metric FROM metrics m JOIN runs r ON m.run = r.id
             WHERE r.benchmark = ?1 AND r.testbed = ?2 ORDER BY m.metric",
        )?;
        let names = stmt
            .query_map(params![benchmark, testbed], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        Ok(names)
    }

    /// One stored run: its row, result document, plan, testbed facts, metrics and histograms.
    pub fn get(&self, run_id: &str) -> Result<StoredRun, StoreError> {
        let conn = match &self.backend {
            Backend::Sqlite(c) => c,
            Backend::Postgres(pg) => return pg.get(run_id),
        };
        let found = conn
            .query_row(
                "SELECT id, benchmark, name, scenario, testbed, started_at, result_json,
                        plan_json, testbed_json
                 FROM runs WHERE run_id = ?1",
                params![run_id],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        RunRow {
                            run_id: run_id.to_string(),
                            benchmark: r.get(1)?,
                            name: r.get(2)?,
                            scenario: r.get(3)?,
                            testbed: r.get(4)?,
                            started_at: r.get(5)?,
                            labels: BTreeMap::new(),
                        },
                        r.get::<_, String>(6)?,
                        r.get::<_, String>(7)?,
                        r.get::<_, String>(8)?,
                    ))
                },
            )
            .optional()?;
        let Some((id, mut run, result_json, plan_json, testbed_json)) = found else {
            return Err(StoreError::NoSuchRun(run_id.to_string()));
        };
        run.labels = self.labels(id)?;
        let mut m =
            conn.prepare("SELECT metric, value FROM metrics WHERE run = ?1 ORDER BY metric")?;
        let metrics = m
            .query_map(params![id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let mut h =
            conn.prepare("SELECT path, hdr FROM histograms WHERE run = ?1 ORDER BY path")?;
        let histograms = h
            .query_map(params![id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        Ok(StoredRun {
            run,
            result_json,
            plan_json,
            testbed_json,
            metrics,
            histograms,
        })
    }

    /// How many runs the store holds.
    #[cfg(test)]
    pub fn count(&self) -> Result<u64, StoreError> {
        let conn = match &self.backend {
            Backend::Sqlite(c) => c,
            Backend::Postgres(pg) => return pg.count(),
        };
        Ok(conn.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get::<_, i64>(0))? as u64)
    }
}

/// Sets up a connection: WAL, foreign keys, and the schema brought up to date.
fn prepare(conn: &mut Connection) -> Result<(), StoreError> {
    // The first statement that reads the file: a corrupt one fails here.
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Sqlite(format!(
            "WAL mode refused (journal mode is {mode})"
        )));
    }
    conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")?;
    migrate::run(conn)
}

/// A stored run in full.
#[derive(Debug, Clone)]
pub struct StoredRun {
    pub run: RunRow,
    pub result_json: String,
    pub plan_json: String,
    pub testbed_json: String,
    pub metrics: Vec<(String, f64)>,
    pub histograms: Vec<(String, Vec<u8>)>,
}

#[cfg(test)]
mod tests;
