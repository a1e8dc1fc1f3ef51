//! The flags of `msgbench capacity` besides its scenario's own: how the search runs (the SLO,
//! how long and how often each rate is probed, where it starts and stops).

use std::time::Duration;

use crate::values::{parse_duration, parse_rate};
use clap::Args;

#[derive(Debug, Args, Clone)]
pub struct SearchArgs {
    /// What a rate must hold to count as sustained (repeatable; all must hold), written as
    /// --threshold is: 'p99<5ms', 'lost==0', 'errors==0'.
    #[arg(long, value_name = "EXPR", required = true, value_parser = crate::gate::parse)]
    pub slo: Vec<crate::gate::Threshold>,
    /// How long each probe holds its rate, after its warm-up; only this part is judged.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub probe_duration: Duration,
    /// How long each probe runs at its rate before the judged part begins (0s: none).
    #[arg(long, default_value = "1s", value_parser = super::parse_duration_or_zero)]
    pub probe_warmup: Duration,
    /// Runs at each probed rate; a rate holds only when every run held it.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub probe_runs: u32,
    /// The first rate tried (msgs/s); the search doubles it until a probe fails.
    #[arg(long, default_value = "1000", value_parser = parse_rate)]
    pub start_rate: f64,
    /// The highest rate tried (msgs/s).
    #[arg(long, default_value = "5M", value_parser = parse_rate)]
    pub max_rate: f64,
    /// The bisection stops when the highest rate that held and the lowest that did not are
    /// this close, in percent of the first.
    #[arg(long, default_value = "5", value_name = "PCT", value_parser = parse_rate)]
    pub precision: f64,
}

/// `msgbench capacity WORKLOAD.yaml`: how a search over a mix runs. The SLOs are each class's
/// own (its `slo`), and what is searched is one factor that scales every class's rate.
#[derive(Debug, Args, Clone)]
pub struct MixSearchArgs {
    /// How long each probe holds its rates, after its warm-up; only this part is judged.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub probe_duration: Duration,
    /// How long each probe runs at its rates before the judged part begins (0s: none).
    #[arg(long, default_value = "1s", value_parser = super::parse_duration_or_zero)]
    pub probe_warmup: Duration,
    /// Runs at each probed scale; a scale holds only when every class held in every run.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub probe_runs: u32,
    /// The first factor tried (1: the rates the file gives); the search doubles it until a
    /// probe fails.
    #[arg(long, default_value = "1", value_name = "FACTOR", value_parser = parse_rate)]
    pub start_scale: f64,
    /// The highest factor tried.
    #[arg(long, default_value = "64", value_name = "FACTOR", value_parser = parse_rate)]
    pub max_scale: f64,
    /// The bisection stops when the highest factor that held and the lowest that did not are
    /// this close, in percent of the first.
    #[arg(long, default_value = "5", value_name = "PCT", value_parser = parse_rate)]
    pub precision: f64,
}

impl MixSearchArgs {
    /// The search of one class: its SLOs, with the mix's probe flags.
    pub fn of_class(&self, slo: &[crate::gate::Threshold]) -> SearchArgs {
        SearchArgs {
            slo: slo.to_vec(),
            probe_duration: self.probe_duration,
            probe_warmup: self.probe_warmup,
            probe_runs: self.probe_runs,
            start_rate: 1.0,
            max_rate: f64::MAX,
            precision: self.precision,
        }
    }
}
