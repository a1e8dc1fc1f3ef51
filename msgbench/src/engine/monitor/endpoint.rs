//! A monitoring endpoint as the user names it (`--server-monitor https://user:pass@host:8222`):
//! where it is, whether it is TLS, and the credentials it is read with. The credentials live
//! only here: the endpoint shows itself ([`Endpoint::shown`], `Display`, `Debug`) without them,
//! so no output, error or log line can carry them by accident.
//!
//! The URL's user part is the credential, as in a NATS URL: `user:password@` is HTTP basic
//! authentication, a lone `token@` a bearer token (both percent-decoded). nats-server's own
//! monitoring port has no authentication of its own (only its TLS, which may ask for a client
//! certificate); the credentials are for what usually stands in front of it (a reverse proxy,
//! an ingress).

use std::fmt;

use base64::Engine as _;

/// How the endpoint is read.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    None,
    Basic { user: String, password: String },
    Bearer(String),
}

/// One server's monitoring endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    tls: bool,
    host: String,
    port: u16,
    /// The base path the server's endpoints are under (`http_base_path`), without a trailing
    /// slash: `/varz` is read at `{base}/varz`.
    base: String,
    credentials: Credentials,
}

impl Endpoint {
    /// Parses `http[s]://[user:pass@|token@]host[:port][/base]`.
    ///
    /// # Errors
    /// Why it is not such a URL, in words that never repeat the credentials.
    pub fn parse(text: &str) -> Result<Self, String> {
        if !text.contains("://") {
            return Err("give http:// or https:// before the host".into());
        }
        let url = url::Url::parse(text.trim()).map_err(|e| format!("not a URL ({e})"))?;
        let tls = match url.scheme() {
            "http" => false,
            "https" => true,
            other => {
                return Err(format!(
                    "'{other}://' is not a monitoring endpoint's scheme: give http:// or https://"
                ))
            }
        };
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or("no host in it")?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        if url.query().is_some() || url.fragment().is_some() {
            return Err("give the endpoint's address without a query or fragment".into());
        }
        let port = url.port_or_known_default().ok_or("no port in it")?;
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|c| c.into_owned())
                .map_err(|_| "its user part is not UTF-8 once decoded".to_string())
        };
        let credentials = match (url.username(), url.password()) {
            ("", None) => Credentials::None,
            (user, Some(password)) => Credentials::Basic {
                user: decode(user)?,
                password: decode(password)?,
            },
            (token, None) => Credentials::Bearer(decode(token)?),
        };
        Ok(Self {
            tls,
            host,
            port,
            base: url.path().trim_end_matches('/').to_string(),
            credentials,
        })
    }

    /// A server msgbench started: plain HTTP on the loopback address.
    pub fn loopback(port: u16) -> Self {
        Self {
            tls: false,
            host: "127.0.0.1".into(),
            port,
            base: String::new(),
            credentials: Credentials::None,
        }
    }

    pub fn tls(&self) -> bool {
        self.tls
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether it is read with credentials.
    pub fn has_credentials(&self) -> bool {
        self.credentials != Credentials::None
    }

    /// The request target for `path` (`/varz?x=1`).
    pub fn target(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The `Host` header's value.
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match (self.tls, self.port) {
            (false, 80) | (true, 443) => host,
            (_, p) => format!("{host}:{p}"),
        }
    }

    /// The `Authorization` header's value, if any.
    pub fn authorization(&self) -> Option<String> {
        match &self.credentials {
            Credentials::None => None,
            Credentials::Basic { user, password } => Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
            )),
            Credentials::Bearer(token) => Some(format!("Bearer {token}")),
        }
    }

    /// The endpoint as every output shows it: scheme, host, port and base path, never the
    /// credentials.
    pub fn shown(&self) -> String {
        format!(
            "{}://{}{}",
            if self.tls { "https" } else { "http" },
            self.authority(),
            self.base
        )
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown())
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Endpoint({}{})",
            self.shown(),
            if self.has_credentials() {
                ", with credentials"
            } else {
                ""
            }
        )
    }
}

/// Whether a monitoring URL carries credentials in its user part (what a plan may not hold).
pub fn carries_credentials(text: &str) -> bool {
    text.split(',')
        .any(|u| Endpoint::parse(u).is_ok_and(|e| e.has_credentials()))
}

/// `text` (a comma-separated list of URLs) with the user part of each left out: how a plan a
/// result records shows it.
pub fn without_credentials(text: &str) -> String {
    text.split(',')
        .map(|u| match (Endpoint::parse(u), url::Url::parse(u.trim())) {
            (Ok(e), _) => e.shown(),
            // Not an endpoint, but a URL: shown without its user part.
            (Err(_), Ok(mut url)) => {
                let _ = url.set_username("");
                let _ = url.set_password(None);
                url.to_string()
            }
            // Not a URL: its user part, if it seems to have one, is left out.
            (Err(_), Err(_)) => match u.trim().rsplit_once('@') {
                Some((_, host)) => format!("…@{host}"),
                None => u.trim().to_string(),
            },
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_authenticate_and_never_show() {
        let e = Endpoint::parse("https://ops:s%40cret@mon.example:8443/nats/").unwrap();
        assert_eq!(e.shown(), "https://mon.example:8443/nats");
        assert_eq!(e.target("/varz"), "/nats/varz");
        assert_eq!(
            e.authorization().unwrap(),
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode("ops:s@cret")
            )
        );
        for shown in [e.to_string(), format!("{e:?}")] {
            assert!(!shown.contains("cret") && !shown.contains("ops"), "{shown}");
        }
        let t = Endpoint::parse("http://tok-1@127.0.0.1:8222").unwrap();
        assert_eq!(t.authorization().as_deref(), Some("Bearer tok-1"));
        assert_eq!(t.shown(), "http://127.0.0.1:8222");
        assert!(carries_credentials("http://a:8222,http://tok@b:8222"));
        assert!(!carries_credentials("http://a:8222"));
        assert_eq!(
            without_credentials("http://a:8222, https://u:p@b"),
            "http://a:8222,https://b"
        );
    }

    #[test]
    fn only_http_and_https_urls_with_a_host_are_endpoints() {
        for (bad, why) in [
            ("ftp://x", "scheme"),
            ("nats://127.0.0.1:4222", "scheme"),
            ("127.0.0.1:8222", "http://"),
            ("http://127.0.0.1:8222/varz?x=1", "query"),
            ("http://", "not a URL"),
        ] {
            let e = Endpoint::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let e = Endpoint::parse("http://[::1]:8222").unwrap();
        assert_eq!((e.host(), e.port()), ("::1", 8222));
        assert_eq!(e.authority(), "[::1]:8222");
        assert_eq!(Endpoint::parse("https://h").unwrap().port(), 443);
    }
}
