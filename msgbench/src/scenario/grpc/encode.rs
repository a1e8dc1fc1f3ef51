//! `msgbench grpc encode`: what building messages from JSON, protobuf encoding and base64
//! cost per message, timed apart from any I/O.

use std::time::{Duration, Instant};

use prost_reflect::{DescriptorPool, MessageDescriptor};
use serde::Serialize;

use super::args::GrpcEncodeArgs;
use super::options::SchemaSource;
use super::run::data_error;
use crate::engine::grpc::schema::{self};
use crate::engine::grpc::template::Template;
use crate::engine::grpc::{self as g};
use crate::error::{Error, Result};

/// One step of `grpc encode` and what it cost.
#[derive(Debug, Clone, Serialize)]
pub struct EncodeStep {
    pub name: &'static str,
    pub ns_per_msg: f64,
    /// Average size of what the step produced (absent when it produces no bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_msg: Option<f64>,
}

/// `grpc encode`'s result.
#[derive(Debug, Clone, Serialize)]
pub struct EncodeReport {
    pub schema: &'static str,
    pub message: String,
    pub count: u64,
    /// Whether the data has per-message placeholders (else a client can encode it once).
    pub templated: bool,
    pub steps: Vec<EncodeStep>,
    pub total_ns_per_msg: f64,
    /// What one core could build at most, at the total cost.
    pub max_msgs_per_sec_per_core: f64,
}

/// `msgbench grpc encode`: the message's definition and template, each step timed, the report.
///
/// # Errors
/// Bad input: the definition, the message type, the data.
pub fn encode(a: &GrpcEncodeArgs) -> Result<EncodeReport> {
    if a.count == 0 {
        return Err(Error::flag("--count", "0", "must be at least 1"));
    }
    let (desc, template, templated) = prepare(a)?;
    let cost = time_steps(a, &template)?;
    let per = |d: Duration| d.as_nanos() as f64 / a.count as f64;
    let avg = |b: u64| b as f64 / a.count as f64;
    let mut steps = vec![
        EncodeStep {
            name: "template",
            ns_per_msg: per(cost.time[0]),
            bytes_per_msg: Some(avg(cost.bytes[0])),
        },
        EncodeStep {
            name: "json_to_message",
            ns_per_msg: per(cost.time[1]),
            bytes_per_msg: None,
        },
        EncodeStep {
            name: "protobuf_encode",
            ns_per_msg: per(cost.time[2]),
            bytes_per_msg: Some(avg(cost.bytes[2])),
        },
    ];
    if a.base64 {
        steps.push(EncodeStep {
            name: "base64",
            ns_per_msg: per(cost.time[3]),
            bytes_per_msg: Some(avg(cost.bytes[3])),
        });
    }
    let total: f64 = steps.iter().map(|s| s.ns_per_msg).sum();
    Ok(EncodeReport {
        schema: "msgbench.encode/v1",
        message: desc.full_name().to_string(),
        count: a.count,
        templated,
        steps,
        total_ns_per_msg: total,
        max_msgs_per_sec_per_core: if total > 0.0 { 1e9 / total } else { 0.0 },
    })
}

/// The message type to build (--message, or --call's input), its data template, and whether
/// the data has per-message placeholders.
fn prepare(a: &GrpcEncodeArgs) -> Result<(MessageDescriptor, Template, bool)> {
    let source = super::options::schema_source(&a.schema, a.schema.proto.is_none());
    let pool: DescriptorPool = match &source {
        SchemaSource::Proto { file, includes } => schema::compile(file, includes)
            .map_err(|why| Error::flag("--proto", &file.display().to_string(), why))?,
        _ => schema::builtin(),
    };
    let (desc, call_for_default) = match (&a.message, &a.call) {
        (Some(name), _) => (
            pool.get_message_by_name(name.trim()).ok_or_else(|| {
                Error::flag("--message", name, "no such message type in the definition")
            })?,
            String::new(),
        ),
        (None, call) => {
            let call = call
                .clone()
                .unwrap_or_else(|| super::options::DEFAULT_CALL.into());
            let m =
                schema::method(&pool, &call).map_err(|why| Error::flag("--call", &call, why))?;
            (m.input, call)
        }
    };
    let data = super::options::data_spec(&a.schema, &call_for_default)?;
    let template = Template::new(&data.lines, &data.origin, desc.clone(), a.schema.streams)
        .map_err(data_error)?;
    let templated = data.lines.iter().any(|l| l.contains("{{"));
    Ok((desc, template, templated))
}

/// What each step took over the whole run, and the bytes it produced, in step order
/// (template, JSON to message, protobuf encode, base64).
struct StepCost {
    time: [Duration; 4],
    bytes: [u64; 4],
}

/// Runs the steps over --count messages.
fn time_steps(a: &GrpcEncodeArgs, template: &Template) -> Result<StepCost> {
    use base64::Engine as _;
    use prost::Message as _;

    // Steps run batch by batch, each over the whole batch, so each is timed without a clock
    // read per message and memory stays bounded whatever --count is.
    const BATCH: usize = 1024;
    let mut text: Vec<String> = (0..BATCH).map(|_| String::new()).collect();
    let mut msgs = Vec::with_capacity(BATCH);
    let mut wire: Vec<Vec<u8>> = Vec::with_capacity(BATCH);
    let mut b64 = String::new();
    let mut t = [Duration::ZERO; 4];
    let mut bytes = [0u64; 4];
    let mut done = 0u64;
    while done < a.count {
        let n = (a.count - done).min(BATCH as u64) as usize;
        let t0 = Instant::now();
        for (k, out) in text.iter_mut().take(n).enumerate() {
            let seq = done + k as u64;
            let vars = g::template::Vars {
                seq,
                client: 0,
                stream: template.stream_of(0, seq),
            };
            template.render((seq % template.len() as u64) as usize, vars, out);
        }
        let t1 = Instant::now();
        msgs.clear();
        for s in text.iter().take(n) {
            let m = template
                .parse_json(s)
                .map_err(|why| Error::Usage(format!("invalid --data: {why}")))?;
            msgs.push(m);
        }
        let t2 = Instant::now();
        wire.clear();
        for m in &msgs {
            wire.push(m.encode_to_vec());
        }
        let t3 = Instant::now();
        if a.base64 {
            for w in &wire {
                b64.clear();
                base64::engine::general_purpose::STANDARD.encode_string(w, &mut b64);
                bytes[3] += b64.len() as u64;
            }
        }
        let t4 = Instant::now();
        t[0] += t1 - t0;
        t[1] += t2 - t1;
        t[2] += t3 - t2;
        t[3] += t4 - t3;
        bytes[0] += text.iter().take(n).map(|s| s.len() as u64).sum::<u64>();
        bytes[2] += wire.iter().map(|w| w.len() as u64).sum::<u64>();
        done += n as u64;
    }
    Ok(StepCost { time: t, bytes })
}

/// Prints `grpc encode`'s figures, and writes them as JSON when asked.
///
/// # Errors
/// The JSON file cannot be written.
pub fn print(r: &EncodeReport, json: Option<&std::path::Path>) -> crate::error::Result<()> {
    use std::fmt::Write as _;
    use std::io::Write as _;
    let group = crate::format::group;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "msgbench grpc encode: {}, {} messages{}",
        r.message,
        group(r.count),
        if r.templated {
            " (templated: built per message)"
        } else {
            " (no placeholders: a client can build it once and reuse it)"
        }
    );
    let _ = writeln!(o, "  {:<18} {:>10} {:>12}", "step", "ns/msg", "bytes/msg");
    for s in &r.steps {
        let bytes = s
            .bytes_per_msg
            .map_or_else(String::new, |b| format!("{b:.0}"));
        let _ = writeln!(o, "  {:<18} {:>10.1} {:>12}", s.name, s.ns_per_msg, bytes);
    }
    let _ = writeln!(
        o,
        "  {:<18} {:>10.1}   at most {} msgs/s on one core",
        "total",
        r.total_ns_per_msg,
        group(r.max_msgs_per_sec_per_core.round() as u64)
    );
    let doc = serde_json::to_vec_pretty(r).expect("the report serialises");
    let to_stdout = json == Some(std::path::Path::new("-"));
    if let Some(path) = json.filter(|_| !to_stdout) {
        std::fs::write(path, &doc).map_err(|e| {
            crate::error::Error::io(format!("cannot write --json file '{}'", path.display()), e)
        })?;
    }
    if to_stdout {
        let _ = std::io::stderr().write_all(o.as_bytes());
        let _ = std::io::stdout().write_all(&doc);
        let _ = std::io::stdout().write_all(b"\n");
    } else {
        let _ = std::io::stdout().write_all(o.as_bytes());
    }
    Ok(())
}
