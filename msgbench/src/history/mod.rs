//! History: every run remembered, every regression found. A run given `--record` is kept in a
//! store (`store`, one SQLite file) with its benchmark and testbed (`identity`), and
//! `msgbench history` reads it back. The statistics that find change are `stats::changepoint`'s;
//! this module owns only the storing, the reading and the words.
//!
//! It must not cost a run its result: recording happens after the run's files are written, and
//! a store that cannot be used is one line on stderr (`record`).

mod check;
pub mod command;
pub mod identity;
mod migrate;
pub mod record;
pub mod store;
