//! Distributed runs: `msgbench agent` on each load host, and any scenario with `--agents` as
//! their coordinator. The coordinator finds its agents on the control server, measures their
//! clocks, splits the plan into one segment per agent ([`split`]), sends each its signed share,
//! starts them together, relays what they must know of each other (every publisher's final
//! count), shows their progress, and merges their results into one. An agent runs its share
//! down the same path as any run (`scenario::execute`), so what a plan does on one host it does
//! on many. A workload's classes run on one fleet at once, each split and merged as it would
//! be alone ([`mix`]).

pub mod agent;
pub mod coordinator;
pub mod fleet;
pub mod mix;
mod progress;
pub mod split;
