//! `msgbench agent`: the flags of a load agent and of `agent keygen`. The coordinator's side
//! (`--agents`, `--control`, `--sign`) is part of every scenario's run flags (`OutputArgs`).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::ConnArgs;
use crate::values::parse_duration;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct AgentArgs {
    #[command(subcommand)]
    pub action: Option<AgentAction>,
    /// The NATS server to take plans from (default: --server or NATS_URL). The connection
    /// flags below (--user, --creds, --nkey, --tls-*) apply to it.
    #[arg(long, value_name = "URL")]
    pub control: Option<String>,
    /// This agent's name, unique among the agents on one control server (default: the host
    /// name). Letters, digits, '-' and '_'.
    #[arg(long)]
    pub name: Option<String>,
    /// A label coordinators can select agents by (repeatable, K=V): zone=a, rack=r12.
    #[arg(long = "label", value_name = "K=V")]
    pub labels: Vec<String>,
    /// Accept plans signed by this public key (repeatable; from `msgbench agent keygen`).
    #[arg(long, value_name = "PUBLIC_KEY")]
    pub trust: Vec<String>,
    /// Accept plans signed by the public keys in FILE, one per line ('#' starts a comment).
    #[arg(long, value_name = "FILE")]
    pub trust_file: Option<PathBuf>,
    /// Run without --trust: accept unsigned plans from anyone who can publish on the control
    /// server. For a closed test network only; a warning is printed.
    #[arg(long)]
    pub insecure_control: bool,
    /// Stop a run's load when the coordinator has not renewed its lease for this long.
    #[arg(long, default_value = "3s", value_parser = parse_duration, value_name = "DURATION")]
    pub lease: Duration,
    #[command(flatten)]
    pub conn: ConnArgs,
}

#[derive(Debug, Subcommand)]
pub enum AgentAction {
    /// Write a new signing seed for a coordinator (`--sign FILE`) and print its public key,
    /// the one agents are given with --trust.
    Keygen(KeygenArgs),
}

#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Where to write the seed (created with mode 0600; an existing file is not overwritten).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}
