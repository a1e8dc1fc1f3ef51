//! Recorders and the arithmetic on them: delivery accounting from stamps, and throughput from
//! per-client counts and clocks. Nothing here does I/O.

pub mod acks;
pub mod changepoint;
pub mod delivery;
pub mod draw;
pub mod fault_phases;
pub mod faults;
pub mod hdr;
pub mod latency;
pub mod recovery;
pub mod schedule;
pub mod significance;
pub mod stages;
pub mod throughput;
pub mod timeline;
