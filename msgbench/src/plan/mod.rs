//! A plan: one run described as data. It holds the scenario and its typed parameters, the
//! target (server URLs, or the embedded server, `--cluster`, `--link`), the connection
//! settings and the stop condition; never where results go, and never a secret (credentials
//! stay references: `--creds`/`--nkey` files, `--context`, `NATS_PASSWORD`).
//!
//! `msgbench <scenario> … --print-plan` writes one; `msgbench run PLAN.json` runs it. A plan's
//! keys are the scenario's flags (nested by flag group), so reading one back goes through the
//! command line's own parsers and checks: a plan is valid exactly when the command it spells
//! is, and a bad value is reported with the flag's name. Validation lives in one place,
//! whichever way a run was asked for, and so does running ([`execute`]): every mode holds a
//! plan, none names a scenario.

use std::ffi::OsString;
use std::path::Path;

use serde_json::{Map, Value};

use crate::cli::{ConnArgs, OutputArgs, PaceArgs};
use crate::error::{Error, Result};
use crate::scenario::registry::{self, AnyArgs, Entry};
use crate::wire::url::{parse_servers, Auth};

mod execute;
pub mod workload;

pub use execute::{execute, Targets, Validated};

/// The schema name a plan document carries.
pub const SCHEMA: &str = "msgbench.plan/v1";

/// One run of one scenario as it was asked for: the scenario's flags as typed (or read from a
/// file), and beside them, never inside, where its results go. A plan document holds only
/// `args`; `out` comes with each command that runs it.
#[derive(Debug)]
pub struct Plan {
    args: Box<dyn AnyArgs>,
    out: Box<OutputArgs>,
}

impl Clone for Plan {
    fn clone(&self) -> Self {
        Self {
            args: self.args.clone_box(),
            out: self.out.clone(),
        }
    }
}

impl Plan {
    /// The plan of parsed flags, with where its results go.
    pub fn new(args: Box<dyn AnyArgs>, out: OutputArgs) -> Self {
        Self {
            args,
            out: Box::new(out),
        }
    }

    /// The plan a scenario's command line was parsed into: its flags and its output flags,
    /// from the same matches.
    ///
    /// # Errors
    /// What clap says of matches that do not fit (only a programming error can cause it).
    pub fn from_matches(
        entry: &'static dyn Entry,
        m: &clap::ArgMatches,
    ) -> std::result::Result<Self, clap::Error> {
        use clap::FromArgMatches as _;
        Ok(Self::new(entry.parse(m)?, OutputArgs::from_arg_matches(m)?))
    }

    /// The scenario's registry entry.
    pub fn entry(&self) -> &'static dyn Entry {
        self.args.entry()
    }

    /// The scenario's name, as results and plans spell it.
    pub fn name(&self) -> &'static str {
        self.entry().name()
    }

    /// Where results go: given with the command, never part of the plan document.
    pub fn out(&self) -> &OutputArgs {
        &self.out
    }

    pub fn out_mut(&mut self) -> &mut OutputArgs {
        &mut self.out
    }

    /// The NATS connection flags (none for gRPC, whose target is a URL of its own).
    pub fn conn(&self) -> Option<&ConnArgs> {
        self.args.conn()
    }

    pub fn conn_mut(&mut self) -> Option<&mut ConnArgs> {
        self.args.conn_mut()
    }

    /// The pace flags, for a scenario that sends on a schedule (how a capacity search sets
    /// each probe's rate).
    pub(crate) fn pace_mut(&mut self) -> Option<&mut PaceArgs> {
        self.args.pace_mut()
    }

    /// The scenario's own warm-up, when it has one (`latency --warmup`).
    pub(crate) fn warmup_mut(&mut self) -> Option<&mut std::time::Duration> {
        self.args.warmup_mut()
    }

    /// Files the run writes besides the result (`latency --hist`), with their flags.
    pub fn files(&self) -> Vec<(&'static str, std::path::PathBuf)> {
        self.args.files()
    }

    /// Checks the plan and builds its scenario's options.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the flag whose value cannot work.
    pub fn validate(&self) -> Result<Validated> {
        let v = Validated::new(self.name(), self.args.validate()?);
        v.gates("--threshold", &self.out().threshold)?;
        Ok(v)
    }

    /// The plan as a JSON document.
    ///
    /// # Errors
    /// [`Error::Usage`] when a server URL carries a password or token: a plan holds
    /// credentials by reference only, so it can be kept beside code and shown in results.
    pub fn to_json(&self) -> Result<Value> {
        let v = self.document();
        let mut carried = false;
        visit_urls(&v, &mut |urls| {
            carried |= parse_servers(urls)
                .map(|list| list.iter().any(|u| !matches!(u.auth, Auth::None)))
                .unwrap_or(false)
                || crate::engine::monitor::endpoint::carries_credentials(urls);
        });
        if carried {
            return Err(Error::Usage(
                "--print-plan: a plan holds credentials by reference only, and a server URL \
                 here carries a password or token: use --user with NATS_PASSWORD, --creds, \
                 --nkey or --context instead"
                    .into(),
            ));
        }
        let secret = (self.conn().into_iter().flat_map(|c| &c.server_config))
            .filter_map(|item| item.split_once('='))
            .find(|(key, _)| crate::options::server_config::is_secret(key));
        if let Some((key, _)) = secret {
            return Err(Error::Usage(format!(
                "--print-plan: a plan holds credentials by reference only, and --server-config \
                 {} sets a secret, which the plan would hold in clear",
                key.trim()
            )));
        }
        Ok(v)
    }

    /// The plan as a result records it: as [`Plan::to_json`], with any credentials in server
    /// URLs left out rather than refused (the run has already happened).
    pub fn recorded(&self) -> Value {
        let mut v = self.document();
        strip_credentials(&mut v);
        v
    }

    /// The plan as a document, credentials included (for a plan derived from it in this
    /// process, never for writing out).
    pub(crate) fn document(&self) -> Value {
        let mut v = self.args.to_value();
        let obj = v.as_object_mut().expect("a scenario's flags are an object");
        obj.insert("schema".into(), SCHEMA.into());
        obj.insert("scenario".into(), self.name().into());
        v
    }

    /// Reads a plan document back, through the command line's parsers and checks.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the key (as its flag) whose value is not accepted, an unknown
    /// scenario or schema, or a document that is not a plan.
    pub fn from_json(v: &Value) -> Result<Self> {
        let obj = v
            .as_object()
            .ok_or_else(|| Error::Usage("a plan is a JSON object".into()))?;
        match obj.get("schema").and_then(Value::as_str) {
            Some(SCHEMA) => {}
            Some(other) => {
                return Err(Error::Usage(format!(
                    "plan schema '{other}' is not one this msgbench reads ({SCHEMA})"
                )))
            }
            None => {
                return Err(Error::Usage(format!(
                    "a plan needs \"schema\": \"{SCHEMA}\""
                )))
            }
        }
        let scenario = obj
            .get("scenario")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::Usage("a plan needs a \"scenario\"".into()))?;
        let entry = registry::named(scenario).ok_or_else(|| {
            Error::Usage(format!(
                "plan scenario '{scenario}' is not one msgbench runs"
            ))
        })?;
        let cmd = entry.command();
        let mut argv: Vec<OsString> = vec![cmd.get_name().into()];
        let mut rest = obj.clone();
        rest.remove("schema");
        rest.remove("scenario");
        // A value equal to its flag's default is left to the default, as if not typed: some
        // flags (--multisubject-max) may only be typed beside another.
        let defaults: std::collections::HashMap<String, String> = cmd
            .get_arguments()
            .filter_map(|a| {
                let d = a.get_default_values().first()?.to_str()?.to_string();
                Some((a.get_long()?.to_string(), d))
            })
            .collect();
        flags(&rest, &defaults, &mut argv)?;
        let matches = cmd
            .try_get_matches_from(argv)
            .map_err(|e| Error::Usage(format!("plan: {}", crate::cli::one_line(&e))))?;
        Plan::from_matches(entry, &matches)
            .map_err(|e| Error::Usage(format!("plan: {}", crate::cli::one_line(&e))))
    }

    /// Reads a plan file.
    ///
    /// # Errors
    /// An unreadable file, JSON that does not parse, or a plan [`Plan::from_json`] refuses.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("cannot read plan '{}'", path.display()), e))?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| Error::Usage(format!("plan '{}' is not JSON: {e}", path.display())))?;
        Plan::from_json(&v)
    }
}

/// The keys that hold server URL lists.
const URL_KEYS: [&str; 4] = ["server", "server_a", "server_b", "server_monitor"];

/// Calls `f` with every server URL list in a plan document.
fn visit_urls(v: &Value, f: &mut impl FnMut(&str)) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                match child {
                    Value::String(s) if URL_KEYS.contains(&k.as_str()) => f(s),
                    _ => visit_urls(child, f),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|c| visit_urls(c, f)),
        _ => {}
    }
}

/// Removes `user:pass@` or `token@` from every server URL in a plan document.
fn strip_credentials(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                match child {
                    Value::String(s) if URL_KEYS.contains(&k.as_str()) => {
                        let clean: Vec<String> = s.split(',').map(without_userinfo).collect();
                        *s = clean.join(",");
                    }
                    // `--server-config authorization.password=…`: the key stays, the value
                    // does not.
                    Value::Array(items) if k == "server_config" => {
                        for item in items.iter_mut() {
                            if let Some((key, value)) =
                                item.as_str().and_then(|s| s.split_once('='))
                            {
                                let shown = crate::options::server_config::shown(key, value);
                                *item = Value::String(format!("{key}={shown}"));
                            }
                        }
                    }
                    _ => strip_credentials(child),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(strip_credentials),
        _ => {}
    }
}

fn without_userinfo(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").map_or(("", url), |(s, r)| (s, r));
    let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    if scheme.is_empty() {
        host.to_string()
    } else {
        format!("{scheme}://{host}")
    }
}

/// A plan's keys as flags: `"size": 16` is `--size=16`, `"reconnect": true` is `--reconnect`,
/// a list repeats its flag, and an object is a flag group whose keys are flags too.
fn flags(
    obj: &Map<String, Value>,
    defaults: &std::collections::HashMap<String, String>,
    argv: &mut Vec<OsString>,
) -> Result<()> {
    for (key, value) in obj {
        let long = key.replace('_', "-");
        let flag = format!("--{long}");
        match value {
            Value::Null | Value::Bool(false) => {}
            Value::Bool(true) => argv.push(flag.into()),
            Value::Object(group) => flags(group, defaults, argv)?,
            Value::Array(items) => {
                for item in items {
                    argv.push(format!("{flag}={}", scalar(key, item)?).into());
                }
            }
            other => {
                let text = scalar(key, other)?;
                if !is_default(defaults.get(&long), &text) {
                    argv.push(format!("{flag}={text}").into());
                }
            }
        }
    }
    Ok(())
}

/// Whether a plan's value is its flag's default: the same text, or the same number (a rate
/// written back as `1000.0` is the default `1000`, and must stay untyped: `--rate` may not be
/// typed beside `--rate-schedule`).
fn is_default(default: Option<&String>, text: &str) -> bool {
    match default {
        None => false,
        Some(d) if d == text => true,
        Some(d) => matches!(
            (d.parse::<f64>(), text.parse::<f64>()),
            (Ok(a), Ok(b)) if a == b
        ),
    }
}

fn scalar(key: &str, v: &Value) -> Result<String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(Error::Usage(format!(
            "plan key '{key}' must be a string, a number or a list of them"
        ))),
    }
}

#[cfg(test)]
mod tests;
