//! The history on a real PostgreSQL server, started here (initdb and postgres into a scratch
//! folder, on a free loopback port, with a password): a recorded run round-trips with its
//! histograms bit for bit, two processes recording at once lose no row, the `history` actions
//! read it as they read a file, a version-1 database is upgraded in place and a later one is
//! refused, and a password is taken from the environment, never from the command line, and
//! never shown. A server out of reach costs a run nothing but one line. Over TLS (the server's
//! certificate made here by a CA of the test's): `verify-full` with that CA records and reads
//! back, and a certificate msgbench cannot trust is refused in one line.
//!
//! Without PostgreSQL's programs the tests that need a server print a `SKIPPED:` line, unless
//! `MSGBENCH_REQUIRE_POSTGRES=1` (CI, which installs Debian's `postgresql`) makes that a
//! failure. PostgreSQL refuses to run as root; as root the server runs as the `postgres` user
//! the package creates (through `setpriv`, which executes the server in its place, so the
//! process the test stops is the server itself).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use crate::support::{bin, scratch_dir, stderr, Scratch, TestServer};
use base64::Engine as _;

const USER: &str = "msgbench";
const PASSWORD: &str = "pg-test-Secret-71";

/// A PostgreSQL server for one test, stopped (and its folder removed) when dropped.
struct Postgres {
    server: Child,
    port: u16,
    _dir: Scratch,
}

impl Postgres {
    /// The store's URL: no password in it (that comes from PGPASSWORD).
    fn url(&self) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/postgres", self.port)
    }

    /// A client of the test's own, to look underneath msgbench.
    fn client(&self) -> postgres::Client {
        postgres::Config::new()
            .host("127.0.0.1")
            .port(self.port)
            .user(USER)
            .password(PASSWORD)
            .dbname("postgres")
            .connect(postgres::NoTls)
            .expect("the test's own client connects")
    }

    /// Starts one, or says why it cannot (see the module's header for what follows).
    fn start(test: &str) -> Option<Postgres> {
        Self::start_with(test, |_| Vec::new())
    }

    /// As [`Postgres::start`], with TLS on and required: a CA made here (its PEM file is
    /// `ca.pem` in `pki`, outside the server's folder, as a client's would be) signed the
    /// server's certificate, for 127.0.0.1 only, and the server takes no connection in clear.
    fn start_tls(test: &str, pki: &Scratch) -> Option<Postgres> {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        std::fs::write(pki.join("ca.pem"), ca.pem()).unwrap();
        let key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        Self::start_with(test, |dir| {
            let (cert, private) = (dir.join("server.crt"), dir.join("server.key"));
            std::fs::write(&cert, leaf.pem()).unwrap();
            std::fs::write(&private, key.serialize_pem()).unwrap();
            // PostgreSQL refuses a key others can read.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
            let hba = dir.join("hba.conf");
            std::fs::write(&hba, "hostssl all all 127.0.0.1/32 scram-sha-256\n").unwrap();
            let c = |k: &str, v: &Path| format!("{k}={}", v.to_str().unwrap());
            vec![
                "ssl=on".into(),
                c("ssl_cert_file", &cert),
                c("ssl_key_file", &private),
                c("hba_file", &hba),
            ]
        })
    }

    /// Starts one with the settings `config` returns (`name=value`, after writing what they
    /// need into the server's folder, which it is given).
    fn start_with(test: &str, config: impl FnOnce(&Path) -> Vec<String>) -> Option<Postgres> {
        let bin = match programs() {
            Ok(b) => b,
            Err(why) => {
                assert!(
                    std::env::var("MSGBENCH_REQUIRE_POSTGRES").as_deref() != Ok("1"),
                    "MSGBENCH_REQUIRE_POSTGRES=1, but {test} cannot run: {why}"
                );
                let note = format!("SKIPPED: {test}: {why}");
                println!("{note}");
                // cargo test shows a passing test's output to no one: `make unit` prints what
                // is left in target/test-skips/ after the run.
                let skips = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-skips");
                std::fs::create_dir_all(&skips).unwrap();
                let file = test.replace(' ', "-");
                std::fs::write(skips.join(file), format!("{note}\n")).unwrap();
                return None;
            }
        };
        let dir = scratch_dir("pg");
        let settings = config(&dir);
        // SAFETY: geteuid has no preconditions and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        if root {
            let owner = Command::new("chown")
                .args(["-R", "postgres:postgres", dir.to_str().unwrap()])
                .status()
                .unwrap();
            assert!(owner.success(), "chown to the postgres user");
        }
        let as_server_user = |program: &Path| {
            if root {
                let mut c = Command::new("setpriv");
                c.args(["--reuid=postgres", "--regid=postgres", "--init-groups"])
                    .arg(program);
                c
            } else {
                Command::new(program)
            }
        };
        let pwfile = dir.join("pw");
        std::fs::write(&pwfile, PASSWORD).unwrap();
        let data = dir.join("data");
        let out = as_server_user(&bin.join("initdb"))
            .args(["-D", data.to_str().unwrap(), "-U", USER, "-E", "UTF8"])
            .args(["--auth=scram-sha-256", "--no-sync", "--pwfile"])
            .arg(&pwfile)
            .output()
            .unwrap();
        assert!(out.status.success(), "initdb: {}", stderr(&out));
        let port = free_port();
        let server = as_server_user(&bin.join("postgres"))
            .args(["-D", data.to_str().unwrap(), "-p", &port.to_string()])
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "unix_socket_directories=",
            ])
            .args(["-c", "fsync=off"])
            .args(settings.iter().flat_map(|s| ["-c", s.as_str()]))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pg = Postgres {
            server,
            port,
            _dir: dir,
        };
        // Ready when it answers; a generous bound only so a server that never starts fails the
        // test instead of hanging it.
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let attempt = postgres::Config::new()
                .host("127.0.0.1")
                .port(port)
                .user(USER)
                .password(PASSWORD)
                .dbname("postgres")
                .connect(postgres::NoTls);
            match attempt {
                // Up: it let the test in, or refused it in words of its own other than "still
                // starting" (a server that takes only TLS refuses the test's client in clear).
                Ok(_) => break,
                Err(e)
                    if e.as_db_error().is_some_and(|d| {
                        *d.code() != postgres::error::SqlState::CANNOT_CONNECT_NOW
                    }) =>
                {
                    break
                }
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => panic!("PostgreSQL did not start on port {port}: {e}"),
            }
        }
        Some(pg)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // SIGINT is PostgreSQL's fast shutdown: sessions ended, then a clean stop.
        // SAFETY: kill with the id of a child this value owns and has not yet waited for.
        unsafe { libc::kill(self.server.id() as i32, libc::SIGINT) };
        let _ = self.server.wait();
    }
}

/// The folder of initdb and postgres: on PATH, else Debian's /usr/lib/postgresql/N/bin (the
/// newest), which the package does not put on PATH.
fn programs() -> Result<PathBuf, String> {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    if let Some(d) = on_path
        .into_iter()
        .find(|d| d.join("initdb").is_file() && d.join("postgres").is_file())
    {
        return Ok(d);
    }
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| "no initdb on PATH and no /usr/lib/postgresql (install postgresql)")?
        .filter_map(|e| {
            let e = e.ok()?;
            let n = e.file_name().to_str()?.parse().ok()?;
            Some((n, e.path().join("bin")))
        })
        .filter(|(_, b)| b.join("initdb").is_file())
        .collect();
    debian.sort();
    debian
        .pop()
        .map(|(_, b)| b)
        .ok_or_else(|| "no initdb under /usr/lib/postgresql (install postgresql)".into())
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// msgbench with the store's password in PGPASSWORD, as a user would give it.
fn msgbench(args: &[&str]) -> Output {
    bin()
        .args(args)
        .env("PGPASSWORD", PASSWORD)
        .output()
        .unwrap()
}

/// A short latency run (a `pub` result holds no histogram; a latency result holds two).
fn latency_run(nats: &str, history: &str, extra: &[&str]) -> Output {
    let mut a = vec![
        "latency",
        "--server",
        nats,
        "--rate",
        "2000",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--no-progress",
        "--history-file",
        history,
    ];
    a.extend_from_slice(extra);
    msgbench(&a)
}

fn pub_run(nats: &str, history: &str, extra: &[&str]) -> Output {
    let mut a = vec![
        "pub",
        "--server",
        nats,
        "--msgs",
        "2000",
        "--no-progress",
        "--history-file",
        history,
    ];
    a.extend_from_slice(extra);
    msgbench(&a)
}

/// Every `hdr` string in a result document, by its JSON pointer, decoded.
fn histograms_of(doc: &serde_json::Value) -> Vec<(String, Vec<u8>)> {
    fn walk(v: &serde_json::Value, at: &str, out: &mut Vec<(String, Vec<u8>)>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                    match (k.as_str(), v.as_str()) {
                        ("hdr", Some(s)) => out.push((
                            here,
                            base64::engine::general_purpose::STANDARD.decode(s).unwrap(),
                        )),
                        _ => walk(v, &here, out),
                    }
                }
            }
            serde_json::Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(doc, "", &mut out);
    out.sort();
    out
}

fn history_json(args: &[&str]) -> serde_json::Value {
    let out = msgbench(args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_recorded_run_round_trips_with_its_histograms_bit_for_bit() {
    let Some(pg) = Postgres::start("the PostgreSQL round trip") else {
        return;
    };
    let nats = TestServer::start();
    let dir = scratch_dir("pg-roundtrip");
    let json = dir.join("result.json");
    let url = pg.url();
    let out = latency_run(
        &nats.url,
        &url,
        &["--record=required", "--json", json.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("in '{url}'")),
        "{}",
        stderr(&out)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let run_id = doc["run_id"].as_str().unwrap();

    // Underneath: the histograms are the result's, byte for byte, and so is the document.
    let mut c = pg.client();
    let row = c
        .query_one(
            "SELECT id, result_json FROM runs WHERE run_id = $1",
            &[&run_id],
        )
        .unwrap();
    let id: i64 = row.get(0);
    let stored: serde_json::Value = serde_json::from_str(row.get(1)).unwrap();
    assert_eq!(stored, doc);
    let mut hists: Vec<(String, Vec<u8>)> = c
        .query("SELECT path, hdr FROM histograms WHERE run = $1", &[&id])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    hists.sort();
    let expected = histograms_of(&doc);
    assert_eq!(expected.len(), 2, "a latency result holds two histograms");
    assert_eq!(hists, expected);

    // And through msgbench's own reading: show gives back the same run.
    let shown = history_json(&["history", "show", run_id, "--history", &url, "--json", "-"]);
    assert_eq!(shown["run"]["run_id"], run_id);
    let listed = history_json(&["history", "list", "--history", &url, "--json", "-"]);
    assert_eq!(listed["runs"].as_array().unwrap().len(), 1);
}

#[test]
fn two_processes_recording_at_once_lose_no_row_and_history_reads_them() {
    let Some(pg) = Postgres::start("two PostgreSQL writers") else {
        return;
    };
    let nats = TestServer::start();
    let url = pg.url();
    let per_process = 3;
    std::thread::scope(|scope| {
        for p in 0..2 {
            let (nats, url) = (&nats.url, &url);
            scope.spawn(move || {
                for i in 0..per_process {
                    let label = format!("proc={p}-{i}");
                    let out = pub_run(nats, url, &["--record=required", "--label", &label]);
                    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
                }
            });
        }
    });
    let listed = history_json(&["history", "list", "--history", &url, "--json", "-"]);
    let runs = listed["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2 * per_process);
    let benchmark = runs[0]["benchmark"].as_str().unwrap();
    let trend = history_json(&[
        "history",
        "trend",
        "--history",
        &url,
        "--benchmark",
        benchmark,
        "--metric",
        "msgs_per_sec",
        "--json",
        "-",
    ]);
    assert_eq!(
        trend["series"][0]["points"].as_array().map(Vec::len),
        Some(2 * per_process),
        "{trend}"
    );
    // Judged (0: no regression, 8: one), not refused, and named by its redacted URL.
    let check = msgbench(&["history", "check", "--history", &url]);
    assert!(
        matches!(check.status.code(), Some(0 | 8)),
        "{}",
        stderr(&check)
    );
    assert!(
        String::from_utf8_lossy(&check.stdout).starts_with(&format!("History check of '{url}'")),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    let export = msgbench(&[
        "history",
        "export",
        "--history",
        &url,
        "--format",
        "otava",
        "--benchmark",
        benchmark,
    ]);
    assert_eq!(export.status.code(), Some(0), "{}", stderr(&export));
    // A header and one line per run.
    assert_eq!(
        String::from_utf8_lossy(&export.stdout).lines().count(),
        1 + 2 * per_process
    );
}

/// The version-1 schema written here by hand (not from the migrations, so a later edit of the
/// first one cannot make this test agree with itself), then opened by msgbench.
#[test]
fn a_version_one_database_is_upgraded_in_place() {
    let Some(pg) = Postgres::start("the PostgreSQL upgrade") else {
        return;
    };
    pg.client()
        .batch_execute(
            "CREATE TABLE msgbench_schema (version INTEGER NOT NULL);
             INSERT INTO msgbench_schema VALUES (1);
             CREATE TABLE runs (id BIGSERIAL PRIMARY KEY, run_id TEXT NOT NULL UNIQUE,
                benchmark TEXT NOT NULL, name TEXT, scenario TEXT NOT NULL,
                testbed TEXT NOT NULL, testbed_json TEXT NOT NULL, started_at TEXT NOT NULL,
                recorded_at TEXT NOT NULL, plan_json TEXT NOT NULL, result_json TEXT NOT NULL);
             CREATE INDEX runs_series ON runs (benchmark, testbed, started_at);
             CREATE TABLE metrics (run BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                metric TEXT NOT NULL, value DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (run, metric));
             INSERT INTO runs (run_id, benchmark, name, scenario, testbed, testbed_json,
                started_at, recorded_at, plan_json, result_json)
                VALUES ('old', 'b', NULL, 'pub', 't', '{}', '2026-01-01T00:00:00Z',
                        '2026-01-01T00:00:01Z', '{}', '{}');
             INSERT INTO metrics VALUES (1, 'msgs_per_sec', 5.0);",
        )
        .unwrap();
    let url = pg.url();
    let old = history_json(&["history", "show", "old", "--history", &url, "--json", "-"]);
    assert_eq!(old["run"]["run_id"], "old");
    let mut c = pg.client();
    let version: i32 = c
        .query_one("SELECT version FROM msgbench_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, 2);
    // The tables the upgrade added take a new run in full.
    let nats = TestServer::start();
    let out = latency_run(&nats.url, &url, &["--record=required", "--label", "k=v"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let counts = c
        .query_one(
            "SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM labels),
                    (SELECT COUNT(*) FROM histograms)",
            &[],
        )
        .unwrap();
    assert_eq!(counts.get::<_, i64>(0), 2);
    assert_eq!(counts.get::<_, i64>(1), 1);
    assert_eq!(counts.get::<_, i64>(2), 2);
}

#[test]
fn a_database_from_a_later_msgbench_is_refused() {
    let Some(pg) = Postgres::start("the PostgreSQL newer schema") else {
        return;
    };
    pg.client()
        .batch_execute(
            "CREATE TABLE msgbench_schema (version INTEGER NOT NULL);
             INSERT INTO msgbench_schema VALUES (99);",
        )
        .unwrap();
    let out = msgbench(&["history", "list", "--history", &pg.url()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(e.contains("schema version 99"), "{e}");
    // Refused before anything was written.
    let tables: i64 = pg
        .client()
        .query_one(
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'runs'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tables, 0);
}

/// A server that refuses (a wrong password) and one that is not there are the same to a run:
/// its JSON written, one line, exit 0; with `--record=required`, status 1.
#[test]
fn a_server_out_of_reach_costs_the_run_one_line() {
    let nats = TestServer::start();
    let dir = scratch_dir("pg-unreachable");
    let json = dir.join("result.json");
    let json_s = json.to_str().unwrap();
    let nobody = format!("postgres://{USER}@127.0.0.1:{}/postgres", free_port());
    let out = pub_run(&nats.url, &nobody, &["--record", "--json", json_s]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(json.exists());
    let e = stderr(&out);
    let lines: Vec<&str> = e.lines().filter(|l| l.contains("history")).collect();
    assert_eq!(lines.len(), 1, "{e}");
    assert!(
        lines[0].contains("not recorded") && lines[0].contains(&nobody),
        "{e}"
    );

    std::fs::remove_file(&json).unwrap();
    let out = pub_run(&nats.url, &nobody, &["--record=required", "--json", json_s]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(json.exists());
    let e = stderr(&out);
    assert_eq!(
        e.lines().filter(|l| l.starts_with("error:")).count(),
        1,
        "{e}"
    );
    assert!(!e.contains(PASSWORD));
}

#[test]
fn a_wrong_password_is_one_line_and_never_shown() {
    let Some(pg) = Postgres::start("the PostgreSQL refusal") else {
        return;
    };
    let nats = TestServer::start();
    let wrong = "not-the-Password-9";
    let out = bin()
        .args([
            "pub",
            "--server",
            &nats.url,
            "--msgs",
            "500",
            "--no-progress",
        ])
        .env(
            "MSGBENCH_HISTORY",
            format!("postgres://{USER}:{wrong}@127.0.0.1:{}/postgres", pg.port),
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let e = stderr(&out);
    let lines: Vec<&str> = e.lines().filter(|l| l.contains("history")).collect();
    assert_eq!(lines.len(), 1, "{e}");
    // The server's own words, which name the user and not the secret.
    assert!(
        lines[0].contains("not recorded") && lines[0].contains("password authentication failed"),
        "{e}"
    );
    assert!(!e.contains(wrong), "{e}");
    // The right one, in a URL in MSGBENCH_HISTORY: recorded, and the line shows no password.
    let out = bin()
        .args([
            "pub",
            "--server",
            &nats.url,
            "--msgs",
            "500",
            "--no-progress",
        ])
        .env(
            "MSGBENCH_HISTORY",
            format!(
                "postgres://{USER}:{PASSWORD}@127.0.0.1:{}/postgres",
                pg.port
            ),
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(e.contains("history: recorded"), "{e}");
    assert!(!e.contains(PASSWORD), "{e}");
}

#[test]
fn a_password_in_a_command_line_url_is_refused_naming_the_flag() {
    let url = format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/h", free_port());
    for (args, flag) in [
        (
            vec![
                "pub",
                "--server",
                "nats://127.0.0.1:1",
                "--history-file",
                &url,
            ],
            "--history-file",
        ),
        (vec!["history", "list", "--history", &url], "--history"),
    ] {
        let out = bin().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let e = stderr(&out);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains(&format!("{flag}:")), "{e}");
        assert!(!e.contains(PASSWORD), "{e}");
    }
}

#[test]
fn over_tls_verify_full_with_the_tests_ca_records_and_reads_back_and_an_untrusted_one_is_refused() {
    let pki = scratch_dir("pg-tls-ca");
    let Some(pg) = Postgres::start_tls("the PostgreSQL store over TLS", &pki) else {
        return;
    };
    let nats = TestServer::start();
    let ca = pki.join("ca.pem");
    let ca = ca.to_str().unwrap();
    let base = format!("postgres://{USER}@127.0.0.1:{}/postgres", pg.port);
    let url = format!("{base}?sslmode=verify-full&sslrootcert={ca}");
    let dir = scratch_dir("pg-tls");
    let json = dir.join("result.json");
    let out = pub_run(
        &nats.url,
        &url,
        &["--record=required", "--json", json.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let run_id = doc["run_id"].as_str().unwrap();
    let shown = history_json(&["history", "show", run_id, "--history", &url, "--json", "-"]);
    assert_eq!(shown["run"]["run_id"], run_id);
    // The run's file imported into the same history: it is there already, and says so.
    let out = msgbench(&[
        "history",
        "import",
        "--history",
        &url,
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(said.contains("0 imported, 1 already there"), "{said}");
    // The server takes no connection in clear (its pg_hba.conf has only `hostssl`), so the
    // record above went over TLS; in clear it is one line, the server's own refusal.
    let clear = msgbench(&[
        "history",
        "list",
        "--history",
        &format!("{base}?sslmode=disable"),
    ]);
    let e = stderr(&clear);
    assert_eq!(clear.status.code(), Some(1), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("no encryption"), "{e}");

    // No CA given: the system's roots do not know the test's CA, and verify-ca, require and
    // prefer (the default) check the chain too. Each is one line.
    for mode in ["verify-full", "verify-ca", "require", "prefer"] {
        let out = msgbench(&[
            "history",
            "list",
            "--history",
            &format!("{base}?sslmode={mode}"),
        ]);
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{mode}: {e}");
        assert_eq!(e.lines().count(), 1, "{mode}: {e}");
        assert!(
            e.starts_with("error: ") && e.contains("certificate is not trusted"),
            "{mode}: {e}"
        );
        assert!(e.contains("sslrootcert"), "{mode}: {e}");
    }
    // The test's CA, but a host name the certificate (for 127.0.0.1) does not carry, at the
    // same address (libpq's hostaddr): verify-full refuses it, verify-ca takes it.
    let by_name = format!(
        "postgres://{USER}@localhost:{}/postgres?hostaddr=127.0.0.1&sslrootcert={ca}",
        pg.port
    );
    let out = msgbench(&[
        "history",
        "list",
        "--history",
        &format!("{by_name}&sslmode=verify-full"),
    ]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("certificate is not trusted"), "{e}");
    let out = msgbench(&[
        "history",
        "list",
        "--history",
        &format!("{by_name}&sslmode=verify-ca"),
        "--json",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed["runs"].as_array().unwrap().len(), 1);
}
