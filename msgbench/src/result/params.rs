//! A run's parameters, as its scenario typed them. Each scenario has a serde struct of its own
//! (the result file's `params`, described per scenario in the schema), and says in words what
//! the run was (the first line of the text output). The result holds it behind
//! [`ScenarioParams`], so this leaf knows no scenario; a reader that needs a field asks for
//! the scenario's own type ([`Params::get`]) instead of looking up a key by name.

use std::any::Any;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

/// What a scenario's parameters give every reader of a result.
pub trait ScenarioParams: Describe + fmt::Debug + Send + Sync + 'static {
    /// The parameters as the result file holds them.
    fn to_value(&self) -> Value;
    fn clone_box(&self) -> Box<dyn ScenarioParams>;
    fn as_any(&self) -> &dyn Any;
}

/// How a scenario's parameters read in the text output; with serde, what makes them
/// [`ScenarioParams`]. The text output asks these instead of naming scenarios.
pub trait Describe {
    /// The run in words: "2 pubs, 1 sub; 16 B messages; 1,000,000 per publisher".
    fn shape(&self) -> String;
    /// The first line: what ran, against what, in words.
    fn first_line(&self, scenario: &str, server: &crate::result::ServerMeta) -> String {
        let mut embedded = if server.embedded { ", embedded" } else { "" }.to_string();
        for s in server.config.iter().flat_map(|c| &c.settings) {
            embedded.push_str(&format!(", {}={}", s.key, s.value));
        }
        format!(
            "msgbench {scenario} against {} (nats-server {}{embedded}): {}",
            server.url,
            server.version,
            self.shape()
        )
    }
    /// What run `r` was against, in a few words ("nats-server 2.15.2").
    fn target(&self, r: &crate::result::RunResult) -> String {
        format!("nats-server {}", r.server.version)
    }
    /// The headline throughput's name ("NATS Core publisher stats").
    fn title(&self) -> &'static str {
        "NATS Pub/Sub stats"
    }
    /// A role's line under the headline, when there are several ("Acks").
    fn role_name(&self, role: &str) -> &'static str {
        if role == "pub" {
            "Pub stats"
        } else {
            "Sub stats"
        }
    }
    /// What a role's messages are, as the text, the report and the live page name the series:
    /// "publishes" and "deliveries" by default, "acknowledgements" for JetStream's replies.
    fn role_counts(&self, role: &str) -> &'static str {
        default_counts(role)
    }
    /// What a latency table of one column times, for `count` of them ("Latency from publish
    /// to PubAck, 100 publishes:"), with `untimed` (what was left out, in words) where it
    /// applies, and the column's name; `None` for a round trip.
    fn latency_heading(&self, _count: u64, _untimed: &str) -> Option<(String, &'static str)> {
        None
    }
    /// Why a run that could time nothing did not, when there is something to say.
    fn no_latency(&self) -> Option<&'static str> {
        None
    }
    /// The latency warm-up, for a scenario that times every message it receives but those
    /// due in it; `None` for one that does not.
    fn warmup_secs(&self) -> Option<f64> {
        None
    }
    /// The keepalive interval, for the hint after a ping timeout.
    fn ping_interval_secs(&self) -> Option<f64> {
        None
    }
    /// What a role's clients are called, together and one by one, where many are summarised
    /// ("consumers", "consumer"); by default publishers and subscribers.
    fn client_names(&self, role: &str) -> (&'static str, &'static str) {
        if role == "pub" {
            ("publishers", "pub")
        } else {
            ("subscribers", "sub")
        }
    }
    /// The scenario's own account of the run in the text output, after the common figures:
    /// by default the delivery accounting, which `delivery` writes. A scenario may write its
    /// own in its place (gRPC's calls by status), or follow it with what only it measures
    /// (JetStream's reconciliation with the stream).
    fn account(
        &self,
        o: &mut String,
        r: &crate::result::RunResult,
        delivery: &dyn Fn(&mut String),
    ) {
        let _ = r;
        delivery(o);
    }
    /// Whether [`Describe::account`] is the whole report after the first line: a scenario
    /// whose load is not messages (conns) has no throughput, latency or delivery to show.
    fn section_only(&self) -> bool {
        false
    }
}

/// The series a role is by default: publishers' publishes, subscribers' deliveries.
pub fn default_counts(role: &str) -> &'static str {
    if role == "pub" {
        "publishes"
    } else {
        "deliveries"
    }
}

impl<P> ScenarioParams for P
where
    P: Describe + Serialize + Clone + fmt::Debug + Send + Sync + 'static,
{
    fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("parameters serialise")
    }

    fn clone_box(&self) -> Box<dyn ScenarioParams> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Parameters that came as JSON from elsewhere (a driver's run in `compare`, a test), with no
/// words of their own.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct Untyped(pub Value);

impl Describe for Untyped {
    fn shape(&self) -> String {
        String::new()
    }
}

/// A result's `params`.
#[derive(Debug)]
pub struct Params(Box<dyn ScenarioParams>);

impl Params {
    pub fn of(p: impl ScenarioParams) -> Self {
        Self(Box::new(p))
    }

    /// The scenario's own parameters, when they are of type `P`.
    pub fn get<P: 'static>(&self) -> Option<&P> {
        self.0.as_any().downcast_ref::<P>()
    }

    /// How the parameters read in the text output.
    pub fn describe(&self) -> &dyn Describe {
        self.0.as_ref()
    }

    pub fn to_value(&self) -> Value {
        self.0.to_value()
    }
}

impl Clone for Params {
    fn clone(&self) -> Self {
        Self(self.0.clone_box())
    }
}

impl Default for Params {
    fn default() -> Self {
        Self::of(Untyped(Value::Object(serde_json::Map::new())))
    }
}

impl Serialize for Params {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.to_value().serialize(s)
    }
}

impl From<Value> for Params {
    fn from(v: Value) -> Self {
        Self::of(Untyped(v))
    }
}

impl<P: ScenarioParams> From<P> for Params {
    fn from(p: P) -> Self {
        Self::of(p)
    }
}

impl super::RunResult {
    /// Names each side's series by what it counts, as the scenario's parameters say: a
    /// `js pub` run's replies are acknowledgements, not a subscriber's deliveries.
    pub fn name_roles(&mut self) {
        let words = self.params.describe();
        let named: Vec<(&'static str, &'static str)> = self
            .by_role
            .keys()
            .map(|role| (*role, words.role_counts(role)))
            .collect();
        for (role, counts) in named {
            if let Some(s) = self.by_role.get_mut(role) {
                s.counts = counts;
            }
        }
    }
}
