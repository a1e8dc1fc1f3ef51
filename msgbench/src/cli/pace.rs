//! The pace flags, written once: `--rate`, `--rate-schedule`, `--duration` and `--arrivals`,
//! flattened into
//! every scenario that sends on a schedule (pub, sub, pubsub, latency, request, js pub, grpc).
//! serde flattens the group too, so a plan's keys are the flags' names, where they always were.
//!
//! What differs between scenarios is data, not a second declaration: what `--rate` paces and
//! what 0 means there, its default (latency's is 1000), its alias (grpc's `--rps`), and
//! `--duration`'s default when a run has one ([`PaceShape`]). The count that `--duration`
//! replaces stays each scenario's own flag: its name (`--msgs`, grpc's `--requests` and `-n`),
//! its unit (messages per publisher, requests per client) and its default differ, and kv and
//! reply count without a rate. Each such count conflicts with `--duration` and
//! `--rate-schedule` itself, so the group names no flag outside it.
//!
//! Not here, on purpose: `js consume --rate` paces only the publisher of `--publish live`, with
//! no schedule and no duration; `kv` and `reply` take `--duration` without any rate, and
//! flattening the group into them would add flags with nothing to act on.

use std::time::Duration;

use clap::Args;
use serde::Serialize;

use super::Arrivals;
use crate::values::{parse_duration, parse_rate};

/// How fast a scenario sends, and for how long.
#[derive(Debug, Clone, Args, Serialize)]
pub struct PaceArgs {
    /// Aggregate sends per second, on a fixed schedule; 0 = as fast as possible.
    #[arg(long, default_value = "0", value_parser = parse_rate, allow_hyphen_values = true)]
    pub rate: f64,
    /// Vary the rate over the run instead of --rate: step:START:STEP:EVERY[:MAX],
    /// ramp:FROM:TO:OVER or RATE@DURATION,… (the run lasts as long as the schedule; a step
    /// without MAX runs for --duration). The result has each stage's figures.
    #[arg(long, value_name = "SCHEDULE", conflicts_with = "rate")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_schedule: Option<String>,
    /// Run for this long instead of a count (e.g. 10s, 1m).
    #[arg(long, value_parser = parse_duration, allow_hyphen_values = true)]
    #[serde(serialize_with = "crate::values::ser::opt_duration")]
    pub duration: Option<Duration>,
    /// When paced sends are due: fixed (evenly spaced on the schedule) or poisson (a Poisson
    /// process at the same rate, ramps and steps included: exponential gaps, drawn from
    /// --seed; latency is corrected against each message's drawn due time). pub, pubsub,
    /// request and latency, with a rate.
    #[arg(long, value_enum, default_value = "fixed")]
    #[serde(skip_serializing_if = "Arrivals::is_fixed")]
    pub arrivals: Arrivals,
}

impl PaceArgs {
    /// Sets the rate schedule `spec`, which then sets the rate and the run's length: `--rate`
    /// and any count are not read beside a schedule, and `--duration` is cleared so that a step
    /// schedule without MAX cannot outlive it.
    pub fn set_schedule(&mut self, spec: String) {
        self.rate_schedule = Some(spec);
        self.duration = None;
    }

    /// Gives a scenario's command what its pace flags mean there.
    pub fn shape(cmd: clap::Command, s: &PaceShape) -> clap::Command {
        let cmd = cmd.mut_arg("rate", |a| {
            let a = a.default_value(s.rate_default).help(s.rate);
            match s.rate_alias {
                Some(alias) => a.visible_alias(alias),
                None => a,
            }
        });
        match s.duration {
            Some(help) => cmd.mut_arg("duration", |a| a.help(help)),
            None => cmd,
        }
    }
}

/// What a scenario's pace flags mean there: the part of them that differs between scenarios.
pub struct PaceShape {
    /// `--rate`'s help: what it paces, and what 0 means.
    pub rate: &'static str,
    /// `--rate`'s default, as typed.
    pub rate_default: &'static str,
    /// Another name for `--rate` (grpc's `--rps`, as in ghz).
    pub rate_alias: Option<&'static str>,
    /// `--duration`'s help, for a run with a length of its own without a count (latency's 5s).
    pub duration: Option<&'static str>,
}

impl PaceShape {
    /// A rate that defaults to 0, with help `rate`.
    pub const fn rate(rate: &'static str) -> Self {
        Self {
            rate,
            rate_default: "0",
            rate_alias: None,
            duration: None,
        }
    }
}
