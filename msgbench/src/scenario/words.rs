//! The words every scenario's first line is made of: who takes part, what each message is, and
//! how long the run lasts at what pace ("2 pubs, 1 sub; 16 B messages; for 5 s at 1,000
//! msgs/s"). One builder, so the scenarios say it alike.

use std::fmt::Write as _;

use crate::format::{counted, group};

/// How long a run lasts, and at what pace.
pub struct Pace<'a> {
    /// A count of `each`'s messages, or…
    pub msgs: Option<u64>,
    /// …a length.
    pub duration_secs: Option<f64>,
    /// Whose count it is: "publisher", "client", "service".
    pub each: &'a str,
    /// The aggregate target rate; 0 for as fast as possible.
    pub rate: f64,
    pub schedule: Option<&'a str>,
}

impl Pace<'_> {
    /// "1,000 per publisher at 5,000 msgs/s", "for 5 s on schedule step:…".
    pub fn words(&self) -> String {
        self.words_in("msgs/s")
    }

    /// As [`Pace::words`], with the rate in `unit` ("req/s" for a service's requests).
    pub fn words_in(&self, unit: &str) -> String {
        let mut s = match self.duration_secs {
            Some(d) => format!("for {d} s"),
            None => format!("{} per {}", group(self.msgs.unwrap_or(0)), self.each),
        };
        if let Some(schedule) = self.schedule {
            let _ = write!(s, " on schedule {schedule}");
        } else if self.rate > 0.0 {
            let _ = write!(s, " at {} {unit}", group(self.rate.round() as u64));
        }
        s
    }
}

/// What a first line adds for Poisson arrivals drawn under `seed` ("; Poisson arrivals (seed
/// 1)"), or nothing for fixed ones.
pub fn arrivals(seed: Option<u64>) -> String {
    seed.map_or(String::new(), |s| format!("; Poisson arrivals (seed {s})"))
}

/// "2 pubs, 1 sub; 16 B messages; 1,000 per publisher": the parties (those of none left out),
/// the message size where the run publishes, and the pace.
pub fn who_what_how_long(who: &[(u32, &str)], size: Option<usize>, pace: &Pace<'_>) -> String {
    let what = size.map(|size| format!("{} B messages", group(size as u64)));
    who_what_how_long_text(who, what.as_deref(), pace)
}

/// As [`who_what_how_long`], with the messages described in words ("sizes drawn from …").
pub fn who_what_how_long_text(who: &[(u32, &str)], what: Option<&str>, pace: &Pace<'_>) -> String {
    let who: Vec<String> = who
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, noun)| counted(u64::from(*n), noun))
        .collect();
    match what {
        Some(what) => format!("{}; {what}; {}", who.join(", "), pace.words()),
        None => format!("{}; {}", who.join(", "), pace.words()),
    }
}
