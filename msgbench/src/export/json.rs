//! JSON: the result as the versioned `msgbench.result/v1` document.

use super::Exporter;
use crate::result::RunResult;

pub struct Json;

impl Exporter for Json {
    fn serialize(&self, result: &RunResult) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(result).expect("the result serialises to JSON");
        out.push(b'\n');
        out
    }
}
