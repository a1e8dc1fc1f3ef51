//! `msgbench capacity WORKLOAD.yaml`: how far a whole mix can grow. One factor scales every
//! class's rate; it doubles from `--start-scale` until a probe fails, then the bracket is
//! halved down to `--precision`, as a search over one scenario's rate is ([`Walk`]).
//!
//! Each probe runs every class together, each on the schedule `RATE×F@WARMUP,RATE×F@HOLD`,
//! and judges each class on its hold stage as a search judges its scenario: by the class's own
//! SLOs, and by whether msgbench kept its schedule, a subscriber kept up, the server answered.
//! A factor holds when every class held in every run. Where it failed, the first class that
//! failed is named, and why (the tool, a subscriber, the server, or an SLO): the answer to
//! "with our mix at 2× today's rate, does every class still meet its P99?".

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;

use super::doc::{interval, run_bracket, Confidence, Probe, LEVEL};
use super::judge::{classify, Outcome};
use super::{judge_probe, probe_plan, Walk, TOOL_RETRIES};
use crate::cli::{MixSearchArgs, OutputArgs, SearchArgs};
use crate::error::{exit, Error, Result};
use crate::format::sig;
use crate::plan::workload::{Class, Workload};
use crate::plan::Validated;
use crate::result::ToolInfo;
use crate::session::mix::{Mix, Shown, Together};

pub const SCHEMA: &str = "msgbench.workload-capacity/v1";

/// The search's document.
#[derive(Debug, Serialize)]
pub struct MixCapacity {
    pub schema: &'static str,
    pub tool: ToolInfo,
    pub workload: String,
    pub run_id: String,
    pub started_at: String,
    pub interrupted: bool,
    /// The workload as written out, at the rates of its file (scale 1).
    pub plan: Value,
    pub probe_duration_s: f64,
    pub warmup_s: f64,
    pub probe_runs: u32,
    pub precision_pct: f64,
    /// The highest factor at which every class held in every run; null when none did.
    pub sustainable_scale: Option<f64>,
    pub confidence: Option<Confidence>,
    /// The lowest probed factor above the sustainable one that did not hold: the first class
    /// (in the file's order) that failed there, and the SLOs that failed.
    pub first_failing: Option<Failing>,
    pub limiter: Limiter,
    pub probes: Vec<MixProbe>,
}

#[derive(Debug, Serialize)]
pub struct Failing {
    pub scale: f64,
    pub class: Option<String>,
    pub slo: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Limiter {
    /// slo, tool, subscriber, server, or none.
    pub kind: &'static str,
    /// The class that limited the mix, where one did.
    pub class: Option<String>,
    pub detail: String,
}

/// One run of every class at one factor.
#[derive(Debug, Serialize)]
pub struct MixProbe {
    pub scale: f64,
    pub run: u32,
    /// Every class held.
    pub pass: bool,
    /// A class's run measured msgbench, not the system: the run is run again.
    pub void: bool,
    pub classes: Vec<ClassProbe>,
}

/// One class in one probe run: its rate there, its figures on the hold, and how it fared.
#[derive(Debug, Serialize)]
pub struct ClassProbe {
    pub class: String,
    /// none (held), slo, tool, subscriber or server.
    pub outcome: &'static str,
    #[serde(flatten)]
    pub probe: Probe,
}

/// Runs the search over `workload` and writes its document.
///
/// # Errors
/// A class the search cannot scale, a bad flag, no server, or a destination that cannot be
/// written, before any load.
pub fn run(
    workload: &Workload,
    search: &MixSearchArgs,
    out: &OutputArgs,
    stop: &AtomicBool,
) -> Result<u8> {
    let rates = preflight(workload, search, out)?;
    let validated = workload.validate()?;
    let mix = Mix::resolve(workload, &validated)?;
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let mut doc = MixCapacity {
        schema: SCHEMA,
        tool: ToolInfo::default(),
        workload: workload.name.clone(),
        run_id: format!(
            "{}-capacity-{:04x}",
            started_at.replace([':', '-'], ""),
            crate::wire::stamp::new_run_tag()
        ),
        started_at,
        interrupted: false,
        plan: workload.recorded(),
        probe_duration_s: search.probe_duration.as_secs_f64(),
        warmup_s: search.probe_warmup.as_secs_f64(),
        probe_runs: search.probe_runs,
        precision_pct: search.precision,
        sustainable_scale: None,
        confidence: None,
        first_failing: None,
        limiter: Limiter {
            kind: "none",
            class: None,
            detail: String::new(),
        },
        probes: Vec::new(),
    };
    eprintln!(
        "msgbench capacity {}: {} classes, every rate scaled by one factor; each factor {} × \
         ({} warm-up + {} judged)",
        workload.name,
        workload.classes.len(),
        search.probe_runs,
        crate::values::ser::text(search.probe_warmup),
        crate::values::ser::text(search.probe_duration),
    );
    let walk = Walk {
        start: search.start_scale,
        max: search.max_scale,
        precision: search.precision,
        whole: false,
    };
    let mut s = MixSearch {
        workload,
        rates: &rates,
        search,
        mix: &mix,
        progress: !out.no_progress,
        stop,
        doc: &mut doc,
        blamed: Vec::new(),
    };
    let (held, broke, _) = walk.run(stop, &mut |f| s.probe_at(f));
    let blamed = std::mem::take(&mut s.blamed);
    let class = broke.as_ref().and_then(|(f, _)| {
        blamed
            .into_iter()
            .find(|(at, _)| at == f)
            .and_then(|(_, c)| c)
    });
    conclude(
        &mut doc,
        held,
        broke.map(|b| (b, class)),
        search,
        stop.load(Ordering::Relaxed),
    );
    let text = doc_text(&doc);
    let bytes = {
        let mut b = serde_json::to_vec_pretty(&doc).expect("the document serialises");
        b.push(b'\n');
        b
    };
    if out.json.as_deref() == Some(std::path::Path::new("-")) {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    if let Some(path) = &out.json {
        crate::output::write::save(path, &bytes, "--json")?;
    }
    Ok(if stop.load(Ordering::Relaxed) {
        exit::INTERRUPTED
    } else if doc.sustainable_scale.is_some() {
        exit::OK
    } else {
        exit::THRESHOLD
    })
}

/// What a search of a mix checks first: its output flags, its own flags, and that every
/// class has a rate to scale. Returns each class's rate at scale 1.
///
/// # Errors
/// The first flag or class that cannot work, named in one line.
pub fn preflight(w: &Workload, s: &MixSearchArgs, out: &OutputArgs) -> Result<Vec<f64>> {
    use crate::session::refusals::{check, Mode};
    check(out, Mode::WorkloadSearch)?;
    if let Some(path) = &out.json {
        crate::output::dest::check("--json", path)?;
    }
    let min = crate::options::MIN_RATE;
    if !(s.start_scale > 0.0 && s.start_scale.is_finite()) {
        return Err(Error::flag(
            "--start-scale",
            &s.start_scale.to_string(),
            "must be more than 0",
        ));
    }
    if s.max_scale < s.start_scale {
        return Err(Error::flag(
            "--max-scale",
            &s.max_scale.to_string(),
            "is below --start-scale",
        ));
    }
    if !(s.precision > 0.0 && s.precision <= 100.0) {
        return Err(Error::flag(
            "--precision",
            &s.precision.to_string(),
            "must be more than 0 and at most 100 (percent)",
        ));
    }
    let mut rates = Vec::with_capacity(w.classes.len());
    for c in &w.classes {
        let mut plan = c.plan.clone();
        let rate = match plan.pace_mut() {
            Some(p) => (p.rate_schedule.is_none() && p.rate > 0.0).then_some(p.rate),
            None => crate::plan::workload::own_rate(&c.plan),
        };
        let Some(rate) = rate else {
            return Err(Error::Usage(format!(
                "class '{}': a search scales every class's rate, and this class has no rate \
                 to scale (give it `rate`; a class on a rate_schedule, or a scenario without \
                 one, cannot be in a search)",
                c.name
            )));
        };
        if rate * s.start_scale < min {
            return Err(Error::flag(
                "--start-scale",
                &s.start_scale.to_string(),
                format!("puts class '{}' below {min} msgs/s", c.name),
            ));
        }
        // Each class as its probes will run it.
        let probe = probe_plan(&c.plan, rate * s.start_scale, &s.of_class(&c.slo))?;
        let v = probe.validate().map_err(|e| match e {
            Error::Usage(m) => Error::Usage(format!("class '{}': {m}", c.name)),
            other => other,
        })?;
        if v.common().allow_loss {
            return Err(Error::Usage(format!(
                "class '{}': allow_loss does not apply to a search: loss fails a factor only \
                 through an SLO such as lost==0",
                c.name
            )));
        }
        rates.push(rate);
    }
    Ok(rates)
}

/// A search under way.
struct MixSearch<'a> {
    workload: &'a Workload,
    /// Each class's rate at scale 1.
    rates: &'a [f64],
    search: &'a MixSearchArgs,
    mix: &'a Mix,
    progress: bool,
    stop: &'a AtomicBool,
    doc: &'a mut MixCapacity,
    /// Each factor probed, with the class its outcome is about (the first, in the file's
    /// order, whose outcome was the factor's).
    blamed: Vec<(f64, Option<String>)>,
}

impl MixSearch<'_> {
    /// One factor: its runs, back to back, each run of every class together. A run in which
    /// a class measured the tool is run again (twice at most) before the factor is put down
    /// to the tool.
    fn probe_at(&mut self, f: f64) -> Outcome {
        let probes = match self.probes(f) {
            Ok(p) => p,
            Err(e) => return Outcome::Server(format!("the probe at ×{f} could not run: {e}")),
        };
        let pairs: Vec<(&Class, &Validated)> = probes.iter().map(|(c, v, _)| (c, v)).collect();
        let mut outcomes = Vec::new();
        for k in 1..=self.search.probe_runs {
            let mut retry = 0;
            loop {
                if self.stop.load(Ordering::Relaxed) {
                    return Outcome::Unknown;
                }
                let results = (self.mix).once(&pairs, &Shown::default(), self.stop);
                if self.stop.load(Ordering::Relaxed) {
                    return Outcome::Unknown;
                }
                let mut classes = Vec::with_capacity(results.len());
                let mut outs = Vec::with_capacity(results.len());
                for (r, (class, _, s)) in results.into_iter().zip(&probes) {
                    let r = match r {
                        Ok(r) if r.interrupted => return Outcome::Unknown,
                        Ok(r) => r,
                        Err(e) => {
                            return Outcome::Server(format!(
                                "class {}: the probe at ×{f} failed: {e}",
                                class.name
                            ))
                        }
                    };
                    let rate = self.rates[classes.len()] * f;
                    let mut probe = judge_probe(&r, rate, k, s);
                    let out = classify(&r, &probe, &class.slo);
                    probe.void = matches!(out, Outcome::Tool(_));
                    outs.push(named(&class.name, out));
                    classes.push(ClassProbe {
                        class: class.name.clone(),
                        outcome: outs[outs.len() - 1].kind(),
                        probe,
                    });
                }
                let out = Outcome::worst(&outs);
                let blamed = (outs.iter().zip(&probes))
                    .find(|(o, _)| **o == out)
                    .map(|(_, (c, _, _))| c.name.clone());
                let run = MixProbe {
                    scale: f,
                    run: k,
                    pass: classes.iter().all(|c| c.probe.pass),
                    void: classes.iter().any(|c| c.probe.void()),
                    classes,
                };
                if self.progress {
                    eprintln!("{}", line(&run, self.search.probe_runs, retry));
                }
                self.doc.probes.push(run);
                if matches!(out, Outcome::Tool(_)) && retry < TOOL_RETRIES {
                    retry += 1;
                    continue;
                }
                outcomes.push((out, blamed));
                break;
            }
        }
        let runs: Vec<Outcome> = outcomes.iter().map(|(o, _)| o.clone()).collect();
        let out = Outcome::worst(&runs);
        let class = (outcomes.into_iter())
            .find(|(o, _)| *o == out)
            .and_then(|(_, c)| c);
        self.blamed.push((f, class));
        out
    }

    /// Every class's probe plan at factor `f`, checked, with the class's search.
    fn probes(&self, f: f64) -> Result<Vec<(Class, Validated, SearchArgs)>> {
        (self.workload.classes.iter().zip(self.rates))
            .map(|(c, rate)| {
                let s = self.search.of_class(&c.slo);
                let plan = probe_plan(&c.plan, rate * f, &s)?;
                let v = plan.validate()?;
                let class = Class {
                    name: c.name.clone(),
                    plan,
                    slo: c.slo.clone(),
                    curve: None,
                };
                Ok((class, v, s))
            })
            .collect()
    }
}

/// An outcome with the class it is about named in its words.
fn named(class: &str, out: Outcome) -> Outcome {
    match out {
        Outcome::Tool(d) => Outcome::Tool(format!("class {class}: {d}")),
        Outcome::Subscriber(d) => Outcome::Subscriber(format!("class {class}: {d}")),
        Outcome::Server(d) => Outcome::Server(format!("class {class}: {d}")),
        Outcome::Slo(d) => Outcome::Slo(format!("class {class}: {d}")),
        other => other,
    }
}

/// `     ×2.00  run 1/3  orders held, pricing failed p99<5ms, …`, as each run ends.
fn line(p: &MixProbe, runs: u32, retry: u32) -> String {
    let again = if retry == 0 {
        String::new()
    } else {
        format!(" again (retry {retry} of {TOOL_RETRIES})")
    };
    let classes: Vec<String> = (p.classes.iter())
        .map(|c| {
            let failed: Vec<&str> = (c.probe.verdicts.iter())
                .filter(|v| !v.pass)
                .map(|v| v.expr.as_str())
                .collect();
            let how = match c.outcome {
                "none" => "held".to_string(),
                "slo" => format!("failed {}", failed.join(", ")),
                other => format!("limited by the {other}"),
            };
            format!("{} {how}", c.class)
        })
        .collect();
    format!(
        "  ×{:>7}  run {}/{runs}{again}  {}",
        sig(p.scale, 3, false),
        p.run,
        classes.join("; ")
    )
}

/// The search's conclusion: the factor found, its interval over the runs, and what limited it.
fn conclude(
    doc: &mut MixCapacity,
    held: Option<f64>,
    broke: Option<((f64, Outcome), Option<String>)>,
    s: &MixSearchArgs,
    interrupted: bool,
) {
    doc.interrupted = interrupted;
    doc.sustainable_scale = held;
    let broke_at = broke.as_ref().map(|((f, _), _)| *f);
    if let Some(((f, why), class)) = broke {
        let f = &f;
        let at: Vec<&MixProbe> = (doc.probes.iter())
            .filter(|p| p.scale == *f && !p.void)
            .collect();
        let mut slo: Vec<String> = Vec::new();
        for c in at.iter().flat_map(|p| p.classes.iter()) {
            for v in c.probe.verdicts.iter().filter(|v| !v.pass) {
                let e = format!("{}: {}", c.class, v.expr);
                if !slo.contains(&e) {
                    slo.push(e);
                }
            }
        }
        doc.limiter = Limiter {
            kind: why.kind(),
            class: class.clone(),
            detail: why.detail().to_string(),
        };
        doc.first_failing = Some(Failing {
            scale: *f,
            class,
            slo,
        });
    } else {
        doc.limiter.detail = match held {
            _ if interrupted => "interrupted before the search ended".into(),
            Some(h) => format!("every probe held up to --max-scale ×{}", sig(h, 3, false)),
            None => "no probe ran".into(),
        };
    }
    let Some(held) = held else { return };
    let brackets: Vec<(f64, f64)> = (1..=s.probe_runs)
        .filter_map(|run| run_bracket(doc.probes.iter().map(|p| (p.scale, p.run, p.pass)), run))
        .collect();
    let per_run: Vec<f64> = brackets.iter().map(|(h, _)| *h).collect();
    let top = broke_at.unwrap_or(held);
    let (lo, hi) = interval(&brackets).unwrap_or((held, top));
    doc.confidence = Some(Confidence {
        level: LEVEL,
        low: lo.min(held).max(0.0),
        high: hi.max(top),
        per_run,
    });
}

/// The summary printed at the end: the factor, each class's rate there, and what limited it.
fn doc_text(doc: &MixCapacity) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let x = |f: f64| format!("×{}", sig(f, 3, false));
    match doc.sustainable_scale {
        Some(f) => {
            let _ = write!(o, "Sustainable: {}", x(f));
            if let Some(c) = &doc.confidence {
                let runs: Vec<String> = c.per_run.iter().map(|r| x(*r)).collect();
                let _ = write!(
                    o,
                    " ({} % interval {}–{}, from each run's own {})",
                    sig(c.level * 100.0, 3, true),
                    x(c.low),
                    x(c.high),
                    runs.join(", ")
                );
            }
            let _ = writeln!(o, " of every class's rate");
            if let Some(p) = doc.probes.iter().rev().find(|p| p.scale == f && p.pass) {
                for c in &p.classes {
                    let _ = writeln!(
                        o,
                        "  {}: {}/s",
                        c.class,
                        crate::format::group(c.probe.rate.round() as u64)
                    );
                }
            }
        }
        None => {
            let _ = writeln!(o, "Sustainable: no probed factor held every class's SLO");
        }
    }
    if let Some(f) = &doc.first_failing {
        let what = if f.slo.is_empty() {
            String::new()
        } else {
            format!(": {}", f.slo.join(", "))
        };
        let class = f
            .class
            .as_deref()
            .map_or(String::new(), |c| format!(", first class {c}"));
        let _ = writeln!(o, "First failing: {}{class}{what}", x(f.scale));
    }
    let _ = writeln!(
        o,
        "Limited by: {} — {}",
        doc.limiter.kind, doc.limiter.detail
    );
    if let Some(l) = failing_limit(doc) {
        let _ = writeln!(o, "  what bounded its run there: {}", l.text);
    }
    o
}

/// What bounded the first failing class's first failed (not void) run at the first failing
/// factor, by the rule every run is judged by.
fn failing_limit(doc: &MixCapacity) -> Option<&crate::stats::server::limit::Limit> {
    let f = doc.first_failing.as_ref()?;
    let class = f.class.as_deref()?;
    doc.probes
        .iter()
        .filter(|p| p.scale == f.scale)
        .flat_map(|p| p.classes.iter())
        .filter(|c| c.class == class && !c.probe.pass && !c.probe.void())
        .find_map(|c| c.probe.limit.as_ref())
}
