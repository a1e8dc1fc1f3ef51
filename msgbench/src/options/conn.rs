//! Validated connection options shared by every scenario: how long to wait for a server,
//! whether to reconnect, how often to check that the server is alive, and the fault to inject
//! into the embedded server.

use std::time::Duration;

use crate::cli::{ConnArgs, Switch};
use crate::engine::conn::Dialing;
use crate::engine::tls::{Tls, TlsOptions};
use crate::error::{Error, Result};
use crate::options::{server_choice, ServerChoice};
use crate::result::LinkSpec;
use crate::stats::recovery::{FaultKind, FaultSpec};
use crate::values::parse_duration;

/// The connection settings of a run: how the engine dials and keeps connections, plus the
/// fault to inject and the link to run over, which act on the target rather than on a
/// connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnOptions {
    pub dial: Dialing,
    pub fault: Option<FaultSpec>,
    /// The impaired link to run over, if any.
    pub link: Option<LinkSpec>,
}

impl ConnOptions {
    /// # Errors
    /// [`Error::Usage`] naming the flag whose value cannot work.
    pub fn new(conn: &ConnArgs) -> Result<Self> {
        let fault = conn
            .fault
            .as_deref()
            .map(|f| parse_fault(f).map_err(|why| Error::flag("--fault", f, why)))
            .transpose()?;
        if fault.is_some() && !matches!(server_choice(conn)?, ServerChoice::Embedded { .. }) {
            return Err(Error::Usage(
                "--fault acts on the server msgbench starts itself; it cannot be combined with \
                 --server or NATS_URL"
                    .into(),
            ));
        }
        if conn.reconnect_jitter.is_some() && !conn.reconnect {
            return Err(Error::Usage(
                "--reconnect-jitter shapes the pauses of --reconnect; give --reconnect too".into(),
            ));
        }
        if conn.ping_interval.is_zero() {
            return Err(Error::flag("--ping-interval", "0", "must be more than 0"));
        }
        let link = conn
            .link
            .as_deref()
            .map(|l| LinkSpec::parse(l).map_err(|why| Error::flag("--link", l, why)))
            .transpose()?;
        // A context's TLS files count when no flag names them.
        let [ctx_ca, ctx_cert, ctx_key] = crate::options::auth::sources(conn)?.tls_files;
        let wanted = TlsOptions {
            ca: conn.tls_ca.clone().or(ctx_ca),
            cert: conn.tls_cert.clone().or(ctx_cert),
            key: conn.tls_key.clone().or(ctx_key),
            insecure: conn.tls_insecure,
            first: conn.tls_first,
        };
        let tls = if wanted.wanted() {
            if wanted.insecure {
                static WARNED: std::sync::Once = std::sync::Once::new();
                WARNED.call_once(|| {
                    eprintln!("warning: --tls-insecure: the server's certificate is not verified");
                });
            }
            // Shared by every connection for the rest of the process.
            Some(
                Tls::shared(wanted)
                    .map_err(|(flag, value, why)| Error::flag(&flag, &value, why))?,
            )
        } else {
            None
        };
        Ok(Self {
            dial: Dialing {
                connect_timeout: conn.connect_timeout,
                reconnect: conn.reconnect,
                jitter: conn.reconnect_jitter != Some(Switch::Off),
                ping_interval: conn.ping_interval,
                tls,
            },
            fault,
            link,
        })
    }

    /// Rejects `--fault` for commands that cannot measure one.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the command.
    pub fn no_fault(&self, command: &str) -> Result<()> {
        match self.fault {
            Some(_) => Err(Error::Usage(format!(
                "--fault is not available for `{command}`"
            ))),
            None => Ok(()),
        }
    }

    /// The parameters as they go into a result.
    pub fn params(&self) -> ConnParams {
        ConnParams {
            reconnect: self.dial.reconnect,
            ping_interval_secs: self.dial.ping_interval.as_secs_f64(),
            fault: self.fault,
            link: self.link,
            tls: self.dial.tls.map(|t| TlsParams {
                ca: t.options.ca.is_some(),
                client_cert: t.options.cert.is_some(),
                insecure: t.options.insecure,
                first: t.options.first,
            }),
        }
    }
}

/// How the clients connected, as a result records it (no secrets).
#[derive(Debug, Clone, serde::Serialize)]
pub struct ConnParams {
    pub reconnect: bool,
    pub ping_interval_secs: f64,
    pub fault: Option<FaultSpec>,
    pub link: Option<crate::result::LinkSpec>,
    pub tls: Option<TlsParams>,
}

/// Which TLS settings were given (never their files' contents).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct TlsParams {
    pub ca: bool,
    pub client_cert: bool,
    pub insecure: bool,
    pub first: bool,
}

/// `--fault KIND@AT[:HOLD]`: `kill@5s`, `restart@5s`, `restart@5s:1s`, `pause@3s:200ms`.
///
/// # Errors
/// Why the text is not a fault.
pub fn parse_fault(s: &str) -> std::result::Result<FaultSpec, String> {
    let (kind, rest) = s
        .split_once('@')
        .ok_or("expected KIND@TIME, such as kill@5s, restart@5s or pause@3s:200ms")?;
    let kind = match kind.trim() {
        "kill" => FaultKind::Kill,
        "restart" => FaultKind::Restart,
        "pause" => FaultKind::Pause,
        other => return Err(format!("unknown fault '{other}' (kill, restart or pause)")),
    };
    let (at, hold) = match rest.split_once(':') {
        Some((at, hold)) => (at, Some(hold)),
        None => (rest, None),
    };
    let at = if matches!(at.trim(), "0" | "0s") {
        Duration::ZERO
    } else {
        parse_duration(at)?
    };
    let hold = hold.map(parse_duration).transpose()?;
    let hold = match (kind, hold) {
        (FaultKind::Kill, Some(_)) => {
            return Err("kill takes no duration: the server stays down".into())
        }
        (FaultKind::Pause, None) => {
            return Err("pause needs a duration, such as pause@3s:200ms".into())
        }
        (_, h) => h.unwrap_or(Duration::ZERO),
    };
    Ok(FaultSpec { kind, at, hold })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_faults() {
        let ms = Duration::from_millis;
        assert_eq!(
            parse_fault("kill@5s").unwrap(),
            FaultSpec {
                kind: FaultKind::Kill,
                at: ms(5000),
                hold: ms(0)
            }
        );
        assert_eq!(
            parse_fault("restart@1500ms:250ms").unwrap(),
            FaultSpec {
                kind: FaultKind::Restart,
                at: ms(1500),
                hold: ms(250)
            }
        );
        assert_eq!(
            parse_fault("pause@3s:200ms").unwrap(),
            FaultSpec {
                kind: FaultKind::Pause,
                at: ms(3000),
                hold: ms(200)
            }
        );
        for bad in [
            "kill",
            "boom@1s",
            "kill@1s:1s",
            "pause@1s",
            "pause@x:1s",
            "restart@-1s",
            "",
        ] {
            assert!(parse_fault(bad).is_err(), "{bad}");
        }
    }
}
