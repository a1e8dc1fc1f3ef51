//! Validated options of `pub`, `sub` and `pubsub`: how many publishers and subscribers, what is
//! published (size, payload, subject, headers) and for how long, checked against each other.

use std::time::Duration;

use serde::Serialize;

use super::args::{LoadArgs, StallArgs};
use crate::cli::ConnArgs;
use crate::engine::pace::{Pace, Stop};
use crate::error::{Error, Result};
use crate::options::conn;
use crate::options::{check_subject, pace, server_choice, ServerChoice};
use crate::stats::draw::{SizeDist, Sizes, Template};
use crate::wire::stamp::STAMP_LEN;

/// The seed of drawn sizes when `--seed` is not given.
pub const DEFAULT_SEED: u64 = 1;

/// Which of the three runs. The scenario code is one; this only names it and fixes its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ScenarioKind {
    Pub,
    Sub,
    Pubsub,
}

impl ScenarioKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ScenarioKind::Pub => "pub",
            ScenarioKind::Sub => "sub",
            ScenarioKind::Pubsub => "pubsub",
        }
    }
}

/// `sub` only listens: the flags that shape what is published have nothing to act on there.
fn refuse_publishing_flags(load: &LoadArgs) -> Result<()> {
    let typed = [
        ("--rate", load.pace.rate != 0.0),
        ("--rate-schedule", load.pace.rate_schedule.is_some()),
        ("--payload", load.payload.is_some()),
        ("--header", !load.headers.is_empty()),
        // 128 is the default; any other size was typed.
        ("--size", load.size != SizeDist::Fixed(128)),
        ("--seed", load.seed.is_some()),
        ("--token", !load.tokens.is_empty()),
        ("--arrivals", !load.pace.arrivals.is_fixed()),
        (
            "--subject (a template)",
            Template::is_template(&load.subject),
        ),
    ];
    match typed.iter().find(|(_, on)| *on) {
        Some((flag, _)) => Err(Error::Usage(format!(
            "{flag} shapes what is published, and `sub` publishes nothing; give it to the \
             publisher (`msgbench pub`, or `pubsub`)"
        ))),
        None => Ok(()),
    }
}

/// Everything one run needs, validated.
#[derive(Debug, Clone)]
pub struct Options {
    pub scenario: ScenarioKind,
    pub server: ServerChoice,
    pub conn: conn::ConnOptions,
    pub pubs: u32,
    pub subs: u32,
    pub stop: Stop,
    pub pace: Pace,
    /// Payload bytes per message (the stamp included); with drawn sizes, the largest.
    pub size: usize,
    /// Drawn sizes (a fixed size is `Sizes::Fixed`), with `--size` as typed and the seed.
    pub sizes: Sizes,
    pub size_spec: SizeDist,
    pub seed: u64,
    /// A fixed payload from `--payload`; when set, messages carry no stamp.
    pub payload: Option<Vec<u8>>,
    pub subject: String,
    /// `--token`s as given, with a template `subject`.
    pub tokens: Vec<String>,
    /// `subject` as a template, drawn per message.
    pub template: Option<Template>,
    /// `--multisubject`: the number of distinct subjects.
    pub multisubject: Option<u64>,
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
    pub start_timeout: Duration,
    pub allow_loss: bool,
    pub sub_stall: Option<(u64, Duration)>,
}

/// Who takes part in a run of one of the three scenarios, as its flags say: the one thing
/// that tells them apart.
pub struct Sides<'a> {
    pub scenario: ScenarioKind,
    pub pubs: u32,
    pub subs: u32,
    /// Subscribers' deliberate stalls (`sub` and `pubsub`).
    pub stall: Option<&'a StallArgs>,
    /// How long `sub` waits for the first message; the others wait `--timeout`.
    pub start_timeout: Option<Duration>,
}

/// The flag groups the three scenarios share.
pub struct Shared<'a> {
    pub load: &'a LoadArgs,
    pub conn: &'a ConnArgs,
}

impl Options {
    /// Builds options for a scenario from its parsed arguments.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the flag whose value is wrong or conflicts with another.
    pub fn new(sides: &Sides<'_>, flags: &Shared<'_>) -> Result<Self> {
        let Sides {
            scenario,
            pubs,
            subs,
            stall,
            start_timeout,
        } = *sides;
        let Shared { load, conn } = *flags;
        if scenario == ScenarioKind::Sub {
            refuse_publishing_flags(load)?;
        }
        if scenario == ScenarioKind::Pub && load.allow_loss {
            return Err(Error::Usage(
                "--allow-loss acts on loss, and `pub` counts none (it has no subscriber of its \
                 own); give it to `sub` or `pubsub`"
                    .into(),
            ));
        }
        let server = server_choice(conn)?;
        let (pace, schedule_stop) = pace(&load.pace)?;
        let stop = match (schedule_stop, load.pace.duration) {
            (Some(s), _) => s,
            (None, Some(d)) => Stop::For(d),
            (None, None) if load.msgs == 0 => {
                return Err(Error::flag("--msgs", "0", "must be at least 1"));
            }
            (None, None) => Stop::Count(load.msgs),
        };
        let payload = match &load.payload {
            Some(path) => Some(std::fs::read(path).map_err(|e| {
                Error::Usage(format!("cannot read --payload '{}': {e}", path.display()))
            })?),
            None => None,
        };
        let sizes = Sizes::build(&load.size, STAMP_LEN)
            .map_err(|why| Error::flag("--size", &load.size.to_string(), why))?;
        let template = template(load)?;
        if load.seed.is_some()
            && sizes.is_fixed()
            && template.is_none()
            && load.pace.arrivals.is_fixed()
        {
            return Err(Error::flag(
                "--seed",
                &load.seed.unwrap_or_default().to_string(),
                "draws sizes, subjects and arrivals, and --size is fixed, --subject no template \
                 and --arrivals fixed; give one of them drawn",
            ));
        }
        let seed = load.seed.unwrap_or(DEFAULT_SEED);
        let pace = crate::options::arrivals(pace, &load.pace, seed, stop, pubs)?;
        let size = payload.as_ref().map_or(sizes.max(), Vec::len);
        // A sub only listens, so wildcards are fine there; anyone who publishes needs a literal
        // (a template, any subject it draws).
        let literal = template
            .as_ref()
            .map_or(load.subject.clone(), Template::example);
        check_subject(&literal, scenario == ScenarioKind::Sub)
            .map_err(|why| Error::flag("--subject", &load.subject, why))?;
        if load.multisubject && load.multisubject_max == 0 {
            return Err(Error::flag("--multisubject-max", "0", "must be at least 1"));
        }
        let conn_args = conn;
        let conn = conn::ConnOptions::new(conn_args)?;
        if let Stop::For(length) = stop {
            conn.faults_within(conn_args, length)?;
        }
        if conn.fault.is_some() {
            match (scenario, &pace) {
                (ScenarioKind::Sub, _) => conn.no_fault("sub")?,
                (ScenarioKind::Pubsub, Pace::Unlimited) => {
                    return Err(Error::Usage(
                        "--fault in pubsub needs --rate: recovery is measured against a constant \
                         target rate"
                            .into(),
                    ))
                }
                _ => {}
            }
        }
        let headers = load
            .headers
            .iter()
            .map(|h| parse_header(h).map_err(|why| Error::flag("-H", h, why)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Options {
            scenario,
            server,
            conn,
            pubs,
            subs,
            stop,
            pace,
            size,
            sizes,
            size_spec: load.size.clone(),
            seed,
            payload,
            subject: load.subject.clone(),
            tokens: load.tokens.iter().map(ToString::to_string).collect(),
            template,
            multisubject: load.multisubject.then_some(load.multisubject_max),
            headers,
            timeout: load.timeout,
            start_timeout: start_timeout.unwrap_or(load.timeout),
            allow_loss: load.allow_loss,
            sub_stall: stall.and_then(|s| s.sub_stall),
        })
    }

    /// The seed of Poisson arrivals; `None` with fixed ones.
    pub fn arrivals_seed(&self) -> Option<u64> {
        self.pace.schedule().and_then(|s| s.poisson_seed())
    }

    /// The subject subscribers listen on.
    pub fn sub_subject(&self) -> String {
        match (self.multisubject, &self.template) {
            (Some(_), _) => format!("{}.*", self.subject),
            (None, Some(t)) => t.wildcard(),
            (None, None) => self.subject.clone(),
        }
    }

    /// The parameters as they go into a result, without secrets.
    pub fn params(&self) -> super::Params {
        let (msgs, duration_secs) = self.stop.as_params();
        super::Params {
            scenario: self.scenario,
            connection: self.conn.params(),
            pubs: self.pubs,
            subs: self.subs,
            msgs,
            duration_secs,
            size: if self.sizes.is_fixed() {
                self.size
            } else {
                self.sizes.mean().round() as usize
            },
            size_distribution: (!self.sizes.is_fixed()).then(|| super::SizeDistribution {
                spec: self.size_spec.to_string(),
                seed: self.seed,
                min: self.sizes.min(),
                max: self.sizes.max(),
                mean: self.sizes.mean(),
            }),
            subject: self.subject.clone(),
            arrivals: if self.arrivals_seed().is_some() {
                crate::cli::Arrivals::Poisson
            } else {
                crate::cli::Arrivals::Fixed
            },
            arrivals_seed: self.arrivals_seed(),
            subject_template: self.template.as_ref().map(|t| super::SubjectTemplate {
                wildcard: t.wildcard(),
                tokens: self.tokens.clone(),
                seed: self.seed,
            }),
            multisubject: self.multisubject,
            rate: self.pace.target_rate(),
            rate_schedule: self
                .pace
                .schedule()
                .filter(|s| !s.is_fixed())
                .map(ToString::to_string),
            payload_file: self.payload.is_some(),
            headers: self.headers.iter().map(|(k, _)| k.clone()).collect(),
            timeout_secs: self.timeout.as_secs_f64(),
            allow_loss: self.allow_loss,
            sub_stall: self.sub_stall.map(|(after_msgs, d)| super::SubStall {
                after_msgs,
                for_secs: d.as_secs_f64(),
            }),
        }
    }
}

/// `--subject` as a template with its `--token`s; `None` for a plain subject.
///
/// # Errors
/// [`Error::Usage`] naming `--subject` or the `--token` at fault: a token with no values, a
/// value no token of the subject uses, a malformed template, or one with `--multisubject`.
fn template(load: &LoadArgs) -> Result<Option<Template>> {
    if !Template::is_template(&load.subject) && load.tokens.is_empty() {
        return Ok(None);
    }
    if load.multisubject {
        return Err(Error::flag(
            "--subject",
            &load.subject,
            "a template draws its own subjects; --multisubject cannot be added to it",
        ));
    }
    Template::build(&load.subject, &load.tokens)
        .map(Some)
        .map_err(|f| match f.token {
            Some(i) => Error::flag("--token", &load.tokens[i].to_string(), f.why),
            None => Error::flag("--subject", &load.subject, f.why),
        })
}

fn parse_header(h: &str) -> std::result::Result<(String, String), String> {
    let (k, v) = h
        .split_once(':')
        .ok_or_else(|| "expected Key:Value".to_string())?;
    let (k, v) = (k.trim(), v.trim());
    // Header names are HTTP-style tokens; a CR or LF anywhere would break the header block.
    if k.is_empty() || !k.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
        return Err("the header name must be non-empty printable ASCII without ':'".into());
    }
    if v.bytes().any(|b| b == b'\r' || b == b'\n') {
        return Err("the header value cannot contain CR or LF".into());
    }
    Ok((k.to_string(), v.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        assert_eq!(
            parse_header("X-Id: 42").unwrap(),
            ("X-Id".to_string(), "42".to_string())
        );
        assert_eq!(parse_header("K:a:b").unwrap().1, "a:b");
        for bad in ["novalue", ":v", "a b:c", "k:v\r\nx"] {
            assert!(parse_header(bad).is_err(), "{bad}");
        }
    }
}
