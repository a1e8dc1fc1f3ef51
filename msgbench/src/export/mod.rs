//! Exporters: each turns a [`RunResult`] into the bytes of one format, behind one small trait,
//! so adding a format never touches the scenarios and every format sees the same facts.

pub mod compare;
pub mod csv;
pub mod json;
pub mod markdown;
pub mod server_csv;
pub mod text;

use crate::result::RunResult;

/// One output format.
pub trait Exporter {
    /// The complete document for `result`.
    fn serialize(&self, result: &RunResult) -> Vec<u8>;
}
