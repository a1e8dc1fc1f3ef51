//! The stream flags made into what a run asks of its streams: the names checked, one
//! configuration per stream (or per target subject of a write flood), whether a stream that
//! exists is used as found, and that every publish subject is one its stream captures.

use super::args::{JsConsumeArgs, StreamArgs};
use crate::cli::{Discard, Storage};
use crate::engine::jsapi::{Setup, StreamConfig};
use crate::error::{Error, Result};
use crate::options::check_subject;
use crate::scenario::request::RequestOptions;

/// A stream or bucket name: one token, as it becomes part of API subjects.
pub(super) fn check_name(flag: &str, name: &str) -> Result<()> {
    if name.is_empty()
        || name.len() > 255
        || name
            .chars()
            .any(|c| c == '.' || c == '*' || c == '>' || c.is_whitespace() || c.is_control())
    {
        return Err(Error::flag(
            flag,
            name,
            "a name cannot be empty or contain '.', '*', '>' or spaces",
        ));
    }
    Ok(())
}

/// The streams a command works on: one, or `spread` of them (`NAME_k` capturing `SUBJECT.k`).
pub(super) fn stream_configs(t: &StreamArgs, spread: Option<u32>) -> Result<Vec<StreamConfig>> {
    check_name("--stream", &t.stream)?;
    check_subject(&t.subject, false).map_err(|why| Error::flag("--subject", &t.subject, why))?;
    for s in &t.subjects {
        check_subject(s, true).map_err(|why| Error::flag("--subjects", s, why))?;
    }
    let replicas = t.replicas.unwrap_or(1);
    if replicas == 0 || replicas > 5 {
        return Err(Error::flag(
            "--replicas",
            &replicas.to_string(),
            "must be 1 to 5",
        ));
    }
    if spread.is_some() && !t.subjects.is_empty() {
        return Err(Error::Usage(
            "--subjects cannot be used with --streams: stream NAME_k captures SUBJECT.k".into(),
        ));
    }
    let n = spread.unwrap_or(1);
    Ok((0..n)
        .map(|k| {
            let (name, subjects) = match spread {
                Some(_) => (
                    format!("{}_{k}", t.stream),
                    vec![format!("{}.{k}", t.subject)],
                ),
                None if t.subjects.is_empty() => (t.stream.clone(), vec![t.subject.clone()]),
                None => (t.stream.clone(), t.subjects.clone()),
            };
            StreamConfig {
                name,
                subjects,
                storage: t.storage.unwrap_or(Storage::Memory).as_str().into(),
                num_replicas: replicas as u32,
                max_bytes: t.max_bytes.map_or(-1, |b| b as i64),
                discard: t.discard.unwrap_or(Discard::Old).as_str().into(),
                ..StreamConfig::default()
            }
        })
        .collect())
}

/// How the run comes by its streams: as found, unless a stream setting (`more`: one its
/// command declares besides the common ones, such as `--persist`) or `--create` was given.
pub(super) fn setup(t: &StreamArgs, more: bool) -> Setup {
    if more || given(t).is_some() {
        Setup::Create
    } else {
        Setup::AsFound
    }
}

/// The first of the common stream settings (or `--create`) that was given, by its flag.
pub(super) fn given(t: &StreamArgs) -> Option<&'static str> {
    [
        ("--create", t.create),
        ("--subjects", !t.subjects.is_empty()),
        ("--storage", t.storage.is_some()),
        ("--replicas", t.replicas.is_some()),
        ("--max-bytes", t.max_bytes.is_some()),
        ("--discard", t.discard.is_some()),
    ]
    .into_iter()
    .find_map(|(flag, on)| on.then_some(flag))
}

/// `js consume --publish none` consumes the stream as it is: the flags that would make it,
/// fill it or shape what is published into it have nothing to act on, and are refused.
pub(super) fn as_it_is(a: &JsConsumeArgs) -> Result<()> {
    if let Some(flag) = given(&a.target) {
        return Err(Error::Usage(format!(
            "{flag} asks for a stream msgbench makes; --publish none consumes the stream as it \
             is (give --publish before or live to have msgbench make and fill it)"
        )));
    }
    // The defaults are told from typed values by value.
    let shaping = [
        ("--size", a.size != 128),
        ("--subject", a.target.subject != "msgbench.js"),
    ];
    if let Some((flag, _)) = shaping.iter().find(|(_, on)| *on) {
        return Err(Error::Usage(format!(
            "{flag} shapes the messages msgbench publishes, and --publish none publishes none: \
             it consumes the whole stream as it is"
        )));
    }
    if a.target.purge {
        return Err(Error::Usage(
            "--purge with --publish none would leave nothing to consume".into(),
        ));
    }
    Ok(())
}

/// The publishers' subjects must be ones their streams capture (`options::capture`): checked here
/// on the configuration, before anything connects or a stream is created.
pub(super) fn check_captured(streams: &[StreamConfig], publish: &RequestOptions) -> Result<()> {
    super::capture::check_publish(publish, |k| {
        streams
            .get(k)
            .map(|s| (s.name.as_str(), s.subjects.as_slice()))
    })
}
