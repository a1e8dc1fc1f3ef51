//! The store's schema, as numbered migrations. SQLite's `user_version` holds how many have run,
//! so a database written by an older msgbench is brought up to date in place when it is opened,
//! inside one transaction: a failed migration leaves the file as it was. A database newer than
//! this msgbench is refused rather than written with a schema it does not know.
//!
//! A PostgreSQL store has the same migrations in its own dialect ([`PG_MIGRATIONS`], the same
//! numbers), its version in a one-row table `msgbench_schema`, and runs them under an advisory
//! lock, so two processes opening a new database at once do not both create it.

use rusqlite::Connection;

use super::store::StoreError;

/// The migrations in order; `user_version` N means the first N have run. Never edit one that
/// has shipped: add the next.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: runs, their benchmark and testbed, and the headline figures as rows.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL UNIQUE,
        benchmark TEXT NOT NULL,
        name TEXT,
        scenario TEXT NOT NULL,
        testbed TEXT NOT NULL,
        testbed_json TEXT NOT NULL,
        started_at TEXT NOT NULL,
        recorded_at TEXT NOT NULL,
        plan_json TEXT NOT NULL,
        result_json TEXT NOT NULL
    );
    CREATE INDEX runs_series ON runs (benchmark, testbed, started_at);
    CREATE TABLE metrics (
        run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        metric TEXT NOT NULL,
        value REAL NOT NULL,
        PRIMARY KEY (run, metric)
    );",
    // 2: labels (`--label k=v`) as rows, so a change can be named by its commit, and the HDR
    // histograms as blobs, by their place in the result (a JSON pointer), so a reader can take
    // them without parsing the document.
    "CREATE TABLE labels (
        run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run, key)
    );
    CREATE TABLE histograms (
        run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        hdr BLOB NOT NULL,
        PRIMARY KEY (run, path)
    );",
];

/// The same migrations for PostgreSQL, number for number: `bigserial` ids, `double precision`
/// figures and `bytea` histograms where SQLite has its own types.
pub(super) const PG_MIGRATIONS: &[&str] = &[
    // 1
    "CREATE TABLE runs (
        id BIGSERIAL PRIMARY KEY,
        run_id TEXT NOT NULL UNIQUE,
        benchmark TEXT NOT NULL,
        name TEXT,
        scenario TEXT NOT NULL,
        testbed TEXT NOT NULL,
        testbed_json TEXT NOT NULL,
        started_at TEXT NOT NULL,
        recorded_at TEXT NOT NULL,
        plan_json TEXT NOT NULL,
        result_json TEXT NOT NULL
    );
    CREATE INDEX runs_series ON runs (benchmark, testbed, started_at);
    CREATE TABLE metrics (
        run BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        metric TEXT NOT NULL,
        value DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (run, metric)
    );",
    // 2
    "CREATE TABLE labels (
        run BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run, key)
    );
    CREATE TABLE histograms (
        run BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        hdr BYTEA NOT NULL,
        PRIMARY KEY (run, path)
    );",
];

/// The schema version this msgbench writes.
pub(super) const CURRENT: i64 = MIGRATIONS.len() as i64;
// One version number means one schema, whichever the backend.
const _: () = assert!(MIGRATIONS.len() == PG_MIGRATIONS.len());

/// The advisory lock the migrations of a PostgreSQL store are run under (any constant will do,
/// as long as it is always the same one: "msgbench" in ASCII).
const PG_LOCK: i64 = 0x6d73_6762_656e_6368;

/// Runs the migrations `conn`'s database has not had, in one immediate transaction (so two
/// processes opening a new file at once do not both create it).
///
/// # Errors
/// [`StoreError::Newer`] for a database from a later msgbench; SQLite's errors otherwise.
pub(super) fn run(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > CURRENT {
        return Err(StoreError::Newer {
            found: version,
            known: CURRENT,
        });
    }
    for sql in &MIGRATIONS[version as usize..] {
        tx.execute_batch(sql)?;
    }
    if version < CURRENT {
        // PRAGMA takes no parameters; CURRENT is a constant.
        tx.execute_batch(&format!("PRAGMA user_version = {CURRENT}"))?;
    }
    tx.commit()?;
    Ok(())
}

/// Runs the migrations a PostgreSQL database has not had, in one transaction under an advisory
/// lock: a failed migration leaves the database as it was, and a second process waits for the
/// first, then finds the schema current.
///
/// # Errors
/// [`StoreError::Newer`] for a database from a later msgbench; the server's errors otherwise.
pub(super) fn run_pg(
    client: &mut postgres::Client,
    err: impl Fn(postgres::Error) -> StoreError,
) -> Result<(), StoreError> {
    let mut tx = client.transaction().map_err(&err)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&PG_LOCK])
        .map_err(&err)?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS msgbench_schema (version INTEGER NOT NULL)")
        .map_err(&err)?;
    let version = tx
        .query_opt("SELECT version FROM msgbench_schema", &[])
        .map_err(&err)?
        .map_or(0, |r| i64::from(r.get::<_, i32>(0)));
    if version > CURRENT {
        return Err(StoreError::Newer {
            found: version,
            known: CURRENT,
        });
    }
    for sql in &PG_MIGRATIONS[version as usize..] {
        tx.batch_execute(sql).map_err(&err)?;
    }
    if version < CURRENT {
        tx.execute("DELETE FROM msgbench_schema", &[])
            .map_err(&err)?;
        tx.execute(
            "INSERT INTO msgbench_schema (version) VALUES ($1)",
            &[&(CURRENT as i32)],
        )
        .map_err(&err)?;
    }
    tx.commit().map_err(&err)?;
    Ok(())
}
