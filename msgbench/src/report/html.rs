//! The HTML report (being written).

use crate::cli::ReportArgs;
use crate::error::{Error, Result};

/// Writes the report `args` asks for and returns the exit status.
///
/// # Errors
/// Unreadable or foreign input files, or an output file that cannot be written.
pub fn run(args: &ReportArgs) -> Result<u8> {
    let _ = args;
    Err(Error::Usage("report: not built yet".into()))
}
