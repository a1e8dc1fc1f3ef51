//! Message templates: the `--data` JSON (or JSON lines) with `{{…}}` placeholders, turned into
//! encoded protobuf messages for a method's input type.
//!
//! A template is parsed once into text and placeholder parts. What a line uses decides how
//! often it is rebuilt: a line with no placeholders, or only `{{bytes N}}`, is encoded once; one
//! using only `{{client}}` and `{{stream}}` once per client and stream (the K messages of a write
//! flood are built before the clock starts); only `{{seq}}`, `{{ts}}` and `{{uuid}}` force a
//! build per message, and then the text buffer and the decoder are reused.
//!
//! Building goes JSON → `prost_reflect::DynamicMessage` (the proto3 JSON mapping: bytes fields
//! are base64, 64-bit integers may be strings) → protobuf bytes, and a mismatch is reported with
//! the path of the field at fault.

use std::collections::HashMap;
use std::fmt::Write as _;

use base64::Engine as _;
use bytes::Bytes;
use prost::Message as _;
use prost_reflect::{DynamicMessage, MessageDescriptor};

/// One piece of a template line.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Seq,
    Client,
    Stream,
    Ts,
    Uuid,
}

/// What varies per message, handed to [`Template::build`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Vars {
    /// The message's number within its client, from 0.
    pub seq: u64,
    pub client: u32,
    pub stream: u64,
}

#[derive(Debug, Clone)]
struct Line {
    parts: Vec<Part>,
    /// Uses {{seq}}, {{ts}} or {{uuid}}: built per message.
    per_message: bool,
    /// Uses {{client}} or {{stream}}: built per pair, then reused.
    per_target: bool,
}

/// A template error: which line, which field, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TemplateError(pub String);

/// A parsed `--data`, bound to the message type it builds.
#[derive(Debug, Clone)]
pub struct Template {
    lines: Vec<Line>,
    desc: MessageDescriptor,
    streams: u64,
    /// Where the data came from, for error messages ("--data", "data.jsonl line 3").
    origin: String,
}

impl Template {
    /// Parses `lines` (one JSON message each) for `desc`, and builds each once with sample
    /// values, so that a field that does not fit the type is reported now, not mid-run.
    ///
    /// # Errors
    /// A bad placeholder, or JSON that does not match the message type, naming the field.
    pub fn new(
        lines: &[String],
        origin: &str,
        desc: MessageDescriptor,
        streams: u64,
    ) -> Result<Self, TemplateError> {
        if lines.is_empty() {
            return Err(TemplateError(format!("{origin}: no message in it")));
        }
        let mut parsed = Vec::with_capacity(lines.len());
        for (i, text) in lines.iter().enumerate() {
            let at = line_name(origin, i, lines.len());
            let parts = parse(text).map_err(|why| TemplateError(format!("{at}: {why}")))?;
            let per_message = parts
                .iter()
                .any(|p| matches!(p, Part::Seq | Part::Ts | Part::Uuid));
            let per_target = parts
                .iter()
                .any(|p| matches!(p, Part::Client | Part::Stream));
            parsed.push(Line {
                parts,
                per_message,
                per_target,
            });
        }
        let any_stream = (parsed.iter()).any(|l| l.parts.iter().any(|p| matches!(p, Part::Stream)));
        if streams > 1 && !any_stream {
            return Err(TemplateError(format!(
                "--streams {streams} sets the values of {{{{stream}}}}, and {origin} has none: put \
                 {{{{stream}}}} where a message names its target stream"
            )));
        }
        let t = Self {
            lines: parsed,
            desc,
            streams: streams.max(1),
            origin: origin.to_string(),
        };
        let mut text = String::new();
        for i in 0..t.lines.len() {
            t.encode_line(i, Vars::default(), &mut text)?;
        }
        Ok(t)
    }

    /// The stream index message `seq` of `client` goes to.
    pub fn stream_of(&self, client: u32, seq: u64) -> u64 {
        (u64::from(client) + seq) % self.streams
    }

    /// Renders line `i` with `vars` into `out` (cleared first).
    pub fn render(&self, i: usize, vars: Vars, out: &mut String) {
        out.clear();
        for p in &self.lines[i].parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Seq => {
                    let _ = write!(out, "{}", vars.seq);
                }
                Part::Client => {
                    let _ = write!(out, "{}", vars.client);
                }
                Part::Stream => {
                    let _ = write!(out, "{}", vars.stream);
                }
                Part::Ts => {
                    let ns = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos() as u64);
                    let _ = write!(out, "{ns}");
                }
                Part::Uuid => push_uuid(out),
            }
        }
    }

    /// Parses rendered JSON text into a message of the template's type.
    ///
    /// # Errors
    /// The field at fault and why.
    pub fn parse_json(&self, text: &str) -> Result<DynamicMessage, String> {
        use serde::de::DeserializeSeed as _;
        let mut de = serde_json::Deserializer::from_str(text);
        let mut track = serde_path_to_error::Track::new();
        let msg = self
            .desc
            .clone()
            .deserialize(serde_path_to_error::Deserializer::new(&mut de, &mut track))
            .map_err(|e| describe(&track.path().to_string(), &e))?;
        de.end().map_err(|e| describe("", &e))?;
        Ok(msg)
    }

    fn encode_line(&self, i: usize, vars: Vars, text: &mut String) -> Result<Bytes, TemplateError> {
        self.render(i, vars, text);
        let msg = self.parse_json(text).map_err(|why| {
            TemplateError(format!(
                "{}: does not fit {}: {why}",
                line_name(&self.origin, i, self.lines.len()),
                self.desc.full_name()
            ))
        })?;
        Ok(Bytes::from(msg.encode_to_vec()))
    }

    /// A per-client source of encoded messages.
    pub fn source(&self, client: u32) -> Source<'_> {
        Source {
            t: self,
            client,
            fixed: vec![None; self.lines.len()],
            targets: HashMap::new(),
            text: String::with_capacity(256),
        }
    }

    /// How many template lines there are (messages use them in turn).
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Never true: a template has at least one line.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// One client's messages: built when needed, reused when they cannot differ.
pub struct Source<'a> {
    t: &'a Template,
    client: u32,
    fixed: Vec<Option<Bytes>>,
    targets: HashMap<(usize, u64), Bytes>,
    text: String,
}

impl Source<'_> {
    /// Message `seq` of this client, encoded.
    ///
    /// # Errors
    /// Only when a per-message value makes the JSON invalid (a `{{ts}}` in a field too small
    /// for it, say); the caller counts it and skips the message.
    pub fn next(&mut self, seq: u64) -> Result<Bytes, TemplateError> {
        let i = (seq % self.t.lines.len() as u64) as usize;
        let line = &self.t.lines[i];
        let vars = Vars {
            seq,
            client: self.client,
            stream: self.t.stream_of(self.client, seq),
        };
        if line.per_message {
            return self.t.encode_line(i, vars, &mut self.text);
        }
        if line.per_target {
            if let Some(b) = self.targets.get(&(i, vars.stream)) {
                return Ok(b.clone());
            }
            let b = self.t.encode_line(i, vars, &mut self.text)?;
            self.targets.insert((i, vars.stream), b.clone());
            return Ok(b);
        }
        if let Some(b) = &self.fixed[i] {
            return Ok(b.clone());
        }
        let b = self.t.encode_line(i, vars, &mut self.text)?;
        self.fixed[i] = Some(b.clone());
        Ok(b)
    }
}

fn line_name(origin: &str, i: usize, n: usize) -> String {
    if n == 1 {
        origin.to_string()
    } else {
        format!("{origin} line {}", i + 1)
    }
}

/// "field `events[0].data`: invalid type: …" from a path-tracking error.
fn describe(path: &str, e: &serde_json::Error) -> String {
    let inner = e.to_string();
    // serde_json appends " at line L column C"; within one message line that is noise.
    let inner = inner
        .rsplit_once(" at line ")
        .map_or(inner.as_str(), |(head, _)| head);
    if path == "." || path.is_empty() {
        inner.to_string()
    } else {
        format!("field `{path}`: {inner}")
    }
}

/// Splits a line into text and placeholders. `{{bytes N}}` becomes text at once: N
/// deterministic bytes, base64 (the JSON form of a bytes field).
fn parse(text: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut rest = text;
    let mut lit = String::new();
    while let Some(open) = rest.find("{{") {
        lit.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after.find("}}").ok_or_else(|| {
            format!(
                "'{{{{' at byte {} is never closed",
                text.len() - rest.len() + open
            )
        })?;
        let name = after[..close].trim();
        let part = match name {
            "seq" => Part::Seq,
            "client" => Part::Client,
            "stream" => Part::Stream,
            "ts" => Part::Ts,
            "uuid" => Part::Uuid,
            other => {
                match other.strip_prefix("bytes") {
                    Some(n) => {
                        let n: usize = n.trim().parse().map_err(|_| {
                        format!("{{{{{other}}}}}: expected {{{{bytes N}}}} with N a number of bytes")
                    })?;
                        if n > 16 << 20 {
                            return Err(format!("{{{{{other}}}}}: at most 16 MiB"));
                        }
                        let bytes: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
                        Part::Text(base64::engine::general_purpose::STANDARD.encode(bytes))
                    }
                    None => {
                        return Err(format!(
                            "unknown placeholder {{{{{other}}}}} (known: seq, client, stream, ts, \
                         uuid, bytes N)"
                        ))
                    }
                }
            }
        };
        match part {
            Part::Text(t) => lit.push_str(&t),
            p => {
                if !lit.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut lit)));
                }
                parts.push(p);
            }
        }
        rest = &after[close + 2..];
    }
    lit.push_str(rest);
    if !lit.is_empty() {
        parts.push(Part::Text(lit));
    }
    Ok(parts)
}

/// A random version-4 UUID in its text form, from a per-thread xorshift generator (ids need to
/// be distinct, not secret).
fn push_uuid(out: &mut String) {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = Cell::new(
            crate::wire::stamp::new_run_tag() as u64 ^ 0x9e37_79b9_7f4a_7c15
        );
    }
    let next = || {
        STATE.with(|s| {
            let mut x = s.get();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s.set(x);
            x
        })
    };
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&next().to_le_bytes());
    b[8..].copy_from_slice(&next().to_le_bytes());
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        let _ = write!(out, "{byte:02x}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc() -> MessageDescriptor {
        crate::engine::grpc::schema::builtin()
            .get_message_by_name("msgbench.log.v1.AppendRequest")
            .unwrap()
    }

    fn decode(b: &Bytes) -> DynamicMessage {
        DynamicMessage::decode(desc(), b.clone()).unwrap()
    }

    fn field(m: &DynamicMessage, name: &str) -> String {
        match &*m.get_field_by_name(name).unwrap() {
            prost_reflect::Value::String(s) => s.clone(),
            prost_reflect::Value::Bytes(b) => format!("{} bytes", b.len()),
            v => format!("{v:?}"),
        }
    }

    #[test]
    fn placeholders_are_filled_per_message() {
        let t = Template::new(
            &[r#"{"stream":"s-{{stream}}-c{{client}}-{{seq}}","data":"{{bytes 5}}"}"#.into()],
            "--data",
            desc(),
            3,
        )
        .unwrap();
        let mut src = t.source(1);
        let m = decode(&src.next(0).unwrap());
        assert_eq!(field(&m, "stream"), "s-1-c1-0");
        assert_eq!(field(&m, "data"), "5 bytes");
        let m = decode(&src.next(4).unwrap());
        // (client 1 + seq 4) mod 3 = 2
        assert_eq!(field(&m, "stream"), "s-2-c1-4");
    }

    #[test]
    fn per_target_lines_are_reused_and_lines_rotate() {
        let lines = vec![
            r#"{"stream":"a-{{stream}}"}"#.to_string(),
            r#"{"stream":"b"}"#.to_string(),
        ];
        let t = Template::new(&lines, "data.jsonl", desc(), 2).unwrap();
        let mut src = t.source(0);
        let first = src.next(0).unwrap();
        assert_eq!(field(&decode(&first), "stream"), "a-0");
        assert_eq!(field(&decode(&src.next(1).unwrap()), "stream"), "b");
        assert_eq!(field(&decode(&src.next(2).unwrap()), "stream"), "a-0");
        // Same line, same stream: the very same buffer.
        assert_eq!(src.next(2).unwrap().as_ptr(), first.as_ptr());
        assert_eq!(field(&decode(&src.next(3).unwrap()), "stream"), "b");
    }

    #[test]
    fn uuids_are_distinct_and_well_formed() {
        let t = Template::new(&[r#"{"stream":"{{uuid}}"}"#.into()], "--data", desc(), 1).unwrap();
        let mut src = t.source(0);
        let a = field(&decode(&src.next(0).unwrap()), "stream");
        let b = field(&decode(&src.next(1).unwrap()), "stream");
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
    }

    #[test]
    fn a_field_of_the_wrong_type_is_named() {
        let e = Template::new(&[r#"{"stream":"x","data":12}"#.into()], "--data", desc(), 1)
            .unwrap_err();
        assert!(e.0.contains("field `data`"), "{e}");
        assert!(e.0.contains("msgbench.log.v1.AppendRequest"), "{e}");
        let e = Template::new(&[r#"{"strem":"x"}"#.into()], "--data", desc(), 1).unwrap_err();
        assert!(e.0.contains("strem"), "{e}");
        let e = Template::new(
            &[r#"{"stream":"x","metadata":{"k":5}}"#.into()],
            "--data",
            desc(),
            1,
        )
        .unwrap_err();
        assert!(e.0.contains("metadata"), "{e}");
    }

    #[test]
    fn bad_placeholders_and_lines_are_named() {
        let e =
            Template::new(&[r#"{"stream":"{{nope}}"}"#.into()], "--data", desc(), 1).unwrap_err();
        assert!(e.0.contains("{{nope}}"), "{e}");
        let e = Template::new(&[r#"{"stream":"{{seq"}"#.into()], "--data", desc(), 1).unwrap_err();
        assert!(e.0.contains("never closed"), "{e}");
        let lines = vec![r#"{"stream":"a"}"#.to_string(), "{not json".to_string()];
        let e = Template::new(&lines, "f.jsonl", desc(), 1).unwrap_err();
        assert!(e.0.starts_with("f.jsonl line 2:"), "{e}");
        let e = Template::new(&[], "f.jsonl", desc(), 1).unwrap_err();
        assert!(e.0.contains("no message"), "{e}");
        // --streams has nothing to act on without {{stream}}.
        let e = Template::new(
            &[r#"{"stream":"s-{{client}}"}"#.into()],
            "--data",
            desc(),
            3,
        )
        .unwrap_err();
        assert!(
            e.0.starts_with("--streams 3") && e.0.contains("{{stream}}"),
            "{e}"
        );
    }
}
