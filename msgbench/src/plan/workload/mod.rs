//! A workload: a mix of classes, each a plan of its own with a name and its SLOs, run together
//! from one start against one shared server (or cluster, or link), as a deployment carries its
//! traffic. `msgbench run mix.yaml` runs one; `--print-plan` writes it out in full as JSON,
//! which `msgbench run` reads back too.
//!
//! A class is written as the scenario's plan keys, flat (`rate: 5000`, `size: 1KiB`), beside
//! `scenario` and `slo`. Reading one builds that plan document and hands it to
//! [`Plan::from_json`], so a class is valid exactly when the command it spells is, and a bad
//! value is named by its flag and its class. What the classes share is the workload's: the
//! connection (`conn`, the plan's flag group: server, cluster, link, TLS, credentials) and,
//! for a class that names no stop of its own, the `duration`. A class that names a server of
//! its own is refused: its figures would not be of the mix.
//!
//! The file is YAML ([`yaml`]), the format load tools' workloads are written in, with
//! comments; the printed form is the same document as JSON.
//!
//! A paced class may carry the rate it had in each second of a capture (`curve`, [`curve`]):
//! a plain run sends at its `rate` (capture writes the curve's mean there); `--time-warp F`
//! replays the curve instead, each captured second lasting 1/F s, as the class's rate schedule.

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::gate::Threshold;
use crate::scenario::registry;

use super::{Plan, Validated};

mod checks;
pub mod curve;
mod yaml;

pub use checks::MAX_CLASSES;
pub use yaml::Ordered;

/// The schema name a workload document carries.
pub const SCHEMA: &str = "msgbench.workload/v1";

/// The keys a workload has above its classes.
const TOP_KEYS: [&str; 5] = ["schema", "workload", "duration", "conn", "classes"];

/// A workload as read: its name and its classes in the file's order.
#[derive(Debug, Clone)]
pub struct Workload {
    pub name: String,
    pub classes: Vec<Class>,
    /// The `--scale` its rates were multiplied by, if any.
    pub scale: Option<f64>,
    /// The `--time-warp` its classes' curves were replayed at, if any.
    pub time_warp: Option<f64>,
}

/// One class of a workload: its plan (with the shared connection and duration filled in) and
/// the SLOs its result is judged by.
#[derive(Debug, Clone)]
pub struct Class {
    pub name: String,
    pub plan: Plan,
    pub slo: Vec<Threshold>,
    /// Its messages per second in each second of a capture (`curve`), replayed by
    /// `--time-warp`; its plan's `rate` is what a plain run sends at.
    pub curve: Option<Vec<f64>>,
}

/// What `msgbench run FILE` holds: one plan, or a workload.
pub enum Document {
    Plan(Box<Plan>),
    Workload(Workload),
}

impl Document {
    /// Reads a plan (JSON, `msgbench.plan/v1`) or a workload (YAML, or its printed JSON form).
    ///
    /// # Errors
    /// An unreadable file, or a document that is neither, named in one line.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("cannot read plan '{}'", path.display()), e))?;
        let origin = path.display().to_string();
        let stem = path
            .file_stem()
            .map_or_else(|| "workload".into(), |s| s.to_string_lossy().into_owned());
        match serde_json::from_str::<Value>(&text) {
            Ok(v) if v.get("schema").and_then(Value::as_str) == Some(SCHEMA) => {
                Workload::from_value(&v, &origin).map(Document::Workload)
            }
            Ok(v) => Plan::from_json(&v).map(|p| Document::Plan(Box::new(p))),
            // A plan file that starts as JSON and breaks is a JSON mistake, not YAML.
            Err(e) if text.trim_start().starts_with('{') => {
                Err(Error::Usage(format!("plan '{origin}' is not JSON: {e}")))
            }
            // Neither JSON nor a YAML mapping: most likely a broken plan, so both are named.
            Err(json) => match Workload::from_text(&text, &origin, &stem) {
                Ok(w) => Ok(Document::Workload(w)),
                Err(Error::Usage(m))
                    if m.contains("is not a mapping") || m.contains("is empty") =>
                {
                    Err(Error::Usage(format!(
                        "plan '{origin}' is not JSON ({json}), nor a workload (YAML with classes)"
                    )))
                }
                Err(e) => Err(e),
            },
        }
    }
}

impl Workload {
    /// Reads a workload's YAML text; `origin` names it in messages, `stem` is its name when it
    /// gives none.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the file, the class and the key.
    pub fn from_text(text: &str, origin: &str, stem: &str) -> Result<Self> {
        Self::from_entries(yaml::read(text, origin)?, origin, stem)
    }

    /// Reads a workload's printed form (what [`Workload::to_json`] writes).
    ///
    /// # Errors
    /// As [`Workload::from_text`].
    pub fn from_value(v: &Value, origin: &str) -> Result<Self> {
        let top = v
            .as_object()
            .ok_or_else(|| Error::Usage(format!("workload '{origin}' is not a JSON object")))?;
        Self::from_entries(top.clone().into_iter().collect(), origin, "workload")
    }

    fn from_entries(top: Ordered, origin: &str, stem: &str) -> Result<Self> {
        let at = |why: String| Error::Usage(format!("workload '{origin}': {why}"));
        if let Some((k, _)) = top.iter().find(|(k, _)| !TOP_KEYS.contains(&k.as_str())) {
            return Err(at(format!(
                "unknown key '{k}' (a workload has {}; a class's keys go under classes)",
                TOP_KEYS.join(", ")
            )));
        }
        let get = |k: &str| top.iter().find(|(key, _)| key == k).map(|(_, v)| v);
        match get("schema") {
            None => {}
            Some(Value::String(s)) if s == SCHEMA => {}
            Some(other) => {
                return Err(at(format!(
                    "schema {other} is not one this msgbench reads ({SCHEMA})"
                )))
            }
        }
        let name = match get("workload") {
            None => stem.to_string(),
            Some(Value::String(s)) if checks::is_name(s) => s.clone(),
            Some(other) => {
                return Err(at(format!(
                    "workload name {other} must be letters, digits, '-', '_' or '.'"
                )))
            }
        };
        let shared = checks::Shared::read(get("conn"), get("duration")).map_err(at)?;
        let classes = class_entries(get("classes")).map_err(at)?;
        let alone = classes.len() == 1;
        let classes = classes
            .into_iter()
            .map(|(name, keys)| {
                Class::read(&name, keys, &shared, alone).map_err(|why| {
                    Error::Usage(format!("workload '{origin}', class '{name}': {why}"))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        checks::distinct_subjects(&classes).map_err(at)?;
        Ok(Self {
            name,
            classes,
            scale: None,
            time_warp: None,
        })
    }

    /// Every class's rate times `factor` (`--scale`): the same mix, busier or quieter. A
    /// class with no rate (a window of operations in flight, such as `kv get`) runs as
    /// written; one that follows a `rate_schedule` is refused, since its stages are its own.
    ///
    /// # Errors
    /// A factor that is not positive, or a class on a schedule.
    pub fn scale(&mut self, factor: f64) -> Result<()> {
        if !(factor > 0.0 && factor.is_finite()) {
            return Err(Error::flag(
                "--scale",
                &factor.to_string(),
                "must be more than 0",
            ));
        }
        for c in &mut self.classes {
            let Some(pace) = c.plan.pace_mut() else {
                c.plan = own_rate_scaled(&c.plan, factor).map_err(|why| {
                    Error::flag(
                        "--scale",
                        &factor.to_string(),
                        format!("class '{}': {why}", c.name),
                    )
                })?;
                continue;
            };
            if pace.rate_schedule.is_some() {
                return Err(Error::flag(
                    "--scale",
                    &factor.to_string(),
                    format!(
                        "class '{}' follows a rate_schedule, whose stages are its own; scale \
                         them in the file",
                        c.name
                    ),
                ));
            }
            pace.rate *= factor;
            for r in c.curve.iter_mut().flatten() {
                *r *= factor;
            }
        }
        self.scale = Some(self.scale.unwrap_or(1.0) * factor);
        Ok(())
    }

    /// Replays each class's curve instead of its mean rate (`--time-warp`): each captured
    /// second lasts 1/`factor` s, at the captured rate. A class with a curve follows it as its
    /// rate schedule (a curve longer than the schedule's stages merged into equal stages),
    /// which sets its length too: its own `duration` or `msgs` is not read. The curve itself
    /// is then the schedule's, so the class no longer carries it (its printed form is the
    /// schedule, which reads back). Classes without a curve run as written.
    ///
    /// # Errors
    /// A factor that is not positive and finite, or a workload no class of which has a curve.
    pub fn warp(&mut self, factor: f64) -> Result<()> {
        let refuse = |why: String| Error::flag("--time-warp", &factor.to_string(), why);
        if !(factor > 0.0 && factor.is_finite()) {
            return Err(refuse("must be more than 0".into()));
        }
        if self.classes.iter().all(|c| c.curve.is_none()) {
            return Err(refuse(format!(
                "replays the classes' captured curves, and no class of workload '{}' has one \
                 (`curve: [r0, r1, …]`, as `msgbench capture` writes)",
                self.name
            )));
        }
        for c in &mut self.classes {
            let Some(points) = c.curve.take() else {
                continue;
            };
            let spec = curve::schedule(&curve::stages(&points, factor));
            c.plan = scheduled(&c.plan, spec)
                .map_err(|why| refuse(format!("class '{}': {why}", c.name)))?;
        }
        self.time_warp = Some(factor);
        Ok(())
    }

    /// Checks every class's plan and SLOs, in the file's order.
    ///
    /// # Errors
    /// The first class whose plan or SLO cannot work, named with the flag.
    pub fn validate(&self) -> Result<Vec<Validated>> {
        self.classes
            .iter()
            .map(|c| {
                let named = |e: Error| match e {
                    Error::Usage(m) => Error::Usage(format!("class '{}': {m}", c.name)),
                    other => other,
                };
                let v = c.plan.validate().map_err(named)?;
                v.gates("slo", &c.slo).map_err(named)?;
                Ok(v)
            })
            .collect()
    }

    /// The workload written out in full (every class's plan with its defaults, the shared
    /// connection once at the top): what `--print-plan` prints and `msgbench run` reads back.
    ///
    /// # Errors
    /// A server URL that carries a password or token ([`Plan::to_json`]).
    pub fn to_json(&self) -> Result<Value> {
        let mut conn = None;
        let mut classes = Vec::with_capacity(self.classes.len());
        for c in &self.classes {
            let mut doc = c.plan.to_json()?;
            classes.push(c.printed(&mut doc, &mut conn));
        }
        Ok(self.document(conn, classes))
    }

    /// As [`Workload::to_json`], for a result: credentials left out rather than refused.
    pub fn recorded(&self) -> Value {
        let mut conn = None;
        let classes = (self.classes.iter())
            .map(|c| c.printed(&mut c.plan.recorded(), &mut conn))
            .collect();
        self.document(conn, classes)
    }

    fn document(&self, conn: Option<Value>, classes: Vec<Value>) -> Value {
        let mut top = Map::new();
        top.insert("schema".into(), SCHEMA.into());
        top.insert("workload".into(), self.name.clone().into());
        if let Some(c) = conn {
            top.insert("conn".into(), c);
        }
        top.insert("classes".into(), Value::Array(classes));
        Value::Object(top)
    }
}

impl Class {
    /// Builds a class's plan document from its keys and what the workload shares, and reads it.
    /// `alone` for a workload of this one class: with no other class to take the
    /// machine from, it may send as fast as it can, as its scenario does on its own.
    fn read(
        name: &str,
        keys: Map<String, Value>,
        shared: &checks::Shared,
        alone: bool,
    ) -> std::result::Result<Self, String> {
        if !checks::is_name(name) {
            return Err("a class's name must be letters, digits, '-', '_' or '.'".into());
        }
        let mut doc = keys;
        let scenario = match doc.remove("scenario") {
            Some(Value::String(s)) => s.replace(' ', "."),
            Some(other) => return Err(format!("scenario {other} is not a scenario's name")),
            None => return Err("no scenario (such as `scenario: js pub`)".into()),
        };
        let entry = registry::named(&scenario).ok_or_else(|| {
            format!("scenario '{scenario}' is not one msgbench runs (such as pub, js pub, kv get)")
        })?;
        let slo = checks::slo(doc.remove("slo"))?;
        let curve = doc.remove("curve").map(|v| curve::read(&v)).transpose()?;
        match doc.remove("schema") {
            None => {}
            Some(Value::String(s)) if s == super::SCHEMA => {}
            Some(other) => return Err(format!("schema {other} is not {}", super::SCHEMA)),
        }
        let cmd = entry.command();
        let rateless = shared.apply(&cmd, &mut doc)?;
        doc.insert("schema".into(), super::SCHEMA.into());
        doc.insert("scenario".into(), scenario.into());
        if rateless && curve.is_some() {
            return Err(checks::CURVE_NO_RATE.into());
        }
        if rateless && !alone && checks::unpaced(&doc) {
            return Err(checks::NO_RATE.into());
        }
        let mut plan = Plan::from_json(&Value::Object(doc)).map_err(|e| match e {
            Error::Usage(m) => m.trim_start_matches("plan: ").to_string(),
            other => other.to_string(),
        })?;
        if curve.is_some() {
            checks::curve_paced(&mut plan)?;
        }
        Ok(Self {
            name: name.to_string(),
            plan,
            slo,
            curve,
        })
    }

    /// A class's plan document as the workload prints it: its name and SLOs first, the shared
    /// connection taken out (the first class's is the workload's).
    fn printed(&self, doc: &mut Value, conn: &mut Option<Value>) -> Value {
        let obj = doc.as_object_mut().expect("a plan is an object");
        obj.remove("schema");
        if let Some(c) = obj.remove("conn") {
            conn.get_or_insert(c);
        }
        let mut out = Map::new();
        out.insert("class".into(), self.name.clone().into());
        out.insert(
            "slo".into(),
            self.slo
                .iter()
                .map(|t| Value::from(t.to_string()))
                .collect(),
        );
        if let Some(c) = &self.curve {
            out.insert("curve".into(), c.iter().map(|&r| Value::from(r)).collect());
        }
        out.extend(std::mem::take(obj));
        Value::Object(out)
    }
}

/// `plan` on the rate schedule `spec`, read back through the plan's own parser: its rate and
/// its stop (`duration`, `msgs`, `requests`), which the schedule replaces, are left out, so the
/// plan prints as it runs and reads back.
/// The rate of a plan whose scenario keeps it apart from the pace flags, in a top-level `rate`
/// (`js consume --publish live`, which takes a `rate_schedule` beside it); `None` for a plan
/// with no such rate, or on a schedule. Only meaningful for a plan without pace flags.
pub fn own_rate(plan: &Plan) -> Option<f64> {
    let doc = plan.document();
    let obj = doc.as_object()?;
    let scheduled = obj.get("rate_schedule").is_some_and(|v| !v.is_null());
    (!scheduled)
        .then(|| obj.get("rate").and_then(Value::as_f64))
        .flatten()
        .filter(|r| *r > 0.0)
}

/// A plan whose scenario keeps its rate apart from the pace flags (`js consume --publish
/// live` publishes at its own `rate` a count of `msgs`), read again with both times `factor`,
/// so it sends `factor` times as fast for as long; any other plan as it was.
fn own_rate_scaled(plan: &Plan, factor: f64) -> std::result::Result<Plan, String> {
    let mut doc = plan.document();
    let Some(obj) = doc.as_object_mut() else {
        return Ok(plan.clone());
    };
    let Some(rate) = obj.get("rate").and_then(Value::as_f64).filter(|r| *r > 0.0) else {
        return Ok(plan.clone());
    };
    obj.insert("rate".into(), (rate * factor).into());
    if let Some(m) = obj.get("msgs").and_then(Value::as_u64) {
        let scaled = (m as f64 * factor).round().max(1.0) as u64;
        obj.insert("msgs".into(), scaled.into());
    }
    let mut scaled = Plan::from_json(&doc).map_err(|e| match e {
        Error::Usage(m) => m.trim_start_matches("plan: ").to_string(),
        other => other.to_string(),
    })?;
    *scaled.out_mut() = plan.out().clone();
    Ok(scaled)
}

/// `plan` on the rate schedule `spec`, its own rate and stop taken out: how a class replays its
/// curve, and how a capacity probe sets the rate of a class whose scenario keeps its rate apart
/// from the pace flags (`js consume --publish live`).
///
/// # Errors
/// The scenario's refusal of the schedule.
pub fn scheduled(plan: &Plan, spec: String) -> std::result::Result<Plan, String> {
    let mut doc = plan.document();
    let replaced = ["rate", "rate_schedule", "duration", "msgs", "requests"];
    if let Some(obj) = doc.as_object_mut() {
        obj.retain(|k, _| !replaced.contains(&k.as_str()));
        for group in obj.values_mut().filter_map(Value::as_object_mut) {
            group.retain(|k, _| !replaced.contains(&k.as_str()));
        }
        obj.insert("rate_schedule".into(), spec.into());
    }
    let mut warped = Plan::from_json(&doc).map_err(|e| match e {
        Error::Usage(m) => m.trim_start_matches("plan: ").to_string(),
        other => other.to_string(),
    })?;
    *warped.out_mut() = plan.out().clone();
    Ok(warped)
}

/// A class's name and its keys as written.
type Named = (String, Map<String, Value>);

/// The classes of a workload, in order: a mapping of name to keys (as written by hand), or a
/// list of mappings that each name their `class` (as printed).
fn class_entries(v: Option<&Value>) -> std::result::Result<Vec<Named>, String> {
    let list: Vec<(String, Value)> = match v {
        None => return Err("no classes (a mapping of class names to their keys)".into()),
        // A mapping's order is the file's only when it came from YAML; JSON's printed form
        // is a list.
        Some(Value::Object(m)) => m.clone().into_iter().collect(),
        Some(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                let name = item
                    .get("class")
                    .and_then(Value::as_str)
                    .ok_or("each class of a list names itself (`class: NAME`)")?;
                if out.iter().any(|(n, _): &(String, Value)| n == name) {
                    return Err(format!("class '{name}' is given twice"));
                }
                let mut keys = item.clone();
                keys.as_object_mut().map(|o| o.remove("class"));
                out.push((name.to_string(), keys));
            }
            out
        }
        Some(other) => return Err(format!("classes {other} is not a mapping of classes")),
    };
    if list.is_empty() {
        return Err("no classes (a mapping of class names to their keys)".into());
    }
    if list.len() > checks::MAX_CLASSES {
        return Err(format!(
            "{} classes; a workload has at most {}",
            list.len(),
            checks::MAX_CLASSES
        ));
    }
    list.into_iter()
        .map(|(name, keys)| match keys {
            Value::Object(m) => Ok((name, m)),
            other => Err(format!(
                "class '{name}': {other} is not a mapping of its keys"
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests;
