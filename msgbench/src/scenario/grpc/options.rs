//! Validated options of `msgbench grpc`: the target, the service definition's source, the
//! data, the load shape, metadata, deadlines and TLS. Every check that can fail before a
//! connection fails here, naming its flag.

use std::path::PathBuf;
use std::time::Duration;

use super::args::{GrpcArgs, GrpcSchemaArgs};
use crate::engine::pace::{Pace, Stop};
use crate::engine::tls::{Tls, TlsOptions};
use crate::error::{Error, Result};
use crate::options::check_rate;

/// Where the service is.
#[derive(Debug, Clone)]
pub enum GrpcTarget {
    /// A URL the user gave.
    Url {
        uri: tonic::transport::Uri,
        tls: bool,
    },
    /// msgbench's own log service, started in this process on a free loopback port.
    Embedded,
}

/// Where the method's definition comes from.
#[derive(Debug, Clone)]
pub enum SchemaSource {
    Proto {
        file: PathBuf,
        includes: Vec<PathBuf>,
    },
    /// Ask the server.
    Reflection,
    /// The log service's own definition (the embedded service, with no --proto).
    Builtin,
}

/// The `--data` text, as lines of JSON, and where they came from.
#[derive(Debug, Clone)]
pub struct DataSpec {
    pub lines: Vec<String>,
    pub origin: String,
}

/// The default message when loading the log service without --data: K streams, 128 bytes.
pub const DEFAULT_LOG_DATA: &str = r#"{"stream":"msgbench-{{stream}}","data":"{{bytes 128}}"}"#;

/// The default method: a unary append to the log service.
pub const DEFAULT_CALL: &str = "msgbench.log.v1.Log/Append";

#[derive(Debug, Clone)]
pub struct GrpcOptions {
    pub target: GrpcTarget,
    pub schema: SchemaSource,
    pub call: String,
    pub data: DataSpec,
    pub streams: u64,
    pub clients: u32,
    pub connections: u32,
    pub stop: Stop,
    pub pace: Pace,
    pub in_flight: usize,
    pub messages_per_call: Option<u64>,
    pub headers: Vec<(String, String)>,
    pub deadline: Option<Duration>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub tls: Option<&'static Tls>,
    pub tls_server_name: Option<String>,
    pub allow_loss: bool,
}

impl GrpcOptions {
    /// # Errors
    /// [`Error::Usage`] naming the flag whose value cannot work.
    pub fn new(a: &GrpcArgs) -> Result<Self> {
        let target = match &a.server {
            None => GrpcTarget::Embedded,
            Some(s) => parse_target(
                s,
                a.tls_ca.is_some() || a.tls_cert.is_some() || a.tls_insecure,
            )
            // The URL may carry `user:password@`: quoted without it.
            .map_err(|why| Error::flag("--server", &crate::wire::url::redact(s), why))?,
        };
        let tls_wanted = matches!(target, GrpcTarget::Url { tls: true, .. });
        if a.insecure && tls_wanted {
            return Err(Error::Usage(
                "--insecure asks for plaintext (as in ghz), but the target is TLS: give \
                 --server http://HOST:PORT, or use --tls-insecure to skip certificate checks"
                    .into(),
            ));
        }
        if !tls_wanted
            && (a.tls_ca.is_some()
                || a.tls_cert.is_some()
                || a.tls_insecure
                || a.tls_server_name.is_some())
        {
            return Err(Error::Usage(
                "--tls-* flags need a server reached over TLS: give --server https://HOST:PORT"
                    .into(),
            ));
        }
        let tls = if tls_wanted {
            if a.tls_insecure {
                eprintln!("warning: --tls-insecure: the server's certificate is not verified");
            }
            let tls = Tls::shared(TlsOptions {
                ca: a.tls_ca.clone(),
                cert: a.tls_cert.clone(),
                key: a.tls_key.clone(),
                insecure: a.tls_insecure,
                first: false,
            })
            .map_err(|(flag, value, why)| Error::flag(&flag, &value, why))?;
            Some(tls)
        } else {
            None
        };
        let schema = schema_source(&a.schema, matches!(target, GrpcTarget::Embedded));
        let call = a.call.clone().unwrap_or_else(|| DEFAULT_CALL.to_string());
        crate::engine::grpc::schema::split_call(&call)
            .map_err(|why| Error::flag("--call", &call, why))?;
        let data = data_spec(&a.schema, &call)?;
        check_rate(a.pace.rate)?;
        if a.in_flight == 0 {
            return Err(Error::flag("--in-flight", "0", "must be at least 1"));
        }
        if a.in_flight > 100_000 {
            return Err(Error::flag(
                "--in-flight",
                &a.in_flight.to_string(),
                "at most 100000 per client",
            ));
        }
        if a.schema.streams == 0 {
            return Err(Error::flag("--streams", "0", "must be at least 1"));
        }
        if a.messages_per_call == Some(0) {
            return Err(Error::flag(
                "--messages-per-call",
                "0",
                "must be at least 1",
            ));
        }
        let connections = a.connections.unwrap_or(a.clients);
        if connections > a.clients {
            return Err(Error::flag(
                "--connections",
                &connections.to_string(),
                format!("more connections than --clients ({})", a.clients),
            ));
        }
        crate::options::fixed_arrivals(&a.pace, "grpc")?;
        let (pace, schedule_stop) = crate::options::pace(&a.pace)?;
        let stop = match (a.pace.duration, a.total) {
            _ if schedule_stop.is_some() => schedule_stop.expect("just checked"),
            (_, Some(n)) if n == 0 || n % u64::from(a.clients) != 0 => {
                return Err(Error::flag(
                    "-n",
                    &n.to_string(),
                    format!(
                        "must be a positive multiple of --clients ({}): each client sends the same count",
                        a.clients
                    ),
                ))
            }
            (_, Some(n)) => Stop::Count(n / u64::from(a.clients)),
            (Some(d), _) if d.is_zero() => {
                return Err(Error::flag("--duration", "0", "must be more than 0"))
            }
            (Some(d), _) => Stop::For(d),
            (None, _) if a.requests == 0 => {
                return Err(Error::flag("--requests", "0", "must be at least 1"))
            }
            (None, _) => Stop::Count(a.requests),
        };
        if a.timeout.is_zero() {
            return Err(Error::flag("--timeout", "0", "must be more than 0"));
        }
        let headers = a
            .headers
            .iter()
            .map(|h| {
                // Metadata often carries a token: an error quotes the key only.
                let shown = h
                    .split_once(':')
                    .map_or("…".into(), |(k, _)| format!("{k}: …"));
                parse_metadata(h).map_err(|why| Error::flag("--header", &shown, why))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            target,
            schema,
            call,
            data,
            streams: a.schema.streams,
            clients: a.clients,
            connections,
            stop,
            pace,
            in_flight: a.in_flight as usize,
            messages_per_call: a.messages_per_call,
            headers,
            deadline: a.deadline,
            timeout: a.timeout,
            connect_timeout: a.connect_timeout,
            tls,
            tls_server_name: a.tls_server_name.clone(),
            allow_loss: a.allow_loss,
        })
    }

    /// The parameters a result records. The URL of the service msgbench serves itself, and the
    /// method's kind, are known only once the run has started it and read the definition: the
    /// run fills them in.
    pub fn params(&self) -> super::Params {
        let (requests, duration_secs) = self.stop.as_params();
        super::Params {
            url: match &self.target {
                GrpcTarget::Url { uri, .. } => Some(url_of(uri)),
                GrpcTarget::Embedded => None,
            },
            call: self.call.clone(),
            kind: None,
            clients: self.clients,
            connections: self.connections,
            requests,
            duration_secs,
            rate: self.pace.target_rate(),
            rate_schedule: self
                .pace
                .schedule()
                .filter(|s| !s.is_fixed())
                .map(ToString::to_string),
            in_flight: self.in_flight,
            messages_per_call: self.messages_per_call,
            streams: self.streams,
            data: self.data.lines.first().cloned().unwrap_or_default(),
            data_lines: self.data.lines.len(),
            headers: self.headers.iter().map(|(k, _)| k.clone()).collect(),
            deadline_secs: self.deadline.map(|d| d.as_secs_f64()),
            timeout_secs: self.timeout.as_secs_f64(),
            schema: self.schema.name(),
            tls: self.tls.map(|t| super::TlsParams {
                ca: t.options.ca.as_ref().map(|p| p.display().to_string()),
                client_cert: t.options.cert.is_some(),
                verify: !t.options.insecure,
            }),
        }
    }
}

/// A service's URL as results name it: `http://HOST:PORT`, without the URI's trailing slash.
pub fn url_of(uri: &tonic::transport::Uri) -> String {
    uri.to_string().trim_end_matches('/').to_string()
}

impl SchemaSource {
    /// How a result names the source: the .proto file, `reflection` or `builtin`.
    pub fn name(&self) -> String {
        match self {
            SchemaSource::Proto { file, .. } => file.display().to_string(),
            SchemaSource::Reflection => "reflection".into(),
            SchemaSource::Builtin => "builtin".into(),
        }
    }
}

/// `--proto` if given; otherwise the built-in definition for the embedded service, and
/// reflection for any other.
pub fn schema_source(a: &GrpcSchemaArgs, embedded: bool) -> SchemaSource {
    match &a.proto {
        Some(file) => SchemaSource::Proto {
            file: file.clone(),
            includes: a.import_path.clone(),
        },
        None if embedded => SchemaSource::Builtin,
        None => SchemaSource::Reflection,
    }
}

/// `--data` as lines: inline JSON, or `@FILE` of JSON lines (blank lines skipped). Without
/// it, the log service's methods get [`DEFAULT_LOG_DATA`] and any other method `{}`.
///
/// # Errors
/// An unreadable file, naming it.
pub fn data_spec(a: &GrpcSchemaArgs, call: &str) -> Result<DataSpec> {
    match a.data.as_deref() {
        None => {
            let log = call
                .trim_start_matches('/')
                .starts_with("msgbench.log.v1.Log");
            let read = call.ends_with("Read");
            let text = if log && read {
                r#"{"stream":"msgbench-{{stream}}","max":100}"#
            } else if log {
                DEFAULT_LOG_DATA
            } else {
                "{}"
            };
            Ok(DataSpec {
                lines: vec![text.to_string()],
                origin: "the default data".into(),
            })
        }
        Some(d) => match d.strip_prefix('@') {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| Error::flag("--data", d, format!("cannot read {path}: {e}")))?;
                let lines: Vec<String> = text
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_string)
                    .collect();
                if lines.is_empty() {
                    return Err(Error::flag("--data", d, "the file holds no JSON line"));
                }
                Ok(DataSpec {
                    lines,
                    origin: path.to_string(),
                })
            }
            None => Ok(DataSpec {
                lines: vec![d.to_string()],
                origin: "--data".into(),
            }),
        },
    }
}

/// `http://host:port`, `https://host:port`, or `host:port` (plaintext, unless a --tls-* flag
/// asks for TLS).
fn parse_target(s: &str, tls_flags: bool) -> std::result::Result<GrpcTarget, String> {
    let t = s.trim();
    let (tls, rest) = if let Some(r) = t.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = t.strip_prefix("http://") {
        (false, r)
    } else if t.contains("://") {
        return Err("use http://HOST:PORT or https://HOST:PORT".into());
    } else {
        (tls_flags, t)
    };
    let rest = rest.trim_end_matches('/');
    if rest.is_empty() || rest.contains('/') {
        return Err("expected HOST:PORT after the scheme".into());
    }
    let url = url::Url::parse(&format!("http://{rest}")).map_err(|e| e.to_string())?;
    // gRPC has no use for URL credentials; dropping them silently would run unauthenticated.
    if !url.username().is_empty() || url.password().is_some() {
        return Err("credentials in the URL are not sent over gRPC; \
                    pass them as metadata with --header 'authorization: …'"
            .into());
    }
    let host = url.host_str().ok_or("no host")?;
    let port = url.port().ok_or("no port: give HOST:PORT")?;
    let scheme = if tls { "https" } else { "http" };
    let uri = format!("{scheme}://{host}:{port}")
        .parse()
        .map_err(|e: tonic::codegen::http::uri::InvalidUri| e.to_string())?;
    Ok(GrpcTarget::Url { uri, tls })
}

/// `key: value` → lower-case key and value; `-bin` keys must hold base64.
fn parse_metadata(h: &str) -> std::result::Result<(String, String), String> {
    let (k, v) = h
        .split_once(':')
        .ok_or_else(|| "expected KEY: VALUE".to_string())?;
    let k = k.trim().to_ascii_lowercase();
    let v = v.trim().to_string();
    if k.is_empty() {
        return Err("the key is empty".into());
    }
    if k.starts_with("grpc-") || k.starts_with(':') {
        return Err(format!("'{k}' is reserved by gRPC"));
    }
    if k.ends_with("-bin") {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(&v)
            .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(&v))
            .map_err(|_| format!("'{k}' ends in -bin, so its value must be base64"))?;
        tonic::metadata::BinaryMetadataKey::from_bytes(k.as_bytes())
            .map_err(|_| format!("'{k}' is not a valid metadata key"))?;
    } else {
        tonic::metadata::AsciiMetadataKey::from_bytes(k.as_bytes())
            .map_err(|_| format!("'{k}' is not a valid metadata key"))?;
        tonic::metadata::AsciiMetadataValue::try_from(v.as_str())
            .map_err(|_| "the value must be printable ASCII".to_string())?;
    }
    Ok((k, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        let t = |s: &str, f: bool| match parse_target(s, f) {
            Ok(GrpcTarget::Url { uri, tls }) => Ok((uri.to_string(), tls)),
            Ok(GrpcTarget::Embedded) => unreachable!(),
            Err(e) => Err(e),
        };
        assert_eq!(
            t("http://127.0.0.1:5000", false),
            Ok(("http://127.0.0.1:5000/".into(), false))
        );
        assert_eq!(
            t("https://localhost:5000/", false),
            Ok(("https://localhost:5000/".into(), true))
        );
        assert_eq!(
            t("127.0.0.1:5000", false),
            Ok(("http://127.0.0.1:5000/".into(), false))
        );
        assert_eq!(
            t("127.0.0.1:5000", true),
            Ok(("https://127.0.0.1:5000/".into(), true))
        );
        assert_eq!(
            t("[::1]:5000", false),
            Ok(("http://[::1]:5000/".into(), false))
        );
        assert!(t("grpc://x:1", false).unwrap_err().contains("http://"));
        assert!(t("localhost", false).unwrap_err().contains("port"));
        assert!(t("http://x:1/path", false).is_err());
        let e = t("http://ann:s3cret@127.0.0.1:5000", false).unwrap_err();
        assert!(e.contains("--header") && !e.contains("s3cret"), "{e}");
    }

    #[test]
    fn metadata() {
        assert_eq!(
            parse_metadata("X-Tenant: blue").unwrap(),
            ("x-tenant".into(), "blue".into())
        );
        assert!(parse_metadata("novalue").is_err());
        assert!(parse_metadata("grpc-timeout: 1S")
            .unwrap_err()
            .contains("reserved"));
        assert!(parse_metadata("trace-bin: %%%")
            .unwrap_err()
            .contains("base64"));
        assert!(parse_metadata("trace-bin: AAEC").is_ok());
        assert!(parse_metadata("bad key: v").is_err());
    }
}
