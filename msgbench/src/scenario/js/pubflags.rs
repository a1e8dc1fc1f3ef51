//! The `js pub` flags that shape how its publishers send: the window of unacknowledged
//! publishes each mode keeps, fast mode's flow, the message ids of `--dedup`, the persist
//! mode the stream is asked for, and sizes and subjects drawn per message (`--size` as a
//! distribution, `--subject` as a template).

use super::args::JsPubArgs;
use crate::cli::{JsPubMode, Persist, Storage};
use crate::engine::jsfast::{FastFlow, MAX_FLOW};
use crate::error::{Error, Result};
use crate::options::check_subject;
use crate::scenario::request::{DrawnSizes, DrawnSubjects};
use crate::stats::draw::{Sizes, Template};
use crate::wire::stamp;

/// The server's limit on atomic batches in flight per stream.
const MAX_BATCHES_PER_STREAM: u64 = 50;
/// Unacknowledged publishes a publisher keeps by default in async mode.
pub(super) const DEFAULT_WINDOW: u64 = 256;

/// `--persist async` where the server allows it: file storage, one replica, no atomic batches.
pub(super) fn check_persist(
    persist: Persist,
    storage: Storage,
    replicas: u64,
    mode: JsPubMode,
) -> Result<()> {
    if persist == Persist::Default {
        return Ok(());
    }
    let why = if storage != Storage::File {
        "needs --storage file (a memory stream has no file to write later)"
    } else if replicas > 1 {
        "needs --replicas 1 (the server does not persist a replicated stream asynchronously)"
    } else if mode == JsPubMode::Batch {
        "cannot be used with --mode batch (the server refuses atomic batches on such a stream)"
    } else {
        return Ok(());
    };
    Err(Error::flag("--persist", persist.as_str(), why))
}

/// The stream configuration's `persist_mode`: empty (not sent) for the server's default.
pub(super) fn persist_mode(persist: Persist) -> String {
    match persist {
        Persist::Default => String::new(),
        Persist::Async => "async".into(),
    }
}

/// `--batch` and `--max-outstanding-acks` as fast mode's flow; `None` in other modes, where
/// `--max-outstanding-acks` is refused.
pub(super) fn fast_flow(a: &JsPubArgs, batch: u64) -> Result<Option<FastFlow>> {
    if a.mode != JsPubMode::Fast {
        if let Some(n) = a.max_outstanding_acks {
            return Err(Error::flag(
                "--max-outstanding-acks",
                &n.to_string(),
                "applies to --mode fast",
            ));
        }
        return Ok(None);
    }
    if !(1..=MAX_FLOW).contains(&batch) {
        return Err(Error::flag(
            "--batch",
            &batch.to_string(),
            format!(
                "must be 1 to {MAX_FLOW} in fast mode (the server acknowledges at least every \
                 {MAX_FLOW} messages)"
            ),
        ));
    }
    let outstanding = a.max_outstanding_acks.unwrap_or(2);
    if !(1..=u64::from(u16::MAX)).contains(&outstanding) {
        return Err(Error::flag(
            "--max-outstanding-acks",
            &outstanding.to_string(),
            format!("must be 1 to {}", u16::MAX),
        ));
    }
    Ok(Some(FastFlow {
        flow: batch as u16,
        outstanding: outstanding as u16,
    }))
}

/// The publishes each publisher keeps unacknowledged: one in sync mode, `--max-in-flight`
/// batches in batch mode (within the server's limit per stream), fast mode's flow window, and
/// `--max-in-flight` (256 by default) in async mode.
///
/// # Errors
/// [`Error::Usage`] naming the flag that does not apply to the mode, or is out of range.
pub(super) fn window(a: &JsPubArgs, fast: Option<FastFlow>) -> Result<u64> {
    Ok(match (a.mode, a.max_in_flight) {
        (JsPubMode::Sync, Some(n)) => {
            return Err(Error::flag(
                "--max-in-flight",
                &n.to_string(),
                "applies to --mode async or batch (sync waits for each acknowledgement)",
            ))
        }
        (JsPubMode::Sync, None) => 1,
        (JsPubMode::Fast, Some(n)) => {
            return Err(Error::flag(
                "--max-in-flight",
                &n.to_string(),
                "applies to --mode async or batch (fast mode's window is --batch × \
                 --max-outstanding-acks)",
            ))
        }
        (JsPubMode::Fast, None) => {
            let f = fast.expect("fast mode has its flow");
            if a.dedup {
                return Err(Error::Usage(
                    "--dedup applies to --mode sync, async or batch (fast mode sends no \
                     message ids)"
                        .into(),
                ));
            }
            if u64::from(a.clients) != a.streams {
                return Err(Error::flag(
                    "--clients",
                    &a.clients.to_string(),
                    format!(
                        "fast mode needs a stream per publisher (--streams {}): its \
                         acknowledgements count batch messages, not stream sequences",
                        a.clients
                    ),
                ));
            }
            u64::from(f.flow) * u64::from(f.outstanding)
        }
        (JsPubMode::Batch, n) => {
            let n = n.unwrap_or(1);
            let per_stream = u64::from(a.clients).div_ceil(a.streams) * n;
            if per_stream > MAX_BATCHES_PER_STREAM {
                return Err(Error::flag(
                    "--max-in-flight",
                    &n.to_string(),
                    format!(
                        "puts {per_stream} batches in flight on a stream; the server allows \
                         {MAX_BATCHES_PER_STREAM}"
                    ),
                ));
            }
            n
        }
        (_, n) => n.unwrap_or(DEFAULT_WINDOW),
    })
}

/// The message id prefix of `--dedup` (or `--msg-id-prefix`): none without them.
///
/// # Errors
/// [`Error::Usage`] naming `--msg-id-prefix` when it cannot be one.
pub(super) fn dedup(a: &JsPubArgs) -> Result<Option<String>> {
    Ok(match (&a.msg_id_prefix, a.dedup) {
        (Some(p), _) => {
            if p.is_empty() || p.len() > 64 || !p.bytes().all(|b| b.is_ascii_graphic() && b != b':')
            {
                return Err(Error::flag(
                    "--msg-id-prefix",
                    p,
                    "must be 1 to 64 printable characters without ':'",
                ));
            }
            Some(p.clone())
        }
        (None, true) => Some(format!("{:04x}", stamp::new_run_tag())),
        (None, false) => None,
    })
}

/// The seed of drawn sizes when `--seed` is not given.
const DEFAULT_SEED: u64 = 1;

/// `--size` as a distribution, drawn per message; `None` for a fixed size. Every draw is at
/// least the 8-byte message number, which the stream's read-back matches publishes by.
///
/// # Errors
/// [`Error::Usage`] naming `--size` (a histogram file that cannot be read, sizes below 8 B) or
/// `--seed` with a fixed size.
pub(super) fn drawn_sizes(a: &JsPubArgs) -> Result<Option<DrawnSizes>> {
    if a.size.fixed().is_some() {
        let template = Template::is_template(&a.target.subject) || !a.tokens.is_empty();
        return match a.seed {
            Some(seed) if !template => Err(Error::flag(
                "--seed",
                &seed.to_string(),
                "draws sizes and subjects, and --size is fixed and --subject no template; give \
                 --size as a distribution or --subject as a template",
            )),
            _ => Ok(None),
        };
    }
    let sizes = Sizes::build(&a.size, stamp::SEQ_LEN)
        .map_err(|why| Error::flag("--size", &a.size.to_string(), why))?;
    Ok(Some(DrawnSizes {
        spec: a.size.clone(),
        sizes,
        seed: a.seed.unwrap_or(DEFAULT_SEED),
    }))
}

/// `--subject` as a template with its `--token`s; `None` for a plain subject. The stream must
/// capture the template's wildcard (checked with the other subjects, `check_captured`).
///
/// # Errors
/// [`Error::Usage`] naming `--subject` or the `--token` at fault, or `--streams` (a write
/// flood's subjects are `SUBJECT.<k>`).
pub(super) fn drawn_subjects(a: &JsPubArgs) -> Result<Option<DrawnSubjects>> {
    let subject = &a.target.subject;
    if !Template::is_template(subject) && a.tokens.is_empty() {
        return Ok(None);
    }
    if a.streams > 1 {
        return Err(Error::flag(
            "--streams",
            &a.streams.to_string(),
            "spreads publishes over SUBJECT.<k>, and --subject is a template; give one or the \
             other",
        ));
    }
    let template = Template::build(subject, &a.tokens).map_err(|f| match f.token {
        Some(i) => Error::flag("--token", &a.tokens[i].to_string(), f.why),
        None => Error::flag("--subject", subject, f.why),
    })?;
    check_subject(&template.example(), false)
        .map_err(|why| Error::flag("--subject", subject, why))?;
    Ok(Some(DrawnSubjects {
        template,
        tokens: a.tokens.iter().map(ToString::to_string).collect(),
        seed: a.seed.unwrap_or(DEFAULT_SEED),
    }))
}
