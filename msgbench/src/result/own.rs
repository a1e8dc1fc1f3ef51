//! The sections of figures that only some runs have (`jetstream`, `consumer`, `conns`, `grpc`,
//! `object_store`, the servers' side, …), held by one mechanism: the result keeps each as a
//! [`Section`] under its key ([`Own`]), so this leaf names none of them. A section says what it
//! needs of every reader: its key and JSON, the exit status its figures call for, and whether
//! the run's load was connections rather than messages. How a report shows a section from a
//! result file is a [`Shown`], which its scenario lists; the report reads those by key.

use std::any::Any;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::RunResult;
use crate::metric::Family;

/// A section of figures that only some runs have. Its lines in the text output are its
/// scenario's [`super::Describe::account`]; its rows in the reports its scenario's [`Shown`].
pub trait Section: Boxed + fmt::Debug + Send + Sync + 'static {
    /// Its key in the result file.
    fn key(&self) -> &'static str;
    /// The exit status its figures call for, where they fail the run: loss (`exit::LOSS`, which
    /// `--allow-loss` excuses) for a stream that did not reconcile or an object that does not
    /// match its digest, say. `r` is the whole result, for what the section alone cannot
    /// judge (a fault msgbench injected). None where the figures pass (never `exit::OK`: a
    /// code other than loss stands before every later check of the run). None by default.
    fn exit(&self, r: &RunResult) -> Option<u8> {
        let _ = r;
        None
    }
    /// What the run's load was, where the section says (a `conns` run's is connections).
    fn family(&self) -> Option<Family> {
        None
    }
}

/// What every section gets from being `Clone + Serialize`, written once for all of them.
pub trait Boxed {
    fn to_value(&self) -> Value;
    fn clone_box(&self) -> Box<dyn Section>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Section + Clone + Serialize> Boxed for T {
    fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a result section serialises")
    }
    fn clone_box(&self) -> Box<dyn Section> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A result's own sections, each written under its key beside the common ones.
#[derive(Debug, Default)]
pub struct Own(Vec<Box<dyn Section>>);

impl Own {
    /// Adds a section (replacing one with the same key).
    pub fn put(&mut self, s: impl Section) {
        self.put_boxed(Box::new(s));
    }

    /// Adds a section given boxed (replacing one with the same key).
    pub fn put_boxed(&mut self, s: Box<dyn Section>) {
        self.0.retain(|o| o.key() != s.key());
        self.0.push(s);
    }

    /// The section of type `S`, if the result has it.
    pub fn get<S: 'static>(&self) -> Option<&S> {
        self.0.iter().find_map(|s| s.as_any().downcast_ref::<S>())
    }

    pub fn get_mut<S: 'static>(&mut self) -> Option<&mut S> {
        (self.0.iter_mut()).find_map(|s| s.as_any_mut().downcast_mut::<S>())
    }

    pub fn iter(&self) -> impl Iterator<Item = &dyn Section> {
        self.0.iter().map(AsRef::as_ref)
    }

    /// What the run's load was: connections where a section says so, messages otherwise.
    pub fn family(&self) -> Family {
        (self.iter().find_map(Section::family)).unwrap_or(Family::Messages)
    }
}

impl Clone for Own {
    fn clone(&self) -> Self {
        Self(self.0.iter().map(|s| s.clone_box()).collect())
    }
}

impl Serialize for Own {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for section in &self.0 {
            m.serialize_entry(section.key(), &section.to_value())?;
        }
        m.end()
    }
}

/// How the HTML report and the Markdown table show a section, made from the section as a
/// result file holds it (a report reads files, some written by older builds).
pub struct Shown {
    /// The section's key in the result file.
    pub key: &'static str,
    /// Its rows, from its JSON; none where the section says nothing worth a row.
    pub rows: fn(&Value) -> Vec<Row>,
}

/// A row a section adds to a report: its label, its text, and a verdict where it judges the
/// run (`reconciled` or `not reconciled`).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub label: String,
    pub text: String,
    pub verdict: Option<(bool, &'static str)>,
}

impl Row {
    pub fn new(label: &str, text: String) -> Self {
        Self {
            label: label.to_string(),
            text,
            verdict: None,
        }
    }

    /// The row judging the run: `yes` where `ok`, `no` otherwise.
    pub fn judged(
        label: &str,
        text: String,
        ok: bool,
        yes: &'static str,
        no: &'static str,
    ) -> Self {
        Self {
            verdict: Some((ok, if ok { yes } else { no })),
            ..Self::new(label, text)
        }
    }
}

/// A count from a section's JSON, grouped for people; `?` where the file has none.
pub fn count_in(v: &Value, key: &str) -> String {
    (v.get(key).and_then(Value::as_f64)).map_or("?".into(), crate::format::count)
}

/// Counts by kind from a section's JSON object (`refused 3, timeout 1`), or "none".
pub fn by_kind(v: Option<&Value>) -> String {
    let parts: Vec<String> = (v.and_then(Value::as_object).into_iter().flatten())
        .map(|(k, n)| {
            format!(
                "{k} {}",
                n.as_u64().map_or("?".into(), crate::format::group)
            )
        })
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}
