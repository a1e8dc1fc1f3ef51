//! The store on a PostgreSQL server, for a team sharing one history: the same tables and the
//! same reading as the SQLite file (histograms as `bytea`, documents as text), through the
//! synchronous `postgres` client. Recording happens after a run is over, so nothing here needs
//! to be asynchronous.
//!
//! Credentials by reference: a URL typed on the command line may not carry a password
//! ([`refuse_password`]); the password comes from `PGPASSWORD` (libpq's convention) or from a
//! URL in `MSGBENCH_HISTORY`. Every URL shown goes through [`redact`]. TLS follows the URL's
//! `sslmode` and `sslrootcert` ([`pg_tls`]), and is always verified.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

use postgres::error::SqlState;
use postgres::{Client, Config, NoTls};

use super::pg_tls::{self, Mode};
use super::{NewRun, Point, RunRow, StoreError, StoredRun};
use crate::history::migrate;

/// How long opening a connection may take before the server counts as out of reach, unless the
/// URL says (`connect_timeout`): a server behind a firewall that drops packets would otherwise
/// hold the end of a run for the system's TCP timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The environment variable libpq reads a password from; so does msgbench.
pub(crate) const PASSWORD_ENV: &str = "PGPASSWORD";

/// Whether `place` names a PostgreSQL server rather than an SQLite file.
pub fn is_url(place: &str) -> bool {
    place.starts_with("postgres://") || place.starts_with("postgresql://")
}

/// `url` as it may be shown: a password, in the user part or as a `password` parameter, is
/// replaced by `***`. A URL that does not parse is shown by its scheme alone.
pub fn redact(url: &str) -> String {
    let Ok(mut u) = url::Url::parse(url) else {
        let scheme = url.split_once("://").map_or("postgres", |(s, _)| s);
        return format!("{scheme}://(a URL that does not parse)");
    };
    if u.password().is_some() {
        let _ = u.set_password(Some("***"));
    }
    if u.query_pairs().any(|(k, _)| k == "password") {
        let pairs: Vec<(String, String)> = u
            .query_pairs()
            .map(|(k, v)| {
                let v = if k == "password" { "***".into() } else { v };
                (k.into_owned(), v.into_owned())
            })
            .collect();
        u.query_pairs_mut().clear().extend_pairs(pairs);
    }
    u.to_string()
}

/// Whether `url` carries a password (in the user part or as a `password` parameter).
pub fn has_password(url: &str) -> bool {
    match url::Url::parse(url) {
        Ok(u) => u.password().is_some() || u.query_pairs().any(|(k, _)| k == "password"),
        // Unparsed: look for the shape of one rather than let it through.
        Err(_) => url.contains("password=") || url.split('@').count() > 1,
    }
}

/// Refuses a URL given on the command line (`flag`) that carries a password: a command line
/// is seen by everyone on the machine and kept in shell histories and CI logs.
///
/// # Errors
/// The line to print, naming the flag and never the password.
pub fn refuse_password(flag: &str, url: &str) -> Result<(), String> {
    if is_url(url) && has_password(url) {
        return Err(format!(
            "{flag}: a history URL on the command line may not carry a password \
             ('{}'): give it in {PASSWORD_ENV}, or the whole URL in MSGBENCH_HISTORY",
            redact(url)
        ));
    }
    Ok(())
}

/// An open PostgreSQL store.
pub(super) struct Pg {
    // The client's calls take `&mut`; the store's reads take `&self`, as SQLite's do.
    client: RefCell<Client>,
    /// The URL, redacted, for messages.
    shown: String,
}

impl Pg {
    /// Connects to `url` and brings its schema up to date.
    pub(super) fn open(url: &str) -> Result<Pg, StoreError> {
        let shown = redact(url);
        let unreachable = |reason: String| StoreError::Unreachable {
            path: shown.clone(),
            reason,
        };
        let tls = pg_tls::asked(url).map_err(unreachable)?;
        let mut config = Config::from_str(&tls.url).map_err(|e| unreachable(e.to_string()))?;
        config.ssl_mode(tls.mode.negotiation());
        if config.get_password().is_none() {
            if let Some(p) = std::env::var_os(PASSWORD_ENV).filter(|p| !p.is_empty()) {
                config.password(p.as_encoded_bytes());
            }
        }
        if config.get_user().is_none() {
            // libpq's defaults: PGUSER, else the name of the user running it.
            if let Some(u) = ["PGUSER", "USER", "LOGNAME"]
                .iter()
                .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
            {
                config.user(&u);
            }
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.application_name("msgbench");
        // Every failure to connect (refused, no such host, wrong password, no such database)
        // is the store out of reach: one line, and the run keeps its result.
        let refused = |e: postgres::Error| {
            unreachable(pg_tls::certificate_refused(&e).unwrap_or_else(|| text(&e)))
        };
        let mut client = match tls.mode {
            Mode::Disable => config.connect(NoTls).map_err(refused)?,
            mode => {
                let connector =
                    pg_tls::connector(mode, tls.roots.as_deref()).map_err(unreachable)?;
                config.connect(connector).map_err(refused)?
            }
        };
        migrate::run_pg(&mut client, |e| kind(e, &shown))?;
        Ok(Pg {
            client: RefCell::new(client),
            shown,
        })
    }

    pub(super) fn shown(&self) -> &str {
        &self.shown
    }

    fn err(&self, e: postgres::Error) -> StoreError {
        kind(e, &self.shown)
    }

    #[cfg(test)]
    pub(super) fn version(&self) -> Result<i64, StoreError> {
        let mut c = self.client.borrow_mut();
        let row = c
            .query_one("SELECT version FROM msgbench_schema", &[])
            .map_err(|e| self.err(e))?;
        Ok(i64::from(row.get::<_, i32>(0)))
    }

    pub(super) fn insert(&self, run: &NewRun) -> Result<(), StoreError> {
        let recorded_at =
            humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        let mut c = self.client.borrow_mut();
        let mut tx = c.transaction().map_err(|e| self.err(e))?;
        let id: Option<i64> = tx
            .query_opt(
                "INSERT INTO runs (run_id, benchmark, name, scenario, testbed, testbed_json,
                                   started_at, recorded_at, plan_json, result_json)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                 ON CONFLICT (run_id) DO NOTHING RETURNING id",
                &[
                    &run.run_id,
                    &run.benchmark,
                    &run.name,
                    &run.scenario,
                    &run.testbed,
                    &run.testbed_json,
                    &run.started_at,
                    &recorded_at,
                    &run.plan_json,
                    &run.result_json,
                ],
            )
            .map_err(|e| self.err(e))?
            .map(|r| r.get(0));
        let Some(id) = id else {
            return Err(StoreError::Duplicate(run.run_id.clone()));
        };
        let m = tx
            .prepare("INSERT INTO metrics (run, metric, value) VALUES ($1, $2, $3)")
            .map_err(|e| self.err(e))?;
        for (name, value) in &run.metrics {
            tx.execute(&m, &[&id, name, value])
                .map_err(|e| self.err(e))?;
        }
        let l = tx
            .prepare("INSERT INTO labels (run, key, value) VALUES ($1, $2, $3)")
            .map_err(|e| self.err(e))?;
        for (k, v) in &run.labels {
            tx.execute(&l, &[&id, k, v]).map_err(|e| self.err(e))?;
        }
        let h = tx
            .prepare("INSERT INTO histograms (run, path, hdr) VALUES ($1, $2, $3)")
            .map_err(|e| self.err(e))?;
        for (path, bytes) in &run.histograms {
            tx.execute(&h, &[&id, path, bytes])
                .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))
    }

    pub(super) fn runs(&self, benchmark: Option<&str>) -> Result<Vec<RunRow>, StoreError> {
        let rows = self
            .client
            .borrow_mut()
            .query(
                "SELECT id, run_id, benchmark, name, scenario, testbed, started_at FROM runs
                 WHERE $1::text IS NULL OR benchmark = $1 ORDER BY started_at, id",
                &[&benchmark],
            )
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                let mut row = run_row(r, 1, r.get(1));
                row.labels = self.labels(r.get(0))?;
                Ok(row)
            })
            .collect()
    }

    pub(super) fn labels(&self, id: i64) -> Result<BTreeMap<String, String>, StoreError> {
        let rows = self
            .client
            .borrow_mut()
            .query("SELECT key, value FROM labels WHERE run = $1", &[&id])
            .map_err(|e| self.err(e))?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    pub(super) fn series(
        &self,
        benchmark: &str,
        testbed: &str,
        metric: &str,
        limit: Option<usize>,
    ) -> Result<Vec<Point>, StoreError> {
        // LIMIT NULL is no limit.
        let limit = limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        let rows = self
            .client
            .borrow_mut()
            .query(
                "SELECT r.id, r.run_id, r.benchmark, r.name, r.scenario, r.testbed,
                        r.started_at, m.value
                 FROM runs r JOIN metrics m ON m.run = r.id
                 WHERE r.benchmark = $1 AND r.testbed = $2 AND m.metric = $3
                 ORDER BY r.started_at DESC, r.id DESC LIMIT $4",
                &[&benchmark, &testbed, &metric, &limit],
            )
            .map_err(|e| self.err(e))?;
        rows.iter()
            .rev()
            .map(|r| {
                let mut run = run_row(r, 1, r.get(1));
                run.labels = self.labels(r.get(0))?;
                Ok(Point {
                    run,
                    value: r.get(7),
                })
            })
            .collect()
    }

    pub(super) fn metric_names(
        &self,
        benchmark: &str,
        testbed: &str,
    ) -> Result<Vec<String>, StoreError> {
        let rows = self
            .client
            .borrow_mut()
            .query(
                "SELECT DISTINCT m.metric FROM metrics m JOIN runs r ON m.run = r.id
                 WHERE r.benchmark = $1 AND r.testbed = $2 ORDER BY m.metric",
                &[&benchmark, &testbed],
            )
            .map_err(|e| self.err(e))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    pub(super) fn get(&self, run_id: &str) -> Result<StoredRun, StoreError> {
        let found = self
            .client
            .borrow_mut()
            .query_opt(
                "SELECT id, run_id, benchmark, name, scenario, testbed, started_at,
                        result_json, plan_json, testbed_json
                 FROM runs WHERE run_id = $1",
                &[&run_id],
            )
            .map_err(|e| self.err(e))?;
        let Some(r) = found else {
            return Err(StoreError::NoSuchRun(run_id.to_string()));
        };
        let id: i64 = r.get(0);
        let mut run = run_row(&r, 1, run_id.to_string());
        run.labels = self.labels(id)?;
        let mut c = self.client.borrow_mut();
        let metrics = c
            .query(
                "SELECT metric, value FROM metrics WHERE run = $1 ORDER BY metric",
                &[&id],
            )
            .map_err(|e| self.err(e))?
            .iter()
            .map(|m| (m.get(0), m.get(1)))
            .collect();
        let histograms = c
            .query(
                "SELECT path, hdr FROM histograms WHERE run = $1 ORDER BY path",
                &[&id],
            )
            .map_err(|e| self.err(e))?
            .iter()
            .map(|h| (h.get(0), h.get(1)))
            .collect();
        Ok(StoredRun {
            run,
            result_json: r.get(7),
            plan_json: r.get(8),
            testbed_json: r.get(9),
            metrics,
            histograms,
        })
    }

    #[cfg(test)]
    pub(super) fn count(&self) -> Result<u64, StoreError> {
        let row = self
            .client
            .borrow_mut()
            .query_one("SELECT COUNT(*) FROM runs", &[])
            .map_err(|e| self.err(e))?;
        Ok(row.get::<_, i64>(0) as u64)
    }
}

/// A run's row from the columns `run_id, benchmark, name, scenario, testbed, started_at`
/// starting at `at` (the run id given, as the caller has it).
fn run_row(r: &postgres::Row, at: usize, run_id: String) -> RunRow {
    RunRow {
        run_id,
        benchmark: r.get(at + 1),
        name: r.get(at + 2),
        scenario: r.get(at + 3),
        testbed: r.get(at + 4),
        started_at: r.get(at + 5),
        labels: BTreeMap::new(),
    }
}

/// The error and its causes in one line (the client's own message is only its kind: "error
/// connecting to server", "db error"; what happened is in the causes). None carries the
/// password: the server's messages name the user, never the secret.
fn text(e: &postgres::Error) -> String {
    let mut line = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let more = c.to_string();
        if !line.ends_with(&more) {
            line.push_str(": ");
            line.push_str(&more);
        }
        cause = c.source();
    }
    line
}

/// A PostgreSQL failure as the store's kind of error: a lost connection or a refusal is the
/// store out of reach, a lock or a serialization conflict is `Locked`, anything else is the
/// server's own message.
pub(crate) fn kind(e: postgres::Error, shown: &str) -> StoreError {
    let text = text(&e);
    let Some(db) = e.as_db_error() else {
        return StoreError::Unreachable {
            path: shown.to_string(),
            reason: text,
        };
    };
    let code = db.code();
    if *code == SqlState::LOCK_NOT_AVAILABLE
        || *code == SqlState::T_R_DEADLOCK_DETECTED
        || *code == SqlState::T_R_SERIALIZATION_FAILURE
    {
        StoreError::Locked(text)
    } else if *code == SqlState::INSUFFICIENT_PRIVILEGE
        || *code == SqlState::INVALID_PASSWORD
        || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        || *code == SqlState::ADMIN_SHUTDOWN
        || *code == SqlState::CANNOT_CONNECT_NOW
    {
        StoreError::Unreachable {
            path: shown.to_string(),
            reason: text,
        }
    } else {
        StoreError::Postgres(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_shown() {
        for url in [
            "postgres://u:s3cret@db.example:5432/h",
            "postgresql://u@db/h?password=s3cret&sslmode=disable",
        ] {
            let shown = redact(url);
            assert!(!shown.contains("s3cret"), "{shown}");
            assert!(shown.contains("***"), "{shown}");
            assert!(has_password(url));
            let refused = refuse_password("--history", url).unwrap_err();
            assert!(!refused.contains("s3cret") && refused.starts_with("--history:"));
        }
        assert_eq!(redact("postgres://u@db/h"), "postgres://u@db/h");
        assert!(!has_password("postgres://u@db/h"));
        assert!(refuse_password("--history", "postgres://u@db/h").is_ok());
        // A file path is not a URL, whatever it holds.
        assert!(refuse_password("--history", "/tmp/a:b@c.db").is_ok());
    }

    #[test]
    fn an_unsupported_sslmode_is_refused_in_one_line_before_connecting() {
        // Nothing listens on port 1: had it connected, the reason would be the refusal.
        match Pg::open("postgres://u@127.0.0.1:1/h?sslmode=allow") {
            Err(StoreError::Unreachable { reason, .. }) => {
                assert!(
                    reason.starts_with("sslmode=allow is not supported"),
                    "{reason}"
                )
            }
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("opened"),
        }
    }
}
