//! Authentication against real nats-servers configured for it: user and password, token, NKey,
//! and a credentials file (user JWT and seed) under an operator whose keys the test makes with
//! the nkeys and JWT libraries. Each method is accepted when right and refused, with its error
//! kind and exit status, when wrong; and no secret reaches the output.

use std::path::Path;
use std::process::Output;

use crate::support::{bin, scratch_dir, stderr, TestServer};
use nats_jwt::{KeyPair, Token};

/// `pub` of a few messages with extra environment variables; returns the output.
fn publish(url: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = bin();
    c.args([
        "pub",
        "--server",
        url,
        "--msgs",
        "100",
        "--no-progress",
        "--json",
        "-",
    ]);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("msgbench runs")
}

fn accepted(out: &Output, method: &str, secrets: &[&str]) {
    assert!(out.status.success(), "{method}: {}", stderr(out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["server"]["auth"], method);
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(out));
    for s in secrets {
        assert!(!all.contains(s), "{method}: a secret is in the output");
    }
}

fn refused(out: &Output, what: &str) {
    assert_eq!(out.status.code(), Some(4), "{what}: {}", stderr(out));
    let err = stderr(out);
    assert!(
        err.contains("refused the connection") && err.to_lowercase().contains("authorization"),
        "{what}: {err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn user_and_password_from_the_environment() {
    let s = TestServer::with_config("authorization { user: alice, password: s3cret-pw }");
    let out = publish(
        &s.url,
        &["--user", "alice"],
        &[("NATS_PASSWORD", "s3cret-pw")],
    );
    accepted(&out, "user_password", &["s3cret-pw"]);
    let out = publish(&s.url, &["--user", "alice"], &[("NATS_PASSWORD", "wrong")]);
    refused(&out, "wrong password");
    // NATS_USER works like --user.
    let out = publish(
        &s.url,
        &[],
        &[("NATS_USER", "alice"), ("NATS_PASSWORD", "s3cret-pw")],
    );
    accepted(&out, "user_password", &["s3cret-pw"]);
}

#[test]
fn token_from_the_environment() {
    let s = TestServer::with_config("authorization { token: t0ken-value }");
    accepted(
        &publish(&s.url, &[], &[("NATS_TOKEN", "t0ken-value")]),
        "token",
        &["t0ken-value"],
    );
    refused(
        &publish(&s.url, &[], &[("NATS_TOKEN", "nope")]),
        "wrong token",
    );
    refused(&publish(&s.url, &[], &[]), "no token");
}

#[test]
fn nkey_seed_file() {
    let user = KeyPair::new_user();
    let s = TestServer::with_config(&format!(
        "authorization {{ users = [ {{ nkey: {} }} ] }}",
        user.public_key()
    ));
    let dir = scratch_dir("nkey");
    let good = dir.join("user.nk");
    std::fs::write(&good, user.seed().unwrap()).unwrap();
    let seed = user.seed().unwrap();
    accepted(
        &publish(&s.url, &["--nkey", good.to_str().unwrap()], &[]),
        "nkey",
        &[&seed],
    );
    // Another key: the server does not know it.
    let other = dir.join("other.nk");
    std::fs::write(&other, KeyPair::new_user().seed().unwrap()).unwrap();
    refused(
        &publish(&s.url, &["--nkey", other.to_str().unwrap()], &[]),
        "unknown nkey",
    );
    let _ = std::fs::remove_dir_all(dir);
}

fn creds_file(path: &Path, jwt: &str, seed: &str) {
    std::fs::write(
        path,
        format!(
            "-----BEGIN NATS USER JWT-----\n{jwt}\n------END NATS USER JWT------\n\n\
             -----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n"
        ),
    )
    .unwrap();
}

#[test]
fn credentials_file_under_an_operator() {
    // An operator the server trusts, an account it signed, a user the account signed.
    let operator = KeyPair::new_operator();
    let account = KeyPair::new_account();
    let account_jwt = Token::new_account(account.public_key())
        .name("bench")
        .sign(&operator);
    let user = KeyPair::new_user();
    let user_jwt = Token::new_user(account.public_key(), user.public_key())
        .name("bencher")
        .sign(&account);
    // The test server runs JetStream, which in operator mode needs a system account.
    let system = KeyPair::new_account();
    let system_jwt = Token::new_account(system.public_key())
        .name("SYS")
        .sign(&operator);
    let s = TestServer::with_config(&format!(
        "trusted_keys: [\"{}\"]\nresolver: MEMORY\nsystem_account: {}\n\
         resolver_preload: {{ {}: \"{}\", {}: \"{}\" }}\n",
        operator.public_key(),
        system.public_key(),
        account.public_key(),
        account_jwt,
        system.public_key(),
        system_jwt
    ));
    let dir = scratch_dir("creds");
    let good = dir.join("user.creds");
    let seed = user.seed().unwrap();
    creds_file(&good, &user_jwt.to_string(), &seed);
    accepted(
        &publish(&s.url, &["--creds", good.to_str().unwrap()], &[]),
        "creds",
        &[&seed],
    );
    // NATS_CREDS works like --creds.
    accepted(
        &publish(&s.url, &[], &[("NATS_CREDS", good.to_str().unwrap())]),
        "creds",
        &[&seed],
    );
    // The right JWT with another user's seed cannot sign for it.
    let forged = dir.join("forged.creds");
    creds_file(
        &forged,
        &user_jwt.to_string(),
        &KeyPair::new_user().seed().unwrap(),
    );
    refused(
        &publish(&s.url, &["--creds", forged.to_str().unwrap()], &[]),
        "wrong seed",
    );
    // A user signed by an account the server does not know.
    let stranger = KeyPair::new_account();
    let orphan_jwt = Token::new_user(stranger.public_key(), user.public_key()).sign(&stranger);
    let orphan = dir.join("orphan.creds");
    creds_file(&orphan, &orphan_jwt.to_string(), &seed);
    refused(
        &publish(&s.url, &["--creds", orphan.to_str().unwrap()], &[]),
        "unknown account",
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn credential_flags_that_cannot_work_are_named() {
    let out = bin()
        .args(["pub", "--server", "nats://127.0.0.1:1", "--user", "a"])
        .env("NATS_TOKEN", "t")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--user, NATS_TOKEN"),
        "{}",
        stderr(&out)
    );
    let out = bin()
        .args(["pub", "--nkey", "/nonexistent/user.nk"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--nkey"), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1);
}

#[test]
fn a_subscription_the_server_refuses_stops_the_run_before_its_load_naming_the_subject() {
    // The connection stays up after a refused SUB, so a run that went on would receive or
    // serve nothing for its whole --duration. `inbox` may subscribe to inboxes only; `svc` to
    // the service's subject only, not to its own reply inbox.
    let s = TestServer::with_config(
        "authorization { users = [ \
         {user: inbox, password: pw, permissions: {subscribe: {allow: [\"_INBOX.>\"]}}}, \
         {user: svc, password: pw, permissions: {subscribe: {allow: [\"svc\"]}}} ] }",
    );
    let cases: [(&str, &[&str], &str); 10] = [
        ("inbox", &["sub"], "\"svc\""),
        // Above 16 subscribers, the epoll fleet subscribes.
        ("inbox", &["sub", "--clients", "40"], "\"svc\""),
        ("inbox", &["pubsub"], "\"svc\""),
        ("inbox", &["latency"], "\"svc\""),
        ("inbox", &["reply"], "\"svc\""),
        ("inbox", &["request"], "\"svc\""),
        ("svc", &["request"], "\"_INBOX."),
        ("svc", &["request", "--rate", "100"], "\"_INBOX."),
        // The JetStream API's inbox, before the stream is set up.
        ("svc", &["js", "pub"], "\"_INBOX."),
        // conns holds its connections for --hold, not a --duration.
        (
            "inbox",
            &["conns", "--clients", "20", "--subscribe", "shared"],
            "\"svc\"",
        ),
    ];
    for (user, args, subject) in cases {
        let started = std::time::Instant::now();
        let how_long = if args[0] == "conns" {
            "--hold"
        } else {
            "--duration"
        };
        let out = bin()
            .args(args)
            .args(["--server", &s.url, "--user", user, "--subject", "svc"])
            .args([how_long, "60s", "--no-progress"])
            .env("NATS_PASSWORD", "pw")
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(4), "{user} {args:?}: {err}");
        assert!(
            err.contains("refused a permission the run needs: Permissions Violation")
                && err.contains(subject),
            "{user} {args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{user} {args:?}: {err}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "{user} {args:?}: stopped before its load, not after its --duration"
        );
    }
}

#[test]
fn latency_between_two_named_servers_takes_the_credentials_and_refuses_a_local_cluster() {
    let s = TestServer::with_config("authorization { user: lat, password: lat-s3cret }");
    let out = bin()
        .args(["latency", "--server-a", &s.url, "--server-b", &s.url])
        .args(["--user", "lat", "--msgs", "200", "--rate", "1000"])
        .args(["--warmup", "0s", "--no-progress", "--json", "-"])
        .env("NATS_PASSWORD", "lat-s3cret")
        .output()
        .unwrap();
    accepted(&out, "user_password", &["lat-s3cret"]);
    let out = bin()
        .args(["latency", "--server-a", &s.url, "--cluster", "3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--cluster"), "{}", stderr(&out));
}

#[test]
fn the_server_msgbench_starts_gets_the_credentials_its_config_asks_for() {
    // msgbench starts the server here; --server-config has it ask for a user.
    let config = [
        "--server-config",
        "authorization.user=emb",
        "--server-config",
        "authorization.password=emb-s3cret",
    ];
    let user = [("NATS_USER", "emb"), ("NATS_PASSWORD", "emb-s3cret")];
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = bin();
        c.args(args).args(config).env_remove("NATS_URL");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let publish = ["pub", "--msgs", "100", "--no-progress", "--json", "-"];
    // The password reaches the server, and neither the result nor the text shows it (nor the
    // one in the server's settings).
    let out = run(&publish, &user);
    accepted(&out, "user_password", &["emb-s3cret"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let settings = &v["server"]["config"]["settings"];
    assert_eq!(settings[1]["value"], "(redacted)", "{settings}");
    refused(&run(&publish, &[]), "no credentials");
    // The text's first line names the settings, the secret's value redacted.
    let out = run(&publish[..4], &user);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("authorization.password=(redacted)") && !text.contains("emb-s3cret"),
        "{text}"
    );
    // A local cluster forms, and a fault finds its stream's leader, with them too: msgbench's
    // own connections present what the clients do.
    let cluster = "js pub --cluster 3 --replicas 3 --reconnect --rate 500 --msgs 600 \
                   --fault kill-leader@300ms --no-progress --json -";
    let out = run(&cluster.split_whitespace().collect::<Vec<_>>(), &user);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kill = &v["fault"]["faults"][0];
    assert_eq!(kill["nodes"][0], kill["leader_before"], "{kill}");
}
