//! Recorders and the arithmetic on them: delivery accounting from stamps, and throughput from
//! per-client counts and clocks; the server's side of a run as figures, and the rules that find
//! its events and name its limit. Nothing here does I/O.

pub mod acks;
pub mod arrivals;
pub mod changepoint;
pub mod delivery;
pub mod draw;
pub mod fault_phases;
pub mod faults;
pub mod hdr;
pub mod latency;
pub mod recovery;
pub mod schedule;
pub mod server;
pub mod significance;
pub mod stages;
pub mod throughput;
pub mod timeline;
