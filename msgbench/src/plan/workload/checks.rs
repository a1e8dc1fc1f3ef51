//! What a workload checks of its classes beyond each class's own plan: names, SLOs, what the
//! classes share (the connection, the duration), that every class that sends on a schedule
//! names its rate, and that no two classes send on one subject or stream. Each refusal is a sentence the caller
//! prefixes with the file and the class.

use serde_json::{Map, Value};

use crate::gate::Threshold;

use super::Class;

/// Classes in one workload, at most: each runs its own threads and connections beside the
/// others on one machine.
pub const MAX_CLASSES: usize = 32;

/// A workload's or a class's name: something a file name, a label and a column can carry.
pub fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A class's `slo`: one expression or a list of them, as `--threshold` takes.
pub fn slo(v: Option<Value>) -> Result<Vec<Threshold>, String> {
    let exprs: Vec<Value> = match v {
        None => return Ok(Vec::new()),
        Some(Value::String(s)) => vec![Value::String(s)],
        Some(Value::Array(a)) => a,
        Some(other) => {
            return Err(format!(
                "slo {other} is not an expression or a list of them"
            ))
        }
    };
    exprs
        .iter()
        .map(|e| {
            let text = e
                .as_str()
                .ok_or_else(|| format!("slo {e} is not an expression such as p99<5ms"))?;
            crate::gate::parse(text).map_err(|why| format!("slo '{text}': {why}"))
        })
        .collect()
}

/// What every class of a workload shares.
pub struct Shared {
    /// The connection flag group, as a plan writes it.
    conn: Option<Map<String, Value>>,
    /// The stop of a class that names none of its own.
    duration: Option<Value>,
}

/// Keys of a class that are the workload's: a server of a class's own would make its figures
/// those of another system.
const SERVER_KEYS: [&str; 3] = ["conn", "server_a", "server_b"];

impl Shared {
    pub fn read(conn: Option<&Value>, duration: Option<&Value>) -> Result<Self, String> {
        let conn = match conn {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m.clone()),
            Some(other) => return Err(format!("conn {other} is not a mapping of its keys")),
        };
        // A fault list would be injected by every class's run, each recovering on its own
        // clock: not one fault seen by the mix.
        for key in ["fault", "nemesis"] {
            let given = conn
                .as_ref()
                .and_then(|c| c.get(key))
                .is_some_and(|v| !(v.is_null() || v.as_array().is_some_and(Vec::is_empty)));
            if given {
                return Err(format!(
                    "conn.{key}: faults are not injected into a workload yet; run the fault \
                     with one scenario (`msgbench <scenario> --fault …`)"
                ));
            }
        }
        let duration = match duration {
            None | Some(Value::Null) => None,
            Some(v @ Value::String(_)) => Some(v.clone()),
            Some(other) => return Err(format!("duration {other} is not a duration such as 30s")),
        };
        Ok(Self { conn, duration })
    }

    /// Fills a class's document with what the workload shares, refusing what a class may not
    /// set itself. True when the scenario takes a rate and the class names none.
    pub fn apply(&self, cmd: &clap::Command, doc: &mut Map<String, Value>) -> Result<bool, String> {
        let has = |long: &str| cmd.get_arguments().any(|a| a.get_long() == Some(long));
        let conn_keys: Vec<String> = crate::cli::ConnArgs::flag_names();
        if let Some(k) = (doc.iter())
            .find(|(k, v)| {
                (SERVER_KEYS.contains(&k.as_str()) || conn_keys.contains(k)) && !v.is_null()
            })
            .map(|(k, _)| k)
        {
            return Err(format!(
                "'{k}' is the workload's: every class runs against the one server of the \
                 workload (set it under conn, at the top)"
            ));
        }
        if has("server") {
            if let Some(c) = &self.conn {
                doc.insert("conn".into(), Value::Object(c.clone()));
            }
        }
        let named =
            |doc: &Map<String, Value>, key: &str| find(doc, key).is_some_and(|v| !v.is_null());
        if let Some(d) = &self.duration {
            if ["msgs", "duration", "hold"].iter().all(|k| !named(doc, k)) {
                let key = if has("duration") { "duration" } else { "hold" };
                if has(key) {
                    doc.insert(key.into(), d.clone());
                }
            }
        }
        let zero = find(doc, "rate").and_then(Value::as_f64) == Some(0.0);
        Ok(has("rate") && (!named(doc, "rate") || zero) && !named(doc, "rate_schedule"))
    }
}

/// A key of a class, written flat or inside one of its flag groups (`load: {rate: …}`).
fn find<'a>(doc: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    doc.get(key).or_else(|| {
        doc.values()
            .filter_map(Value::as_object)
            .find_map(|g| g.get(key))
    })
}

/// No two classes may send on one subject or into one stream: a class's subscribers would
/// count the other's messages, and a stream's state could not be reconciled with either
/// class's acknowledgements.
pub fn distinct_subjects(classes: &[Class]) -> Result<(), String> {
    let mut seen: Vec<(String, &str)> = Vec::new();
    for c in classes {
        let doc = c.plan.document();
        let Some(obj) = doc.as_object() else {
            continue;
        };
        let mut mine: Vec<String> = Vec::new();
        // A consume of a stream as it is (`publish: none`) sends on no subject.
        let sends = find(obj, "publish").and_then(Value::as_str) != Some("none");
        let keys: &[&str] = if sends {
            &["subject", "stream"]
        } else {
            &["stream"]
        };
        for key in keys {
            if let Some(Value::String(s)) = find(obj, key) {
                mine.push(format!("{key} '{s}'"));
            }
        }
        for m in mine {
            if let Some((_, other)) = seen.iter().find(|(s, _)| *s == m) {
                return Err(format!(
                    "classes '{other}' and '{}' both use {m}: give each class its own",
                    c.name
                ));
            }
            seen.push((m, &c.name));
        }
    }
    Ok(())
}

/// A class that names no rate although its plan would take one: its publishers would send as
/// fast as they can and take the machine from the other classes. A scenario that has a rate
/// flag but sends nothing with it as the class is written (`sub`, `js consume` without a live
/// publisher) refuses the rate itself, and needs none.
pub fn unpaced(doc: &Map<String, Value>) -> bool {
    let mut paced = doc.clone();
    paced.insert("rate".into(), 1.into());
    super::Plan::from_json(&Value::Object(paced)).is_ok_and(|p| p.validate().is_ok())
}

/// The refusal of an [`unpaced`] class.
pub const NO_RATE: &str = "no rate: beside other classes, a class's publishers are paced \
                           (`rate: 5000`, or `rate_schedule`), or one class would take the machine \
                           from the others";

/// The refusal of a class with a curve and no rate.
pub const CURVE_NO_RATE: &str = "curve without a rate: give the class its rate too (the \
                                 curve's mean, as capture writes it), what a run without \
                                 --time-warp sends at";

/// A class with a `curve` follows it on a schedule of its rate, so its scenario must send on
/// one (`pace`), at a `rate` of its own (the plain run's, the curve's mean as `capture` writes
/// it), and not on a `rate_schedule` already.
pub fn curve_paced(plan: &mut super::Plan) -> Result<(), String> {
    let name = plan.name().replace('.', " ");
    match plan.pace_mut() {
        None => Err(format!(
            "curve: a `{name}` class has no paced rate to follow a curve with (reply, obj, \
             conns and js consume run as they are asked); give the curve to a class that sends \
             at a rate"
        )),
        Some(p) if p.rate_schedule.is_some() => Err(
            "curve beside rate_schedule: a class follows one or the other (--time-warp makes \
             the curve its schedule)"
                .into(),
        ),
        Some(p) if p.rate <= 0.0 => Err(CURVE_NO_RATE.into()),
        Some(_) => Ok(()),
    }
}
