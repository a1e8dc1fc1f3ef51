//! What the user sees while a run is under way (the live line, `--stream-stats`,
//! `--metrics-listen`) and how results are written to their destinations after it (stdout,
//! stderr, files), checked before it starts.

pub mod dest;
pub mod live;
pub mod metrics;
pub mod web;
pub mod write;
