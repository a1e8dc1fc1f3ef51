//! The integration tests, one binary: each module was a test binary of its own, and each
//! linked the whole crate (52 links of a 65,000-line crate cost minutes on two cores). A test
//! that needs a process to itself lives outside this folder: `tests/alloc.rs` installs a
//! counting global allocator.
//!
//! Tests here run on cargo's test threads, as they did in their own binaries; a test that must
//! not overlap others of its kind (clusters, agents in network namespaces) takes its module's
//! lock.

mod agents;
mod agents_metrics;
mod agents_netns;
mod auth;
mod batched_writes;
mod browser;
mod capacity;
mod capture;
mod cluster;
mod cluster_safety;
mod command_lines;
mod compare;
mod completions;
mod conns;
mod consume;
mod dashboard;
mod deploy;
mod diff;
mod dists;
mod docs;
mod docs_run;
mod durability;
mod e2e;
mod fanout;
mod fates;
mod fault_phases;
mod faults;
mod figures;
mod gate;
mod grpc;
mod grpc_h2raw;
mod grpc_service_smoke;
mod history;
mod history_pg;
mod hostile;
mod http_hostile;
mod jetstream;
mod js_fast;
mod js_persist;
mod js_restart;
mod latency;
mod layers;
mod link;
mod matrix;
mod metrics;
mod obj;
mod partition;
mod plan;
mod power_loss;
mod promql;
mod report;
mod request;
mod runs;
mod safety;
mod schedule;
mod server_config;
mod server_side;
mod support;
mod tls;
mod unmeasured;
mod vectors;
mod web;
mod webdriver;
mod workload;
mod workload_agents;
