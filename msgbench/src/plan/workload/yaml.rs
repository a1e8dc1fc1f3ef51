//! A workload file's YAML, read into the JSON values the rest of msgbench speaks: a class's
//! keys then go through `Plan::from_json`, so a class written in YAML is held to exactly the
//! checks a typed command is.
//!
//! Only what a workload needs is taken: mappings with text keys, lists, strings, numbers,
//! booleans and null. A key given twice (the parser's refusal), a key that is not text, a
//! number that is not finite, or a document that is not one mapping is refused in one line that says where. Anchors and
//! aliases are refused before the document is built: the loader copies an alias's node, so a
//! file of nested aliases (a "billion laughs") would take the memory of the machine, and a
//! workload has nothing to repeat that a line of its own would not say as well.
//!
//! A mapping keeps the file's order ([`Ordered`]): classes run, and are reported, in the order
//! the file lists them.

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;
use yaml_rust2::yaml::Hash;
use yaml_rust2::{Yaml, YamlLoader};

use crate::error::{Error, Result};

/// Nesting deeper than this is refused: no workload needs it, and a walk of a hostile file
/// must not run out of stack.
const MAX_DEPTH: usize = 32;

/// A mapping's entries in the file's order.
pub type Ordered = Vec<(String, Value)>;

/// Reads `text`, one YAML document holding one mapping, into its entries in order; `origin`
/// names the file in messages.
///
/// # Errors
/// [`Error::Usage`] naming the file and, where the parser says, the line and column.
pub fn read(text: &str, origin: &str) -> Result<Ordered> {
    refuse_aliases(text, origin)?;
    let docs = YamlLoader::load_from_str(text).map_err(|e| {
        let m = e.marker();
        Error::Usage(format!(
            "workload '{origin}' is not YAML: {} at line {}, column {}",
            e.info(),
            m.line(),
            m.col()
        ))
    })?;
    let at = |e: Error| match e {
        Error::Usage(m) => Error::Usage(format!("workload '{origin}': {m}")),
        other => other,
    };
    match docs.as_slice() {
        [Yaml::Hash(h)] => {
            let mut top = ordered(h, "", 1).map_err(at)?;
            // `classes` as a mapping keeps its order as the printed form's list of classes
            // that each name themselves (a JSON object would sort them).
            if let Some(Yaml::Hash(c)) = h.get(&Yaml::String("classes".into())) {
                let list = classes_in_order(c).map_err(at)?;
                if let Some(slot) = top.iter_mut().find(|(k, _)| k == "classes") {
                    slot.1 = list;
                }
            }
            Ok(top)
        }
        [] | [Yaml::Null] => Err(Error::Usage(format!("workload '{origin}' is empty"))),
        [_] => Err(Error::Usage(format!(
            "workload '{origin}' is not a mapping of keys (workload, duration, conn, classes)"
        ))),
        _ => Err(Error::Usage(format!(
            "workload '{origin}' holds {} YAML documents; a workload is one",
            docs.len()
        ))),
    }
}

/// A mapping of class names to their keys, as a list of classes that each name themselves.
fn classes_in_order(c: &Hash) -> Result<Value> {
    let mut list = Vec::with_capacity(c.len());
    for (name, keys) in ordered(c, "classes", 2)? {
        let Value::Object(mut m) = keys else {
            return Err(Error::Usage(format!(
                "class '{name}': {keys} is not a mapping of its keys"
            )));
        };
        if m.contains_key("class") {
            return Err(Error::Usage(format!(
                "class '{name}': 'class' is its name, given by the mapping already"
            )));
        }
        m.insert("class".into(), name.into());
        list.push(Value::Object(m));
    }
    Ok(Value::Array(list))
}

/// The first alias of a document, found from the parser's events before any node is built.
#[derive(Default)]
struct FirstAlias(Option<Marker>);

impl MarkedEventReceiver for FirstAlias {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if matches!(ev, Event::Alias(_)) && self.0.is_none() {
            self.0 = Some(mark);
        }
    }
}

fn refuse_aliases(text: &str, origin: &str) -> Result<()> {
    let mut first = FirstAlias::default();
    // A scan error is left for the loader, which reports it the same way.
    let _ = Parser::new_from_str(text).load(&mut first, true);
    match first.0 {
        Some(m) => Err(Error::Usage(format!(
            "workload '{origin}': line {}: YAML aliases (*name) are not read; write the value out",
            m.line()
        ))),
        None => Ok(()),
    }
}

/// A mapping's entries in order, each value as JSON; `at` names the mapping in messages.
fn ordered(h: &Hash, at: &str, depth: usize) -> Result<Ordered> {
    let mut out: Ordered = Vec::with_capacity(h.len());
    for (k, v) in h {
        let key = key_text(k, at)?;
        let here = if at.is_empty() {
            key.clone()
        } else {
            format!("{at}.{key}")
        };
        out.push((key, value(v, &here, depth + 1)?));
    }
    Ok(out)
}

fn key_text(k: &Yaml, at: &str) -> Result<String> {
    match k {
        Yaml::String(s) => Ok(s.clone()),
        // `1: …` or `true: …` as a key is a slip, not a name.
        other => {
            let in_ = if at.is_empty() {
                String::new()
            } else {
                format!(" in '{at}'")
            };
            Err(Error::Usage(format!(
                "a key{in_} is {}, not text: write it in quotes",
                kind(other)
            )))
        }
    }
}

fn kind(y: &Yaml) -> &'static str {
    match y {
        Yaml::Real(_) | Yaml::Integer(_) => "a number",
        Yaml::String(_) => "text",
        Yaml::Boolean(_) => "a boolean",
        Yaml::Array(_) => "a list",
        Yaml::Hash(_) => "a mapping",
        Yaml::Null => "null",
        Yaml::Alias(_) | Yaml::BadValue => "not a value",
    }
}

/// One YAML value as JSON; `at` is its dotted path, for messages.
fn value(y: &Yaml, at: &str, depth: usize) -> Result<Value> {
    if depth > MAX_DEPTH {
        return Err(Error::Usage(format!(
            "'{at}' is nested more than {MAX_DEPTH} levels deep"
        )));
    }
    Ok(match y {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::Number((*i).into()),
        Yaml::Real(text) => {
            let n = text
                .parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .ok_or_else(|| Error::Usage(format!("'{at}': '{text}' is not a finite number")))?;
            Value::Number(n)
        }
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| value(v, &format!("{at}[{i}]"), depth + 1))
                .collect::<Result<_>>()?,
        ),
        Yaml::Hash(h) => Value::Object(ordered(h, at, depth)?.into_iter().collect::<Map<_, _>>()),
        Yaml::Alias(_) | Yaml::BadValue => {
            return Err(Error::Usage(format!("'{at}' is not a value YAML can read")))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_files_order_and_reads_scalars() {
        let top = read("b: 1\na: [x, 2.5, true, null]\n", "t").unwrap();
        assert_eq!(top[0].0, "b");
        assert_eq!(top[1].1, serde_json::json!(["x", 2.5, true, null]));
    }

    #[test]
    fn refuses_aliases_twice_given_keys_and_non_text_keys() {
        let e = read("a: &x [1]\nb: *x\n", "t").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("aliases"), "{e}");
        let e = read("a: 1\na: 2\n", "t").unwrap_err().to_string();
        assert!(e.contains("duplicated key") && e.contains("line 2"), "{e}");
        let e = read("c:\n  1: x\n", "t").unwrap_err().to_string();
        assert!(e.contains("in 'c'") && e.contains("a number"), "{e}");
        assert!(read("", "t").unwrap_err().to_string().contains("empty"));
        assert!(read("- 1\n", "t")
            .unwrap_err()
            .to_string()
            .contains("not a mapping"));
        let e = read("a: [1\n", "t").unwrap_err().to_string();
        assert!(e.contains("not YAML") && e.contains("line"), "{e}");
    }
}
