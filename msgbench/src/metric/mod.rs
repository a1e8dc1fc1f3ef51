//! The named figures of a result (`p99`, `msgs_per_sec`, `lost`, `connect_p99`, …): one table
//! that says where each lives in the result document, its unit, which way is better, and which
//! family of scenarios produces it ([`Family`]: messages, or connections). Gates judge them,
//! `--runs` summarises them across runs, and `diff` compares them between two files, so all
//! three read a figure the same way: from the JSON form of the result, which is also what a
//! saved file holds (`diff` has nothing else to read, so a typed reader beside it would be a
//! second path that could disagree with it).
//!
//! A scenario says which figures it produces (`Runnable::measures`), so a gate on a figure it
//! cannot produce is refused before the run, not failed after it.

pub mod runs;

use serde_json::Value;

/// What a metric measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A reported percentile of the (corrected) latency, by its key ("99.9").
    Percentile(&'static str),
    LatencyMin,
    LatencyMax,
    LatencyMean,
    MsgsPerSec,
    BytesPerSec,
    Msgs,
    Sent,
    Received,
    Lost,
    Duplicated,
    Reordered,
    /// Every counted error kind together.
    Errors,
    /// Percent by which a paced run's achieved rate fell short of its target.
    ShortfallPct,
    /// A percentile of the connections' whole first connect (TCP to PONG, and the subscription
    /// when asked), by its field in the `conns` section (`p99_us`).
    Connect(&'static str),
    ConnectsPerSec,
    /// Connections that came up at least once.
    Opened,
    /// Connections that never came up.
    Failed,
    /// Checks a subscribed connection should have received and did not, less those a restart
    /// excused.
    Missed,
    /// Connections a `--fault restart` cut.
    HerdLost,
    /// Cut connections not back when the hold ended.
    NeverBack,
    /// Time from the kill until a share of the cut connections was back, by its field in the
    /// herd (`to_99pct_ms`).
    Back(&'static str),
    /// The servers' CPU per message of the run (`server_side.cpu_ns_per_msg`).
    ServerCpuPerMsg,
    /// Events the servers' samples showed (`server_side.events`).
    ServerEvents,
}

/// Which scenarios produce a metric: those whose load is messages, or `conns`, whose load is
/// connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Messages,
    Connections,
}

impl Family {
    /// The family of the scenario a result document comes from: a `conns` section says
    /// connections.
    pub fn of_doc(doc: &Value) -> Family {
        if doc.get("conns").is_some_and(|c| !c.is_null()) {
            Family::Connections
        } else {
            Family::Messages
        }
    }
}

/// The percentiles every latency result reports, in order.
pub const PERCENTILES: [(&str, f64); 9] = [
    ("10", 10.0),
    ("50", 50.0),
    ("75", 75.0),
    ("90", 90.0),
    ("99", 99.0),
    ("99.9", 99.9),
    ("99.99", 99.99),
    ("99.999", 99.999),
    ("100", 100.0),
];

/// One named figure of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric(Kind);

const PLAIN: [(&str, Kind); 29] = [
    ("min", Kind::LatencyMin),
    ("max", Kind::LatencyMax),
    ("mean", Kind::LatencyMean),
    ("msgs_per_sec", Kind::MsgsPerSec),
    ("bytes_per_sec", Kind::BytesPerSec),
    ("msgs", Kind::Msgs),
    ("sent", Kind::Sent),
    ("received", Kind::Received),
    ("lost", Kind::Lost),
    ("duplicated", Kind::Duplicated),
    ("reordered", Kind::Reordered),
    ("errors", Kind::Errors),
    ("shortfall_pct", Kind::ShortfallPct),
    ("connect_p50", Kind::Connect("p50_us")),
    ("connect_p90", Kind::Connect("p90_us")),
    ("connect_p99", Kind::Connect("p99_us")),
    ("connect_p99.9", Kind::Connect("p999_us")),
    ("connect_max", Kind::Connect("max_us")),
    ("connects_per_sec", Kind::ConnectsPerSec),
    ("opened", Kind::Opened),
    ("failed", Kind::Failed),
    ("missed", Kind::Missed),
    ("herd_lost", Kind::HerdLost),
    ("never_back", Kind::NeverBack),
    ("back_p50", Kind::Back("to_50pct_ms")),
    ("back_p99", Kind::Back("to_99pct_ms")),
    ("back_max", Kind::Back("to_100pct_ms")),
    ("server_cpu_per_msg", Kind::ServerCpuPerMsg),
    ("server_events", Kind::ServerEvents),
];

impl Metric {
    /// Every metric, percentiles first.
    pub fn all() -> impl Iterator<Item = Metric> {
        PERCENTILES
            .iter()
            .map(|(k, _)| Metric(Kind::Percentile(k)))
            .chain(PLAIN.iter().map(|(_, k)| Metric(*k)))
    }

    /// The metrics scenarios of `family` produce, percentiles first.
    pub fn of(family: Family) -> Vec<Metric> {
        Metric::all().filter(|m| m.produced_by(family)).collect()
    }

    /// Whether scenarios of `family` produce this metric (`errors`: both families).
    pub fn produced_by(self, family: Family) -> bool {
        let conns = matches!(
            self.0,
            Kind::Connect(_)
                | Kind::ConnectsPerSec
                | Kind::Opened
                | Kind::Failed
                | Kind::Missed
                | Kind::HerdLost
                | Kind::NeverBack
                | Kind::Back(_)
        );
        matches!(self.0, Kind::Errors | Kind::ServerEvents)
            || conns == (family == Family::Connections)
    }

    /// `metrics` named as a flag's error line lists them: the percentiles as one range.
    pub fn list(metrics: &[Metric]) -> String {
        let pcts = metrics
            .iter()
            .filter(|m| matches!(m.0, Kind::Percentile(_)))
            .count();
        let mut names: Vec<String> = Vec::new();
        if pcts > 0 {
            let first = metrics.iter().find(|m| matches!(m.0, Kind::Percentile(_)));
            let last = metrics.iter().rfind(|m| matches!(m.0, Kind::Percentile(_)));
            if let (Some(a), Some(b)) = (first, last) {
                names.push(if pcts > 1 {
                    format!("{}…{}", a.name(), b.name())
                } else {
                    a.name()
                });
            }
        }
        names.extend(
            metrics
                .iter()
                .filter(|m| !matches!(m.0, Kind::Percentile(_)))
                .map(|m| m.name()),
        );
        names.join(", ")
    }

    /// The metric called `name`.
    ///
    /// # Errors
    /// Which names exist, for the flag's error line.
    pub fn parse(name: &str) -> Result<Self, String> {
        if let Some((_, k)) = PLAIN.iter().find(|(n, _)| *n == name) {
            return Ok(Metric(*k));
        }
        if let Some(key) = name.strip_prefix('p') {
            return match PERCENTILES.iter().find(|(k, _)| *k == key) {
                Some((k, _)) => Ok(Metric(Kind::Percentile(k))),
                None => {
                    let known: Vec<String> =
                        PERCENTILES.iter().map(|(k, _)| format!("p{k}")).collect();
                    Err(format!(
                        "'{name}' is not a reported percentile (use {})",
                        known.join(", ")
                    ))
                }
            };
        }
        // The list comes from the table, so a new metric can't be left out of it.
        let plain: Vec<&str> = PLAIN.iter().map(|(n, _)| *n).collect();
        Err(format!(
            "unknown metric '{name}' (use p50…p100, {})",
            plain.join(", ")
        ))
    }

    /// The name users type.
    pub fn name(self) -> String {
        match self.0 {
            Kind::Percentile(k) => format!("p{k}"),
            k => PLAIN
                .iter()
                .find(|(_, p)| *p == k)
                .map_or_else(String::new, |(n, _)| (*n).to_string()),
        }
    }

    /// Whether the figure is a time, in nanoseconds: every latency, and the servers' CPU per
    /// message. A limit on one is written as a duration (`2us`) and its value shown as one.
    pub fn is_duration(self) -> bool {
        self.is_latency() || self.0 == Kind::ServerCpuPerMsg
    }

    /// Latency metrics are in nanoseconds: what an SLO on the service's latency bounds.
    pub fn is_latency(self) -> bool {
        matches!(
            self.0,
            Kind::Percentile(_)
                | Kind::LatencyMin
                | Kind::LatencyMax
                | Kind::LatencyMean
                | Kind::Connect(_)
                | Kind::Back(_)
        )
    }

    /// Whether a larger value is an improvement (rates), or a worse result (latency, loss,
    /// errors). Plain counts of messages are neither; they read as "more".
    pub fn higher_is_better(self) -> bool {
        matches!(
            self.0,
            Kind::MsgsPerSec
                | Kind::BytesPerSec
                | Kind::Msgs
                | Kind::Sent
                | Kind::Received
                | Kind::ConnectsPerSec
                | Kind::Opened
        )
    }

    /// The metric's value in a result document: the median over its runs when it has several
    /// (`--runs`), else the run's own figure.
    ///
    /// # Errors
    /// The reason the document has no such figure (no latency measured, a count not kept).
    pub fn read(self, doc: &Value) -> Result<f64, &'static str> {
        let values = self.values(doc)?;
        Ok(crate::stats::significance::median(&values))
    }

    /// The metric's value in each run of a result document, in run order: one value for a
    /// single run.
    ///
    /// # Errors
    /// As [`Metric::read`].
    pub fn values(self, doc: &Value) -> Result<Vec<f64>, &'static str> {
        let per_run = doc
            .pointer(&format!("/runs/metrics/{}/values", self.name()))
            .and_then(Value::as_array);
        match per_run {
            Some(vs) => Ok(vs.iter().filter_map(Value::as_f64).collect()),
            // A result with runs that lacks this metric: some run did not measure it.
            None if doc.get("runs").is_some_and(|r| !r.is_null()) => {
                self.read_one(doc).and(Err("not measured in every run"))
            }
            None => self.read_one(doc).map(|v| vec![v]),
        }
    }

    /// The metric as one run's own sections give it (the representative run's, in a result
    /// with several).
    ///
    /// # Errors
    /// As [`Metric::read`].
    pub fn read_one(self, doc: &Value) -> Result<f64, &'static str> {
        // A conns result has throughput and delivery sections, all zero: its load is
        // connections, so those zeros are not figures of it.
        if !self.produced_by(Family::of_doc(doc)) {
            return Err("not a figure of this scenario");
        }
        let num = |ptr: &str| doc.pointer(ptr).and_then(Value::as_f64);
        let lat = |field: &str| {
            if doc.get("latency").is_none_or(Value::is_null) {
                return Err("this run measured no latency");
            }
            // Between agents, a figure below the clock offsets' uncertainty is not measured.
            let figure = field.trim_start_matches("percentiles_ns/");
            let below = doc
                .pointer("/latency/below_clock_uncertainty/figures")
                .and_then(Value::as_array)
                .is_some_and(|f| f.iter().any(|v| v.as_str() == Some(figure)));
            if below {
                return Err("below the clock offset's uncertainty between agents");
            }
            num(&format!("/latency/{field}")).ok_or("this run measured no latency")
        };
        let counted = |ptr: &str| num(ptr).ok_or("not counted in this run");
        // A delivery count the run could not take is null: a publisher alone cannot count
        // arrivals, so neither what arrived nor what was lost.
        let arrivals = |ptr: &str| {
            num(ptr).ok_or(if doc.pointer("/by_role/sub").is_none() {
                "this run has no subscriber of its own to count arrivals"
            } else {
                "not counted in this run"
            })
        };
        match self.0 {
            Kind::Percentile(k) => lat(&format!("percentiles_ns/{k}")),
            Kind::LatencyMin => lat("min_ns"),
            Kind::LatencyMax => lat("max_ns"),
            Kind::LatencyMean => lat("mean_ns"),
            Kind::MsgsPerSec => counted("/throughput/msgs_per_sec"),
            Kind::BytesPerSec => counted("/throughput/bytes_per_sec"),
            Kind::Msgs => counted("/throughput/msgs"),
            Kind::Sent => counted("/delivery/sent"),
            Kind::Received => arrivals("/delivery/received"),
            Kind::Lost => arrivals("/delivery/lost"),
            Kind::Duplicated => arrivals("/delivery/duplicated"),
            Kind::Reordered => arrivals("/delivery/reordered"),
            Kind::ShortfallPct => num("/pacing/shortfall_pct").ok_or("this run had no target rate"),
            Kind::ServerCpuPerMsg => {
                num("/server_side/cpu_ns_per_msg").ok_or(if doc.pointer("/server_side").is_none() {
                    "no server was sampled in this run (--server-monitor)"
                } else {
                    "no reading of every server's CPU came with messages moving"
                })
            }
            Kind::ServerEvents => {
                let side = (doc.get("server_side").filter(|v| !v.is_null()))
                    .ok_or("no server was sampled in this run (--server-monitor)")?;
                // Events are counted only where every server was read: one whose monitor never
                // answered had events nobody saw.
                let all_read = (side.get("servers").and_then(Value::as_array))
                    .is_some_and(|s| s.iter().all(|s| s["answered"].as_u64() > Some(0)));
                if !all_read {
                    return Err("a server's monitor never answered in this run");
                }
                (side.get("events").and_then(Value::as_array))
                    .map(|e| e.len() as f64)
                    .ok_or("no server was sampled in this run (--server-monitor)")
            }
            Kind::Errors => doc
                .get("errors")
                .and_then(Value::as_object)
                // An empty sum of floats is -0.0; `+ 0.0` makes it the 0 it is.
                .map(|m| m.values().filter_map(Value::as_f64).sum::<f64>() + 0.0)
                .ok_or("not counted in this run"),
            k => read_conns(k, doc),
        }
    }
}

/// A `conns` figure: from its section, latency in nanoseconds like every other.
fn read_conns(k: Kind, doc: &Value) -> Result<f64, &'static str> {
    let c = doc
        .get("conns")
        .filter(|c| !c.is_null())
        .ok_or("not a conns run")?;
    let num = |ptr: &str| c.pointer(ptr).and_then(Value::as_f64);
    let herd = |field: &str| {
        let h = c
            .get("herd")
            .filter(|h| !h.is_null())
            .ok_or("this run had no --fault restart")?;
        h.get(field)
            .and_then(Value::as_f64)
            .ok_or(if field.starts_with("to_") {
                "not that many cut connections were back within the hold"
            } else {
                "not counted in this run"
            })
    };
    match k {
        Kind::Connect(field) => num(&format!("/connect_latency/total/{field}"))
            .map(|us| us * 1e3)
            .ok_or("no connection came up"),
        Kind::ConnectsPerSec => {
            num("/connects_per_sec").ok_or("too few connections came up to time a rate")
        }
        Kind::Opened => num("/connected").ok_or("not counted in this run"),
        Kind::Failed => num("/never_connected").ok_or("not counted in this run"),
        Kind::Missed => match (num("/checks/missed"), num("/checks/excused_by_fault")) {
            (Some(m), Some(e)) => Ok(m - e),
            _ => Err("this run had no checks (--subscribe own or shared, --check-every)"),
        },
        Kind::HerdLost => herd("lost"),
        Kind::NeverBack => herd("never_back"),
        Kind::Back(field) => {
            if herd("lost")? == 0.0 {
                return Err("the restart cut no connection");
            }
            herd(field).map(|ms| ms * 1e6)
        }
        _ => Err("not counted in this run"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_name_parses_back_to_its_metric() {
        for m in Metric::all() {
            assert_eq!(Metric::parse(&m.name()), Ok(m), "{}", m.name());
        }
        assert_eq!(Metric::all().count(), PERCENTILES.len() + PLAIN.len());
        assert!(Metric::parse("p95")
            .unwrap_err()
            .contains("not a reported percentile"));
        assert!(Metric::parse("speed")
            .unwrap_err()
            .contains("unknown metric"));
    }

    #[test]
    fn figures_are_read_from_the_document_or_say_why_not() {
        let doc = json!({
            "throughput": {"msgs": 10, "msgs_per_sec": 5.0, "bytes_per_sec": 80.0},
            "delivery": {"sent": 10, "received": 9, "lost": 1, "duplicated": null},
            "errors": {"slow_consumer": 2, "io": 1},
            "latency": {"min_ns": 7, "max_ns": 90, "mean_ns": 30.5,
                        "percentiles_ns": {"50": 20, "99.9": 88}}
        });
        let read = |n: &str| Metric::parse(n).unwrap().read(&doc);
        assert_eq!(read("msgs_per_sec"), Ok(5.0));
        assert_eq!(read("p99.9"), Ok(88.0));
        assert_eq!(read("mean"), Ok(30.5));
        assert_eq!(read("lost"), Ok(1.0));
        assert_eq!(read("errors"), Ok(3.0));
        assert_eq!(
            read("duplicated"),
            Err("this run has no subscriber of its own to count arrivals")
        );
        // With runs, the median of the runs' values; the top-level figure is one run's.
        let mut runs = doc.clone();
        runs["runs"] = json!({"metrics": {"msgs_per_sec": {"values": [4.0, 9.0, 6.0]}}});
        assert_eq!(Metric::parse("msgs_per_sec").unwrap().read(&runs), Ok(6.0));
        assert_eq!(
            Metric::parse("msgs_per_sec").unwrap().values(&runs),
            Ok(vec![4.0, 9.0, 6.0])
        );
        assert_eq!(
            Metric::parse("msgs_per_sec").unwrap().read_one(&runs),
            Ok(5.0)
        );
        assert_eq!(
            Metric::parse("lost").unwrap().read(&runs),
            Err("not measured in every run")
        );
        // Between agents, a figure the clocks cannot resolve is not measured.
        let agents = json!({"latency": {"min_ns": 1, "max_ns": 900_000, "mean_ns": 300_000.0,
            "percentiles_ns": {"50": 1, "99": 800_000},
            "below_clock_uncertainty": {"uncertainty_ns": 250_000, "figures": ["min_ns", "50"]}}});
        let read = |n: &str| Metric::parse(n).unwrap().read(&agents);
        assert_eq!(
            read("p50"),
            Err("below the clock offset's uncertainty between agents")
        );
        assert_eq!(
            read("min"),
            Err("below the clock offset's uncertainty between agents")
        );
        assert_eq!(read("p99"), Ok(800_000.0));
        let no_latency = json!({"throughput": {"msgs_per_sec": 1.0}, "latency": null});
        assert_eq!(
            Metric::parse("p50").unwrap().read(&no_latency),
            Err("this run measured no latency")
        );
    }

    #[test]
    fn conns_figures_come_from_its_section_and_message_figures_do_not() {
        let conns = |checks: Value, herd: Value| {
            json!({
                "throughput": {"msgs": 0, "msgs_per_sec": 0.0, "bytes_per_sec": 0.0},
                "delivery": {"sent": 0, "received": 0, "lost": 0},
                "errors": {},
                "latency": null,
                "conns": {"connected": 98, "never_connected": 2, "connects_per_sec": 490.5,
                          "connect_latency": {"total": {"p50_us": 800.0, "p99_us": 2500.0,
                                                        "max_us": 4000.0}},
                          "checks": checks, "herd": herd}
            })
        };
        let doc = conns(
            json!({"missed": 7, "excused_by_fault": 5}),
            json!({"lost": 98, "never_back": 1, "to_50pct_ms": 600.0, "to_99pct_ms": null}),
        );
        let read = |n: &str, d: &Value| Metric::parse(n).unwrap().read(d);
        // Connect times in nanoseconds, like every latency figure; herd times too.
        assert_eq!(read("connect_p99", &doc), Ok(2.5e6));
        assert_eq!(read("connect_max", &doc), Ok(4e6));
        assert_eq!(read("opened", &doc), Ok(98.0));
        assert_eq!(read("failed", &doc), Ok(2.0));
        assert_eq!(read("connects_per_sec", &doc), Ok(490.5));
        assert_eq!(read("missed", &doc), Ok(2.0), "the restart excused 5 of 7");
        assert_eq!(read("herd_lost", &doc), Ok(98.0));
        assert_eq!(read("back_p50", &doc), Ok(6e8));
        assert_eq!(
            read("back_p99", &doc),
            Err("not that many cut connections were back within the hold")
        );
        assert_eq!(read("errors", &doc), Ok(0.0));
        assert!(read("errors", &doc).unwrap().is_sign_positive());
        // The zeros of a conns result's message sections are not its figures.
        assert_eq!(
            read("msgs_per_sec", &doc),
            Err("not a figure of this scenario")
        );
        assert_eq!(read("lost", &doc), Err("not a figure of this scenario"));
        let bare = conns(Value::Null, Value::Null);
        assert!(read("missed", &bare).unwrap_err().contains("no checks"));
        assert!(read("back_p99", &bare)
            .unwrap_err()
            .contains("--fault restart"));
        let none_cut = conns(Value::Null, json!({"lost": 0, "to_99pct_ms": null}));
        assert_eq!(
            read("back_p99", &none_cut),
            Err("the restart cut no connection")
        );
        // And a message result has no conns figures.
        let msgs = json!({"throughput": {"msgs_per_sec": 5.0}, "conns": null});
        assert_eq!(
            read("connect_p99", &msgs),
            Err("not a figure of this scenario")
        );
        assert_eq!(read("msgs_per_sec", &msgs), Ok(5.0));
    }

    #[test]
    fn each_family_has_its_figures_and_errors_belongs_to_both() {
        let msgs = Metric::of(Family::Messages);
        let conns = Metric::of(Family::Connections);
        let errors = Metric::parse("errors").unwrap();
        let events = Metric::parse("server_events").unwrap();
        assert!(msgs.contains(&errors) && conns.contains(&errors));
        assert!(msgs.contains(&events) && conns.contains(&events));
        assert_eq!(msgs.len() + conns.len(), Metric::all().count() + 2);
        let cpu = Metric::parse("server_cpu_per_msg").unwrap();
        assert!(msgs.contains(&cpu) && !conns.contains(&cpu));
        assert!(!conns.contains(&Metric::parse("p99").unwrap()));
        assert!(!msgs.contains(&Metric::parse("connect_p99").unwrap()));
        assert!(Metric::parse("connect_p99").unwrap().is_latency());
        assert!(Metric::parse("opened").unwrap().higher_is_better());
        assert!(Metric::list(&msgs).starts_with("p10…p100, min, max, mean, msgs_per_sec"));
        assert!(Metric::list(&conns).starts_with("errors, connect_p50"));
    }

    #[test]
    fn the_servers_figures_are_read_from_their_section_or_say_why_not() {
        let read = |n: &str, doc: &Value| Metric::parse(n).unwrap().read(doc);
        let sampled = json!({"server_side": {"servers": [], "cpu_ns_per_msg": 850.5,
                             "events": [{"kind": "slow_consumer"}, {"kind": "route_down"}]}});
        assert_eq!(read("server_cpu_per_msg", &sampled), Ok(850.5));
        assert_eq!(read("server_events", &sampled), Ok(2.0));
        let unread = json!({"server_side": {"servers": [], "events": [], "cpu_ns_per_msg": null}});
        assert_eq!(
            read("server_events", &unread),
            Ok(0.0),
            "sampled, and nothing seen"
        );
        assert_eq!(
            read("server_cpu_per_msg", &unread),
            Err("no reading of every server's CPU came with messages moving")
        );
        // A server whose monitor never answered had events nobody saw: not 0.
        let never = json!({"server_side": {"events": [], "cpu_ns_per_msg": null, "servers": [
            {"name": "n1", "answered": 12}, {"name": "n2", "answered": 0}]}});
        assert_eq!(
            read("server_events", &never),
            Err("a server's monitor never answered in this run")
        );
        let none = json!({"throughput": {"msgs_per_sec": 5.0}});
        for n in ["server_cpu_per_msg", "server_events"] {
            assert_eq!(
                read(n, &none),
                Err("no server was sampled in this run (--server-monitor)"),
                "{n}"
            );
        }
        // A time, written and shown as one, but not the service's latency: no latency SLO.
        let cpu = Metric::parse("server_cpu_per_msg").unwrap();
        assert!(cpu.is_duration() && !cpu.is_latency() && !cpu.higher_is_better());
    }

    #[test]
    fn direction_follows_the_unit() {
        let better_high = |n: &str| Metric::parse(n).unwrap().higher_is_better();
        assert!(better_high("msgs_per_sec") && better_high("bytes_per_sec"));
        assert!(!better_high("p99") && !better_high("lost") && !better_high("errors"));
    }
}
