//! TLS against real nats-servers configured for it, with a CA and certificates made inside the
//! test (rcgen): verified by default, a failed verification named (unknown CA, wrong host), the
//! explicit opt-out with its warning, mutual TLS, TLS before INFO (handshake_first), and the
//! read and write paths carrying a real load without loss.

use std::process::Output;

use crate::support::{self, bin, run_json, scratch_dir, stderr, u, TestServer};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};

/// A CA, and certificates it signed, written as PEM files into a directory of the test's.
pub(crate) struct Pki {
    dir: support::Scratch,
}

impl Pki {
    pub(crate) fn new(tag: &str) -> Self {
        Self {
            dir: scratch_dir(tag),
        }
    }

    pub(crate) fn ca(&self, name: &str) -> CertifiedIssuer<'static, KeyPair> {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        std::fs::write(self.dir.join(format!("{name}.pem")), ca.pem()).unwrap();
        ca
    }

    /// A certificate for `names`, signed by `ca`: `<name>.pem` and `<name>-key.pem`.
    pub(crate) fn leaf(&self, name: &str, names: &[&str], ca: &CertifiedIssuer<'static, KeyPair>) {
        let key = KeyPair::generate().unwrap();
        let params =
            CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap();
        let cert = params.signed_by(&key, ca).unwrap();
        std::fs::write(self.dir.join(format!("{name}.pem")), cert.pem()).unwrap();
        std::fs::write(
            self.dir.join(format!("{name}-key.pem")),
            key.serialize_pem(),
        )
        .unwrap();
    }

    pub(crate) fn path(&self, file: &str) -> String {
        self.dir.join(file).to_str().unwrap().to_string()
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub(crate) fn tls_block(pki: &Pki, server: &str, extra: &str) -> String {
    format!(
        "tls {{ cert_file: \"{}\", key_file: \"{}\" {extra} }}",
        pki.path(&format!("{server}.pem")),
        pki.path(&format!("{server}-key.pem"))
    )
}

fn tls_url(s: &TestServer) -> String {
    s.url.replace("nats://", "tls://")
}

fn refused(out: &Output, needle: &str) {
    assert_eq!(out.status.code(), Some(4), "{}", stderr(out));
    let err = stderr(out);
    assert!(err.contains(needle), "wanted '{needle}' in: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

fn publish(args: &[&str]) -> Output {
    let mut all = vec!["pub", "--msgs", "1000", "--no-progress"];
    all.extend_from_slice(args);
    bin().args(all).output().unwrap()
}

#[test]
fn a_verified_tls_server_carries_a_load_without_loss() {
    let pki = Pki::new("tls-ok");
    let ca = pki.ca("ca");
    pki.leaf("server", &["127.0.0.1", "localhost"], &ca);
    let s = TestServer::with_config(&tls_block(&pki, "server", ""));
    let (out, v) = run_json(&[
        "pubsub",
        "--server",
        &tls_url(&s),
        "--tls-ca",
        &pki.path("ca.pem"),
        "--msgs",
        "50000",
        "--size",
        "256",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let d = &v["delivery"];
    assert_eq!((u(&d["received"]), u(&d["lost"])), (50_000, 0), "{d}");
    assert!(v["server"]["url"].as_str().unwrap().starts_with("tls://"));
    assert_eq!(v["params"]["connection"]["tls"]["ca"], true);
    // Request/reply uses every path: writes from load loops, the reader's PONGs and replies.
    let (out, v) = run_json(&[
        "request",
        "--server",
        &s.url,
        "--tls-ca",
        &pki.path("ca.pem"),
        "--msgs",
        "2000",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(u(&v["delivery"]["lost"]), 0);
}

#[test]
fn verification_is_on_by_default_and_failures_say_why() {
    let pki = Pki::new("tls-verify");
    let ca = pki.ca("ca");
    pki.ca("other");
    pki.leaf("server", &["127.0.0.1"], &ca);
    pki.leaf("elsewhere", &["example.test"], &ca);
    let s = TestServer::with_config(&tls_block(&pki, "server", ""));
    // The server requires TLS: with no flag the system's roots are used, and they do not
    // know this test's CA.
    refused(&publish(&["--server", &s.url]), "UnknownIssuer");
    // A CA that did not sign the server's certificate (it has the same name as the one that
    // did, so the signature is what fails).
    refused(
        &publish(&["--server", &s.url, "--tls-ca", &pki.path("other.pem")]),
        "invalid peer certificate",
    );
    // The right CA, but a certificate for another host.
    let s2 = TestServer::with_config(&tls_block(&pki, "elsewhere", ""));
    refused(
        &publish(&["--server", &s2.url, "--tls-ca", &pki.path("ca.pem")]),
        "certificate not valid for name \"127.0.0.1\"",
    );
    // The explicit opt-out connects, and says it does not verify.
    let out = publish(&["--server", &s2.url, "--tls-insecure"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: --tls-insecure"),
        "{}",
        stderr(&out)
    );
    // A TLS URL to a server without TLS.
    let plain = TestServer::start();
    refused(
        &publish(&[
            "--server",
            &tls_url(&plain),
            "--tls-ca",
            &pki.path("ca.pem"),
        ]),
        "does not offer it",
    );
}

#[test]
fn through_the_link_proxy_the_certificate_is_still_checked_for_the_server_name() {
    // A certificate for "localhost" only: the proxy listens on 127.0.0.1, yet the name to
    // verify stays the server's.
    let pki = Pki::new("tls-link");
    let ca = pki.ca("ca");
    pki.leaf("server", &["localhost"], &ca);
    let s = TestServer::with_config(&tls_block(&pki, "server", ""));
    let url = s.url.replace("nats://127.0.0.1", "tls://localhost");
    let ca_path = pki.path("ca.pem");
    let out = publish(&[
        "--server",
        &url,
        "--tls-ca",
        &ca_path,
        "--link",
        "delay=1ms",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn mutual_tls_needs_the_client_certificate() {
    let pki = Pki::new("tls-mutual");
    let ca = pki.ca("ca");
    pki.leaf("server", &["127.0.0.1"], &ca);
    pki.leaf("client", &["msgbench-client"], &ca);
    let extra = format!(", ca_file: \"{}\", verify: true", pki.path("ca.pem"));
    let s = TestServer::with_config(&tls_block(&pki, "server", &extra));
    let out = publish(&[
        "--server",
        &s.url,
        "--tls-ca",
        &pki.path("ca.pem"),
        "--tls-cert",
        &pki.path("client.pem"),
        "--tls-key",
        &pki.path("client-key.pem"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Without it the server ends the handshake.
    let out = publish(&["--server", &s.url, "--tls-ca", &pki.path("ca.pem")]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}

#[test]
fn tls_first_talks_to_a_handshake_first_server() {
    let pki = Pki::new("tls-first");
    let ca = pki.ca("ca");
    pki.leaf("server", &["127.0.0.1"], &ca);
    let s = TestServer::with_config(&tls_block(&pki, "server", ", handshake_first: true"));
    let out = publish(&[
        "--server",
        &s.url,
        "--tls-ca",
        &pki.path("ca.pem"),
        "--tls-first",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn bad_tls_files_name_the_flag() {
    let pki = Pki::new("tls-bad");
    std::fs::write(pki.dir.join("empty.pem"), "").unwrap();
    for (args, needle) in [
        (vec!["--tls-ca", "/nonexistent/ca.pem"], "--tls-ca"),
        (
            vec!["--tls-ca", &pki.path("empty.pem")],
            "holds no certificate",
        ),
        (vec!["--tls-cert", &pki.path("empty.pem")], "--tls-key"),
    ] {
        let out = publish(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    }
}
