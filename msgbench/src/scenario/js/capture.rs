//! Whether a JetStream stream captures the subjects a run publishes to.
//!
//! A publish to a subject no stream captures is answered by nobody, so every message of the
//! run would fail as `no_responders` and the run would measure nothing. This is found before
//! the load instead: from the options (before connecting), and again from the subjects the
//! server reports for the stream it created or found.

use crate::error::{Error, Result};
use crate::options::subject_matches as matches;
use crate::scenario::request::RequestOptions;

/// Checks that stream `stream`, capturing `filters`, captures `subject`.
///
/// # Errors
/// [`Error::Usage`] naming the subject and the stream's subjects.
pub fn check(stream: &str, filters: &[String], subject: &str) -> Result<()> {
    if filters.iter().any(|f| matches(f, subject)) {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "--subject '{subject}' is not captured by stream {stream} (subjects: {}): every \
         publish would fail with no_responders; give a --subject its subjects match",
        filters.join(", ")
    )))
}

/// Checks every subject `publish`'s clients send to against the stream each one targets;
/// `subjects_of(k)` gives target stream `k`'s name and subjects.
///
/// # Errors
/// As [`check`], for the first subject not captured.
pub fn check_publish<'a>(
    publish: &RequestOptions,
    subjects_of: impl Fn(usize) -> Option<(&'a str, &'a [String])>,
) -> Result<()> {
    for i in 0..publish.clients.max(1) as usize {
        let (mut subject, k) = publish.target_of(i);
        // Keyed publishes (KV) go to `<subject>.<key>`; any one key stands for the form. A
        // template's subjects are all its wildcard's: a stream covers them when a filter
        // matches the wildcard with its `*`s taken as tokens.
        if publish.keys.is_some() {
            subject.push_str(".0");
        }
        if let Some(t) = &publish.template {
            subject = t.template.wildcard();
        }
        if let Some((name, filters)) = subjects_of(k) {
            check(name, filters, &subject)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_as_nats_does() {
        for (filter, subject, want) in [
            ("a.b", "a.b", true),
            ("a.b", "a.c", false),
            ("a.b", "a.b.c", false),
            ("a.b.c", "a.b", false),
            ("a.*", "a.b", true),
            ("a.*", "a.b.c", false),
            ("a.*", "a", false),
            ("*.b", "a.b", true),
            ("a.>", "a.b", true),
            ("a.>", "a.b.c.d", true),
            // `>` needs at least one token.
            ("a.>", "a", false),
            (">", "x", true),
            (">", "x.y", true),
            ("*", "x.y", false),
            ("a.*.c.>", "a.b.c.d", true),
            ("a.*.c.>", "a.b.c", false),
            ("msgbench.js", "msgbench", false),
        ] {
            assert_eq!(matches(filter, subject), want, "{filter} ~ {subject}");
        }
    }

    #[test]
    fn the_refusal_names_the_subject_and_the_streams_subjects() {
        let filters = vec!["a.b".to_string(), "c.>".to_string()];
        check("S", &filters, "c.d.e").unwrap();
        let e = check("S", &filters, "msgbench.js").unwrap_err().to_string();
        assert!(
            e.contains("'msgbench.js'") && e.contains("stream S") && e.contains("a.b, c.>"),
            "{e}"
        );
    }
}
