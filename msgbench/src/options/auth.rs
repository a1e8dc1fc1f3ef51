//! Where credentials come from, besides a URL's own: `--user` with `NATS_PASSWORD`,
//! `NATS_TOKEN`, an NKey seed file (`--nkey`), a credentials file (`--creds`, the user JWT and
//! seed that `nsc` writes), and a NATS CLI context (`--context`). They are read and checked
//! before any connection is made, and never printed.
//!
//! Passwords and tokens are taken from the environment or from files only, never from a flag's
//! value, so they cannot show in the process list.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::cli::ConnArgs;
use crate::error::{Error, Result};
use crate::wire::url::Auth;

/// A NATS CLI context: the fields msgbench uses.
#[derive(Default, Deserialize)]
struct Context {
    #[serde(default)]
    url: String,
    #[serde(default)]
    user: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    token: String,
    #[serde(default)]
    creds: String,
    #[serde(default)]
    nkey: String,
    #[serde(default)]
    cert: String,
    #[serde(default)]
    key: String,
    #[serde(default)]
    ca: String,
}

impl std::fmt::Debug for Context {
    /// By hand, so that a context in a log or a panic message shows no password or token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secret = |s: &str| if s.is_empty() { "" } else { "<redacted>" };
        f.debug_struct("Context")
            .field("url", &crate::wire::url::redact(&self.url))
            .field("user", &self.user)
            .field("password", &secret(&self.password))
            .field("token", &secret(&self.token))
            .field("creds", &self.creds)
            .field("nkey", &self.nkey)
            .field("cert", &self.cert)
            .field("key", &self.key)
            .field("ca", &self.ca)
            .finish()
    }
}

/// What the connection flags, the environment and the context say about servers and
/// credentials: the server list to use when `--server`/`NATS_URL` gave none, and the
/// credentials for every server whose URL carries none.
#[derive(Debug, Default)]
pub struct Sources {
    pub url: Option<String>,
    pub auth: Auth,
    /// The context's TLS files: CA, client certificate, key.
    pub tls_files: [Option<PathBuf>; 3],
}

/// Reads them.
///
/// # Errors
/// [`Error::Usage`] naming the flag, variable or file that cannot be used.
pub fn sources(conn: &ConnArgs) -> Result<Sources> {
    sources_with(conn, &|k| std::env::var(k).ok())
}

/// [`sources`] with the environment passed in, for tests.
///
/// # Errors
/// As [`sources`].
pub fn sources_with(conn: &ConnArgs, env: &dyn Fn(&str) -> Option<String>) -> Result<Sources> {
    let env = |k: &str| env(k).filter(|v| !v.is_empty());
    let ctx = match &conn.context {
        Some(name) => load_context(name, &env)?,
        None => Context::default(),
    };
    let nonempty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    // Flags (with their environment variables) first, then the context.
    let user = conn.user.clone().or_else(|| nonempty(&ctx.user));
    let password = env("NATS_PASSWORD").or_else(|| nonempty(&ctx.password));
    let token = env("NATS_TOKEN").or_else(|| nonempty(&ctx.token));
    let nkey = conn
        .nkey
        .clone()
        .or_else(|| nonempty(&ctx.nkey).map(PathBuf::from));
    let creds = conn
        .creds
        .clone()
        .or_else(|| nonempty(&ctx.creds).map(PathBuf::from));
    let mut chosen: Vec<(&str, Auth)> = Vec::new();
    if let Some(user) = user {
        chosen.push((
            "--user",
            Auth::UserPass {
                user,
                pass: password.unwrap_or_default(),
            },
        ));
    } else if password.is_some() {
        return Err(Error::Usage(
            "NATS_PASSWORD is set but no user: give --user (or NATS_USER)".into(),
        ));
    }
    if let Some(t) = token {
        chosen.push(("NATS_TOKEN", Auth::Token(t)));
    }
    if let Some(path) = nkey {
        chosen.push(("--nkey", read_nkey(&path)?));
    }
    if let Some(path) = creds {
        chosen.push(("--creds", read_creds(&path)?));
    }
    let auth = match chosen.len() {
        0 => Auth::None,
        1 => chosen.pop().expect("one").1,
        _ => {
            let names: Vec<&str> = chosen.iter().map(|(n, _)| *n).collect();
            return Err(Error::Usage(format!(
                "more than one way to authenticate was given ({}); use one",
                names.join(", ")
            )));
        }
    };
    let path = |s: &str| nonempty(s).map(PathBuf::from);
    Ok(Sources {
        url: nonempty(&ctx.url),
        auth,
        tls_files: [path(&ctx.ca), path(&ctx.cert), path(&ctx.key)],
    })
}

/// The context file: `$XDG_CONFIG_HOME/nats/context/NAME.json`, else under `~/.config`.
fn load_context(name: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Context> {
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return Err(Error::flag("--context", name, "a context name, not a path"));
    }
    let base = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| Path::new(&h).join(".config")))
        .ok_or_else(|| Error::flag("--context", name, "neither XDG_CONFIG_HOME nor HOME is set"))?;
    let path = base
        .join("nats")
        .join("context")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).map_err(|e| {
        Error::flag(
            "--context",
            name,
            format!("cannot read {}: {e}", path.display()),
        )
    })?;
    parse_context(&text).map_err(|why| {
        Error::flag(
            "--context",
            name,
            format!("{} is not a NATS context: {why}", path.display()),
        )
    })
}

/// Parses a context file. serde's own message would quote a wrongly typed value (a password
/// written as a number, say), so the error names the field and the position only.
fn parse_context(text: &str) -> std::result::Result<Context, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let inner = e.inner();
        let at = format!("line {} column {}", inner.line(), inner.column());
        match inner.classify() {
            serde_json::error::Category::Data => {
                format!("field '{}' has the wrong type or value ({at})", e.path())
            }
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                format!("not valid JSON ({at})")
            }
            serde_json::error::Category::Io => format!("cannot be read ({at})"),
        }
    })
}

fn read_file(flag: &str, path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        Error::flag(
            flag,
            &path.display().to_string(),
            format!("cannot read it: {e}"),
        )
    })
}

/// An NKey seed file: the seed on a line of its own (comment lines and blank lines allowed).
fn read_nkey(path: &Path) -> Result<Auth> {
    let text = read_file("--nkey", path)?;
    let seed = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("SU"))
        .ok_or_else(|| {
            Error::flag(
                "--nkey",
                &path.display().to_string(),
                "holds no user seed (a line starting with SU)",
            )
        })?;
    nkey_auth("--nkey", path, seed, None)
}

/// A credentials file: a user JWT and the user's seed, each between BEGIN and END lines.
fn read_creds(path: &Path) -> Result<Auth> {
    let text = read_file("--creds", path)?;
    let bad = |why: &str| Error::flag("--creds", &path.display().to_string(), why);
    let after = |marker: &str| {
        let mut lines = text.lines().map(str::trim);
        lines.find(|l| l.contains(marker))?;
        lines.find(|l| !l.is_empty()).map(str::to_string)
    };
    let jwt = after("BEGIN NATS USER JWT").ok_or_else(|| bad("holds no user JWT"))?;
    if jwt.starts_with('-') || jwt.split('.').count() != 3 {
        return Err(bad("the user JWT is not a JWT"));
    }
    let seed = after("BEGIN USER NKEY SEED").ok_or_else(|| bad("holds no user seed"))?;
    nkey_auth("--creds", path, &seed, Some(jwt))
}

fn nkey_auth(flag: &str, path: &Path, seed: &str, jwt: Option<String>) -> Result<Auth> {
    let kp = nkeys::KeyPair::from_seed(seed).map_err(|e| {
        Error::flag(
            flag,
            &path.display().to_string(),
            format!("the seed is not valid: {e}"),
        )
    })?;
    Ok(match jwt {
        Some(jwt) => Auth::Creds {
            jwt,
            seed: seed.to_string(),
        },
        None => Auth::NKey {
            public: kp.public_key(),
            seed: seed.to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdir::TestDir;
    use clap::Parser;

    fn conn(args: &[&str]) -> ConnArgs {
        #[derive(Parser)]
        struct T {
            #[command(flatten)]
            c: ConnArgs,
        }
        let mut all = vec!["t"];
        all.extend_from_slice(args);
        T::try_parse_from(all).unwrap().c
    }

    /// A file holding `text` in a folder of its own, removed when the returned guard drops.
    fn scratch(name: &str, text: &str) -> (TestDir, PathBuf) {
        let dir = TestDir::new(&format!("auth-{name}"));
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    #[test]
    fn the_environment_gives_a_password_or_a_token_and_one_method_only() {
        let none = |_: &str| None;
        assert_eq!(sources_with(&conn(&[]), &none).unwrap().auth, Auth::None);
        let env = |k: &str| (k == "NATS_PASSWORD").then(|| "s3cret".to_string());
        let s = sources_with(&conn(&["--user", "alice"]), &env).unwrap();
        assert_eq!(
            s.auth,
            Auth::UserPass {
                user: "alice".into(),
                pass: "s3cret".into()
            }
        );
        let e = sources_with(&conn(&[]), &env).unwrap_err().to_string();
        assert!(e.contains("no user"), "{e}");
        let env = |k: &str| (k == "NATS_TOKEN").then(|| "tok".to_string());
        assert_eq!(
            sources_with(&conn(&[]), &env).unwrap().auth,
            Auth::Token("tok".into())
        );
        let e = sources_with(&conn(&["--user", "a"]), &env)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--user, NATS_TOKEN"), "{e}");
    }

    #[test]
    fn seed_and_credentials_files_are_read_and_checked() {
        let kp = nkeys::KeyPair::new_user();
        let seed = kp.seed().unwrap();
        let (_nk_dir, nk) = scratch("user.nk", &format!("# a seed\n\n{seed}\n"));
        let none = |_: &str| None;
        let s = sources_with(&conn(&["--nkey", nk.to_str().unwrap()]), &none).unwrap();
        assert_eq!(
            s.auth,
            Auth::NKey {
                public: kp.public_key(),
                seed: seed.clone()
            }
        );
        let (_creds_dir, creds) = scratch(
            "user.creds",
            &format!(
                "-----BEGIN NATS USER JWT-----\naaa.bbb.ccc\n------END NATS USER JWT------\n\n\
                 ************************* IMPORTANT *************************\n\n\
                 -----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n"
            ),
        );
        let s = sources_with(&conn(&["--creds", creds.to_str().unwrap()]), &none).unwrap();
        assert_eq!(
            s.auth,
            Auth::Creds {
                jwt: "aaa.bbb.ccc".into(),
                seed
            }
        );
        let (_bad_dir, bad) = scratch("bad.nk", "SUNOTASEED\n");
        let e = sources_with(&conn(&["--nkey", bad.to_str().unwrap()]), &none)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--nkey") && e.contains("not valid"), "{e}");
        // The error names the file, never the seed.
        assert!(!e.contains("SUNOTASEED"), "{e}");
        let e = sources_with(&conn(&["--creds", nk.to_str().unwrap()]), &none)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no user JWT"), "{e}");
    }

    #[test]
    fn a_context_never_shows_its_secrets() {
        let ctx = Context {
            url: "nats://ann:urlpass@h:1".into(),
            user: "ann".into(),
            password: "pa55word".into(),
            token: "t0ken".into(),
            ..Context::default()
        };
        let shown = format!("{ctx:?}");
        assert!(
            shown.contains("ann") && shown.contains("<redacted>"),
            "{shown}"
        );
        for secret in ["pa55word", "t0ken", "urlpass"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }

    #[test]
    fn a_context_parse_error_names_the_field_not_the_value() {
        let e = parse_context(r#"{"user":"ann","password":987654321}"#)
            .expect_err("a number is not a password");
        assert!(e.contains("'password'"), "{e}");
        assert!(!e.contains("987654321"), "{e}");
        let e = parse_context(r#"{"token":["s3cretlist"]}"#).unwrap_err();
        assert!(e.contains("'token'") && !e.contains("s3cretlist"), "{e}");
        let e = parse_context(r#"{"password":"x"#).unwrap_err();
        assert!(e.contains("not valid JSON"), "{e}");
    }

    #[test]
    fn a_context_supplies_the_url_and_credentials() {
        let scratch = TestDir::new("ctx");
        let dir = scratch.path();
        let ctx_dir = dir.join("nats").join("context");
        std::fs::create_dir_all(&ctx_dir).unwrap();
        std::fs::write(
            ctx_dir.join("dev.json"),
            r#"{"description":"x","url":"nats://127.0.0.1:4999","user":"bob","password":"pw"}"#,
        )
        .unwrap();
        std::fs::write(
            ctx_dir.join("tls.json"),
            r#"{"url":"tls://h:4222","ca":"/ca.pem"}"#,
        )
        .unwrap();
        let d = dir.to_str().unwrap().to_string();
        let env = move |k: &str| (k == "XDG_CONFIG_HOME").then(|| d.clone());
        let s = sources_with(&conn(&["--context", "dev"]), &env).unwrap();
        assert_eq!(s.url.as_deref(), Some("nats://127.0.0.1:4999"));
        assert_eq!(
            s.auth,
            Auth::UserPass {
                user: "bob".into(),
                pass: "pw".into()
            }
        );
        // A flag wins over the context.
        let s = sources_with(&conn(&["--context", "dev", "--user", "carol"]), &env).unwrap();
        assert!(matches!(s.auth, Auth::UserPass { user, .. } if user == "carol"));
        for (name, needle) in [("missing", "cannot read"), ("../x", "not a path")] {
            let e = sources_with(&conn(&["--context", name]), &env)
                .unwrap_err()
                .to_string();
            assert!(e.contains("--context") && e.contains(needle), "{name}: {e}");
        }
    }
}
