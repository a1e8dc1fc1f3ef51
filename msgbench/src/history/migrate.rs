//! The store's schema, as numbered migrations. SQLite's `user_version` holds how many have run,
//! so a database written by an older msgbench is brought up to date in place when it is opened,
//! inside one transaction: a failed migration leaves the file as it was. A database newer than
//! this msgbench is refused rather than written with a schema it does not know.

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

/// The schema version this msgbench writes.
pub(super) const CURRENT: i64 = MIGRATIONS.len() as i64;

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
