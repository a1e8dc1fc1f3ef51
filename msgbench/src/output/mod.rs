//! What the user sees while a run is under way (the progress bar) and how results are written
//! to their destinations after it (stdout, stderr, files).

pub mod progress;
pub mod write;
