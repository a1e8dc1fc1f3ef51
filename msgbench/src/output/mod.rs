//! What the user sees while a run is under way (the live line, `--stream-stats`,
//! `--metrics-listen`, `--web` and the HTTP server they share) and how results are written to
//! their destinations after it (stdout, stderr, files), checked before it starts.

pub mod dest;
pub mod live;
pub mod metrics;
mod serve;
pub mod web;
pub mod write;
