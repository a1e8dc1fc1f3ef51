//! A plan: one run described as data. It holds the scenario and its typed parameters, the
//! target (server URLs, or the embedded server, `--cluster`, `--link`), the connection
//! settings and the stop condition; never where results go, and never a secret (credentials
//! stay references: `--creds`/`--nkey` files, `--context`, `NATS_PASSWORD`).
//!
//! `msgbench <scenario> … --print-plan` writes one; `msgbench run PLAN.json [output flags]`
//! runs it. A plan's keys are the scenario's flags (nested by flag group), so reading one back
//! goes through the command line's own parsers and checks: a plan is valid exactly when the
//! command it spells is, and a bad value is reported with the flag's name. Validation lives in
//! one place, whichever way a run was asked for.

use std::ffi::OsString;
use std::path::Path;

use clap::Parser;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::cli::{
    Cli, Command, CompareScenario, ConnArgs, ConnsArgs, JsCommand, JsConsumeArgs, JsPubArgs,
    KvArgs, KvCommand, LatencyArgs, OutputArgs, PubArgs, PubSubArgs, ReplyArgs, RequestArgs,
    SubArgs,
};
use crate::error::{Error, Result};
use crate::wire::url::{parse_servers, Auth};

mod validated;

pub use validated::Validated;

/// The schema name a plan document carries.
pub const SCHEMA: &str = "msgbench.plan/v1";

/// One run of one scenario. The variants are the scenarios that run load; their names are the
/// result's `scenario` names.
#[derive(Debug, Serialize)]
#[serde(tag = "scenario")]
pub enum Plan {
    #[serde(rename = "pub")]
    Pub(PubArgs),
    #[serde(rename = "sub")]
    Sub(SubArgs),
    #[serde(rename = "pubsub")]
    Pubsub(PubSubArgs),
    #[serde(rename = "latency")]
    Latency(LatencyArgs),
    #[serde(rename = "request")]
    Request(RequestArgs),
    #[serde(rename = "reply")]
    Reply(ReplyArgs),
    #[serde(rename = "conns")]
    Conns(ConnsArgs),
    #[serde(rename = "js.pub")]
    JsPub(JsPubArgs),
    #[serde(rename = "js.consume")]
    JsConsume(JsConsumeArgs),
    #[serde(rename = "kv.put")]
    KvPut(KvArgs),
    #[serde(rename = "kv.get")]
    KvGet(KvArgs),
    #[serde(rename = "grpc")]
    Grpc(crate::cli::GrpcArgs),
}

/// The document form: the schema beside the plan.
#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    #[serde(flatten)]
    plan: &'a Plan,
}

impl Plan {
    /// The plan a typed command runs, or the command back when it is not a run of one
    /// scenario (compare, report, diff, demo, …).
    #[allow(clippy::result_large_err)] // `Err` hands the command back; it is no error
    pub fn from_command(cmd: Command) -> std::result::Result<Self, Command> {
        use crate::cli::GrpcCommand;
        Ok(match cmd {
            Command::Pub(a) => Plan::Pub(a),
            Command::Sub(a) => Plan::Sub(a),
            Command::Pubsub(a) => Plan::Pubsub(a),
            Command::Latency(a) => Plan::Latency(a),
            Command::Request(a) => Plan::Request(a),
            Command::Reply(a) => Plan::Reply(a),
            Command::Conns(a) => Plan::Conns(a),
            Command::Js(JsCommand::Pub(a)) => Plan::JsPub(a),
            Command::Js(JsCommand::Consume(a)) => Plan::JsConsume(a),
            Command::Kv(KvCommand::Put(a)) => Plan::KvPut(a),
            Command::Kv(KvCommand::Get(a)) => Plan::KvGet(a),
            Command::Grpc(GrpcCommand { action: None, run }) => Plan::Grpc(run),
            other => return Err(other),
        })
    }

    /// The plan each client of `compare` runs.
    pub fn from_compare(s: CompareScenario) -> Self {
        match s {
            CompareScenario::Pubsub(a) => Plan::Pubsub(a),
            CompareScenario::Latency(a) => Plan::Latency(a),
            CompareScenario::Request(a) => Plan::Request(a),
            CompareScenario::JsPub(a) => Plan::JsPub(a),
        }
    }

    /// The scenario's name, as results and plans spell it.
    pub fn name(&self) -> &'static str {
        match self {
            Plan::Pub(_) => "pub",
            Plan::Sub(_) => "sub",
            Plan::Pubsub(_) => "pubsub",
            Plan::Latency(_) => "latency",
            Plan::Request(_) => "request",
            Plan::Reply(_) => "reply",
            Plan::Conns(_) => "conns",
            Plan::JsPub(_) => "js.pub",
            Plan::JsConsume(_) => "js.consume",
            Plan::KvPut(_) => "kv.put",
            Plan::KvGet(_) => "kv.get",
            Plan::Grpc(_) => "grpc",
        }
    }

    /// Where results go: given with the command, never part of the plan itself.
    pub fn out(&self) -> &OutputArgs {
        match self {
            Plan::Pub(a) => &a.out,
            Plan::Sub(a) => &a.out,
            Plan::Pubsub(a) => &a.out,
            Plan::Latency(a) => &a.out,
            Plan::Request(a) => &a.out,
            Plan::Reply(a) => &a.out,
            Plan::Conns(a) => &a.out,
            Plan::JsPub(a) => &a.out,
            Plan::JsConsume(a) => &a.out,
            Plan::KvPut(a) | Plan::KvGet(a) => &a.out,
            Plan::Grpc(a) => &a.out,
        }
    }

    pub fn out_mut(&mut self) -> &mut OutputArgs {
        match self {
            Plan::Pub(a) => &mut a.out,
            Plan::Sub(a) => &mut a.out,
            Plan::Pubsub(a) => &mut a.out,
            Plan::Latency(a) => &mut a.out,
            Plan::Request(a) => &mut a.out,
            Plan::Reply(a) => &mut a.out,
            Plan::Conns(a) => &mut a.out,
            Plan::JsPub(a) => &mut a.out,
            Plan::JsConsume(a) => &mut a.out,
            Plan::KvPut(a) | Plan::KvGet(a) => &mut a.out,
            Plan::Grpc(a) => &mut a.out,
        }
    }

    /// The NATS connection flags (none for gRPC, whose target is a URL of its own).
    pub fn conn(&self) -> Option<&ConnArgs> {
        match self {
            Plan::Pub(a) => Some(&a.conn),
            Plan::Sub(a) => Some(&a.conn),
            Plan::Pubsub(a) => Some(&a.conn),
            Plan::Latency(a) => Some(&a.conn),
            Plan::Request(a) => Some(&a.conn),
            Plan::Reply(a) => Some(&a.conn),
            Plan::Conns(a) => Some(&a.conn),
            Plan::JsPub(a) => Some(&a.conn),
            Plan::JsConsume(a) => Some(&a.conn),
            Plan::KvPut(a) | Plan::KvGet(a) => Some(&a.conn),
            Plan::Grpc(_) => None,
        }
    }

    /// Checks the plan and builds its scenario's options.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the flag whose value cannot work.
    pub fn validate(&self) -> Result<Validated> {
        let v = self.validate_scenario()?;
        if let Some(sc) = v.schedule() {
            // Agents split one fixed rate between them.
            if self.out().distributed() {
                return Err(Error::Usage(format!(
                    "--rate-schedule '{sc}' runs on one host; runs on --agents take a fixed --rate"
                )));
            }
        }
        Ok(v)
    }

    fn validate_scenario(&self) -> Result<Validated> {
        use crate::options::{self as o, ScenarioKind};
        Ok(match self {
            Plan::Pub(a) => Validated::Load(o::Options::new(
                ScenarioKind::Pub,
                a.clients,
                0,
                &a.load,
                &a.conn,
                &a.out,
                None,
                None,
            )?),
            Plan::Sub(a) => Validated::Load(o::Options::new(
                ScenarioKind::Sub,
                0,
                a.clients,
                &a.load,
                &a.conn,
                &a.out,
                Some(&a.stall),
                Some(a.start_timeout),
            )?),
            Plan::Pubsub(a) => Validated::Load(o::Options::new(
                ScenarioKind::Pubsub,
                a.pubs,
                a.subs,
                &a.load,
                &a.conn,
                &a.out,
                Some(&a.stall),
                None,
            )?),
            Plan::Latency(a) => Validated::Latency(o::latency::LatencyOptions::new(a)?),
            Plan::Request(a) => Validated::Request(o::request::RequestOptions::new(a)?),
            Plan::Reply(a) => Validated::Reply(o::request::ReplyOptions::new(a)?),
            Plan::Conns(a) => Validated::Conns(o::conns::ConnsOptions::new(a)?),
            Plan::JsPub(a) => Validated::JsPub(o::js::JsPubOptions::new(a)?),
            Plan::JsConsume(a) => Validated::JsConsume(o::js::JsConsumeOptions::new(a)?),
            Plan::KvPut(a) => Validated::Kv(o::js::KvOptions::new(a, false)?),
            Plan::KvGet(a) => Validated::Kv(o::js::KvOptions::new(a, true)?),
            Plan::Grpc(a) => Validated::Grpc(o::grpc::GrpcOptions::new(a)?),
        })
    }

    pub fn conn_mut(&mut self) -> Option<&mut ConnArgs> {
        match self {
            Plan::Pub(a) => Some(&mut a.conn),
            Plan::Sub(a) => Some(&mut a.conn),
            Plan::Pubsub(a) => Some(&mut a.conn),
            Plan::Latency(a) => Some(&mut a.conn),
            Plan::Request(a) => Some(&mut a.conn),
            Plan::Reply(a) => Some(&mut a.conn),
            Plan::Conns(a) => Some(&mut a.conn),
            Plan::JsPub(a) => Some(&mut a.conn),
            Plan::JsConsume(a) => Some(&mut a.conn),
            Plan::KvPut(a) | Plan::KvGet(a) => Some(&mut a.conn),
            Plan::Grpc(_) => None,
        }
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
                .unwrap_or(false);
        });
        if carried {
            return Err(Error::Usage(
                "--print-plan: a plan holds credentials by reference only, and a server URL \
                 here carries a password or token: use --user with NATS_PASSWORD, --creds, \
                 --nkey or --context instead"
                    .into(),
            ));
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
        serde_json::to_value(Document {
            schema: SCHEMA,
            plan: self,
        })
        .expect("a plan serialises")
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
        let words: &[&str] = match scenario {
            "pub" => &["pub"],
            "sub" => &["sub"],
            "pubsub" => &["pubsub"],
            "latency" => &["latency"],
            "request" => &["request"],
            "reply" => &["reply"],
            "conns" => &["conns"],
            "js.pub" => &["js", "pub"],
            "js.consume" => &["js", "consume"],
            "kv.put" => &["kv", "put"],
            "kv.get" => &["kv", "get"],
            "grpc" => &["grpc"],
            other => {
                return Err(Error::Usage(format!(
                    "plan scenario '{other}' is not one msgbench runs"
                )))
            }
        };
        let mut argv: Vec<OsString> = vec!["msgbench".into()];
        argv.extend(words.iter().map(OsString::from));
        let mut rest = obj.clone();
        rest.remove("schema");
        rest.remove("scenario");
        // A value equal to its flag's default is left to the default, as if not typed: some
        // flags (--multisubject-max) may only be typed beside another.
        let mut cmd = <Cli as clap::CommandFactory>::command();
        for w in words {
            cmd = cmd
                .find_subcommand(w)
                .expect("every plan scenario is a subcommand")
                .clone();
        }
        let defaults: std::collections::HashMap<String, String> = cmd
            .get_arguments()
            .filter_map(|a| {
                let d = a.get_default_values().first()?.to_str()?.to_string();
                Some((a.get_long()?.to_string(), d))
            })
            .collect();
        flags(&rest, &defaults, &mut argv)?;
        let cli = Cli::try_parse_from(argv)
            .map_err(|e| Error::Usage(format!("plan: {}", crate::cli::one_line(&e))))?;
        let cmd = cli
            .command
            .ok_or_else(|| Error::Usage("the plan names no scenario".into()))?;
        Plan::from_command(cmd).map_err(|_| Error::Usage("the plan names no scenario".into()))
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
const URL_KEYS: [&str; 3] = ["server", "server_a", "server_b"];

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
