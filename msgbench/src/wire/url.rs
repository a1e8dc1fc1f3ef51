//! Server URLs: parsing `nats://user:pass@host:port,…` lists and printing them without secrets.
//!
//! Credentials found in a URL are moved into [`Auth`] and never printed: `Display` on a
//! [`ServerUrl`] shows only scheme, host and port, so logs, text output and result files cannot
//! leak them by accident.

use std::fmt;

/// How the client proves who it is. The handshake takes this value, not loose strings.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum Auth {
    #[default]
    None,
    UserPass {
        user: String,
        pass: String,
    },
    Token(String),
    /// An NKey: the server's nonce is signed with the seed; the public key names the user.
    NKey {
        public: String,
        seed: String,
    },
    /// A credentials file: the user JWT, and the seed that signs the nonce.
    Creds {
        jwt: String,
        seed: String,
    },
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Debug output can end up in logs and panics; keep secrets out of it as well.
        match self {
            Auth::None => f.write_str("None"),
            Auth::UserPass { user, .. } => write!(f, "UserPass({user}, ***)"),
            Auth::Token(_) => f.write_str("Token(***)"),
            Auth::NKey { public, .. } => write!(f, "NKey({public}, ***)"),
            Auth::Creds { .. } => f.write_str("Creds(***)"),
        }
    }
}

impl Auth {
    /// A short description safe to print: the method, never the secret.
    pub fn method(&self) -> &'static str {
        match self {
            Auth::None => "none",
            Auth::UserPass { .. } => "user_password",
            Auth::Token(_) => "token",
            Auth::NKey { .. } => "nkey",
            Auth::Creds { .. } => "creds",
        }
    }
}

/// One server to connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerUrl {
    pub host: String,
    pub port: u16,
    pub auth: Auth,
    /// `tls://`: the connection must be encrypted, whatever the server's INFO says.
    pub tls: bool,
    /// The name the server's certificate must carry, when it is not `host` (a link proxy in
    /// between listens on 127.0.0.1 for a server with another name).
    pub tls_name: Option<String>,
}

impl ServerUrl {
    /// The name to verify the server's certificate against.
    pub fn tls_name(&self) -> &str {
        self.tls_name.as_deref().unwrap_or(&self.host)
    }

    /// `host:port` for connecting, with IPv6 literals bracketed.
    pub fn host_port(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for ServerUrl {
    /// The URL with any credentials removed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "tls" } else { "nats" };
        write!(f, "{scheme}://{}", self.host_port())
    }
}

pub const DEFAULT_PORT: u16 = 4222;

/// Parses a comma-separated list of server URLs. Entries may omit the scheme (`host:port`) and
/// the port (4222).
pub fn parse_servers(list: &str) -> Result<Vec<ServerUrl>, String> {
    let mut out = Vec::new();
    for entry in list.split(',').map(str::trim) {
        if entry.is_empty() {
            return Err("empty entry in the server list".into());
        }
        out.push(parse_one(entry)?);
    }
    Ok(out)
}

fn parse_one(entry: &str) -> Result<ServerUrl, String> {
    // The same rule as `redact`, so that what is taken for the userinfo here is what an error
    // message hides.
    let with_scheme = if scheme_len(entry).is_some() {
        entry.to_string()
    } else {
        format!("nats://{entry}")
    };
    let url = url::Url::parse(&with_scheme).map_err(|e| format!("'{}': {e}", redact(entry)))?;
    let tls = match url.scheme() {
        "nats" => false,
        "tls" => true,
        other => {
            return Err(format!(
                "'{}': unsupported scheme '{other}' (use nats:// or tls://)",
                redact(entry)
            ))
        }
    };
    if url.path() != "" && url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(format!(
            "'{}': a server URL has no path, query or fragment",
            redact(entry)
        ));
    }
    let host = match url.host() {
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        Some(h) => h.to_string(),
        None => return Err(format!("'{}': no host", redact(entry))),
    };
    let port = url.port().unwrap_or(DEFAULT_PORT);
    if port == 0 {
        return Err(format!("'{}': port 0 is not a server port", redact(entry)));
    }
    let decode = |s: &str| {
        percent_decode(s).ok_or_else(|| format!("'{}': bad percent-encoding", redact(entry)))
    };
    let auth = match (url.username(), url.password()) {
        ("", None) => Auth::None,
        (user, Some(pass)) => Auth::UserPass {
            user: decode(user)?,
            pass: decode(pass)?,
        },
        // The url crate reads `u:@h` as `u@h`, but the ':' says this is a user with an empty
        // password, not a token; the Go client reads it that way too.
        (user, None) if userinfo_has_colon(&with_scheme) => Auth::UserPass {
            user: decode(user)?,
            pass: String::new(),
        },
        // A user part with no password is a token, as in every NATS client.
        (token, None) => Auth::Token(decode(token)?),
    };
    Ok(ServerUrl {
        host,
        port,
        auth,
        tls,
        tls_name: None,
    })
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            // `from_str_radix` alone would also take a sign, as in `%+4`.
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Whether the userinfo of `url` (which starts with a scheme) has a ':', found as the url crate
/// finds it: up to the last '@' before the authority ends. Tabs and newlines, which that parser
/// drops, change neither.
fn userinfo_has_colon(url: &str) -> bool {
    let rest = &url[scheme_len(url).unwrap_or(0)..];
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority
        .rfind('@')
        .is_some_and(|at| authority[..at].contains(':'))
}

/// Length of a leading `scheme://` (an ASCII letter, then letters, digits, `+`, `-` or `.`).
///
/// Only a scheme at the very start counts: `u:pass@h/x://y` has none, and its `u:pass` is
/// userinfo.
fn scheme_len(entry: &str) -> Option<usize> {
    let b = entry.as_bytes();
    if !b.first()?.is_ascii_alphabetic() {
        return None;
    }
    let end = b
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.')))?;
    entry[end..].starts_with("://").then_some(end + 3)
}

/// Removes a `userinfo@` part from a URL-ish string so it can be quoted in an error.
///
/// Without a scheme at the start everything up to the last '@' is hidden, even past a '/': more
/// than the userinfo at times, never less.
pub fn redact(entry: &str) -> String {
    let (scheme, rest) = entry.split_at(scheme_len(entry).unwrap_or(0));
    match rest.rfind('@') {
        Some(at) => format!("{scheme}***@{}", &rest[at + 1..]),
        None => entry.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_defaults_and_credentials() {
        let v = parse_servers(
            "nats://127.0.0.1:4333, localhost,nats://u:p%40ss@h:1,tok@[::1]:5,nats://[::1]",
        )
        .unwrap();
        assert_eq!(v.len(), 5);
        assert_eq!(v[0].host_port(), "127.0.0.1:4333");
        assert_eq!(v[1].port, DEFAULT_PORT);
        assert_eq!(
            v[2].auth,
            Auth::UserPass {
                user: "u".into(),
                pass: "p@ss".into()
            }
        );
        assert_eq!(v[3].auth, Auth::Token("tok".into()));
        assert_eq!(v[3].host_port(), "[::1]:5");
        assert_eq!(v[4].to_string(), "nats://[::1]:4222");
    }

    #[test]
    fn display_and_debug_never_show_secrets() {
        let v = parse_servers("nats://alice:s3cret@h:1,t0ken@h:2").unwrap();
        for s in &v {
            let shown = format!("{s} {s:?}");
            assert!(
                !shown.contains("s3cret") && !shown.contains("t0ken"),
                "{shown}"
            );
        }
        assert_eq!(redact("nats://alice:s3cret@h:1"), "nats://***@h:1");
    }

    #[test]
    fn tls_urls_ask_for_tls_and_say_so() {
        let u = &parse_servers("tls://u:p@h:4443").unwrap()[0];
        assert!(u.tls);
        assert_eq!(u.to_string(), "tls://h:4443");
        assert!(!parse_servers("nats://h").unwrap()[0].tls);
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "nats://",
            "nats://h:99999",
            "http://h:1",
            "tcp://h:1",
            "nats://h:1/path",
            "nats://h:0",
            "a,,b",
            "nats://u:p@:1",
        ] {
            assert!(parse_servers(bad).is_err(), "{bad}");
        }
        let err = parse_servers("nats://u:secret@h:1/x").unwrap_err();
        assert!(!err.contains("secret"), "{err}");
    }

    #[test]
    fn percent_escapes_take_exactly_two_hex_digits() {
        assert_eq!(percent_decode("a%41%2f%2F"), Some("aA//".into()));
        for bad in ["%+4", "%-1", "%4", "%", "%g0", "%4g", "% 4", "%+41"] {
            assert_eq!(percent_decode(bad), None, "{bad}");
        }
        let err = parse_servers("nats://u:%+41@h").unwrap_err();
        assert!(err.contains("percent-encoding"), "{err}");
    }

    #[test]
    fn a_scheme_only_counts_at_the_start() {
        assert_eq!(redact("u:pass@h/x://y"), "***@h/x://y");
        assert_eq!(redact("tok@h:1/a://b"), "***@h:1/a://b");
        assert_eq!(redact("a+b-c.d://u:p@h"), "a+b-c.d://***@h");
        assert_eq!(redact("1a://u:p@h"), "***@h");
        assert_eq!(redact("h:1"), "h:1");
        // Taken without a scheme, the entry has a path, so it is refused, quoted through
        // `redact`.
        for bad in ["u:pass@h/x://y", "u:pass@h:1/nats://y", " 1a://u:pass@h"] {
            let err = parse_servers(bad).unwrap_err();
            assert!(!err.contains("pass"), "{bad}: {err}");
        }
    }

    #[test]
    fn an_empty_password_is_still_a_password() {
        let v = parse_servers("nats://u:@h,u:@h:2,u@h,nats://:@h,nats://u:\t@h").unwrap();
        let user_u = Auth::UserPass {
            user: "u".into(),
            pass: String::new(),
        };
        assert_eq!(v[0].auth, user_u);
        assert_eq!(v[1].auth, user_u);
        assert_eq!(v[2].auth, Auth::Token("u".into()));
        // Neither a user nor a password: nothing to send.
        assert_eq!(v[3].auth, Auth::None);
        // The URL parser drops tabs and newlines, so this password is empty as well.
        assert_eq!(v[4].auth, user_u);
    }
}
