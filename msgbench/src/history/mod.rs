//! History: every run remembered, every regression found. A run given `--record` is kept in a
//! store (`store`, one SQLite file) with its benchmark and testbed (`identity`), and
//! `msgbench history` reads it back (`actions`: list, show, trend, check; `export`: the
//! formats of Bencher, github-action-benchmark and Otava) or fills it from result files
//! (`import`); `report --history` draws it
//! (`over_time` reads the series, `chart` draws them with the report's kit). The statistics
//! that find change are `stats::changepoint`'s; this module owns only the storing, the reading,
//! the words and the pictures.
//!
//! It must not cost a run its result: recording happens after the run's files are written, and
//! a store that cannot be used is one line on stderr (`record`).

pub mod actions;
pub(crate) mod chart;
mod check;
mod export;
pub mod identity;
mod import;
mod migrate;
mod over_time;
pub mod record;
pub mod store;
