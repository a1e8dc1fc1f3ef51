//! The flags of `msgbench capacity`: the scenario to search with its own flags, and how the
//! search runs (the SLO, how long and how often each rate is probed, where it starts and stops).

use std::time::Duration;

use clap::{Args, Subcommand};

use super::{GrpcArgs, JsPubArgs, LatencyArgs, OutputArgs, PubSubArgs, RequestArgs};
use crate::values::{parse_duration, parse_rate};

#[derive(Debug, Args)]
pub struct CapacityArgs {
    /// The scenario to search with, and its flags (without --rate, --duration or --msgs: the
    /// search sets them).
    #[command(subcommand)]
    pub scenario: CapacityScenario,
}

/// The open-loop scenarios a search can probe.
#[derive(Debug, Subcommand)]
pub enum CapacityScenario {
    /// One publisher and one subscriber: end-to-end latency.
    Latency {
        #[command(flatten)]
        run: LatencyArgs,
        #[command(flatten)]
        search: SearchArgs,
    },
    /// Publishers and subscribers: delivery at a rate.
    Pubsub {
        #[command(flatten)]
        run: PubSubArgs,
        #[command(flatten)]
        search: SearchArgs,
    },
    /// Requests against responders: round trips at a rate.
    Request {
        #[command(flatten)]
        run: RequestArgs,
        #[command(flatten)]
        search: SearchArgs,
    },
    /// JetStream publishes (--mode async): acknowledgements at a rate.
    #[command(name = "js-pub")]
    JsPub {
        #[command(flatten)]
        run: JsPubArgs,
        #[command(flatten)]
        search: SearchArgs,
    },
    /// gRPC calls at a rate.
    Grpc {
        #[command(flatten)]
        run: GrpcArgs,
        #[command(flatten)]
        search: SearchArgs,
    },
}

impl CapacityScenario {
    pub fn search(&self) -> &SearchArgs {
        match self {
            CapacityScenario::Latency { search, .. }
            | CapacityScenario::Pubsub { search, .. }
            | CapacityScenario::Request { search, .. }
            | CapacityScenario::JsPub { search, .. }
            | CapacityScenario::Grpc { search, .. } => search,
        }
    }

    pub fn out(&self) -> &OutputArgs {
        match self {
            CapacityScenario::Latency { run, .. } => &run.out,
            CapacityScenario::Pubsub { run, .. } => &run.out,
            CapacityScenario::Request { run, .. } => &run.out,
            CapacityScenario::JsPub { run, .. } => &run.out,
            CapacityScenario::Grpc { run, .. } => &run.out,
        }
    }
}

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
