//! CSV in `nats bench`'s columns, one row per client, so existing spreadsheets and scripts that
//! read its `--csv` files read ours.

use std::fmt::Write;

use super::Exporter;
use crate::result::RunResult;
use crate::stats::throughput::Role;

pub const HEADER: &str = "#RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,BytesPerSec,DurationSecs";

pub struct Csv;

impl Exporter for Csv {
    fn serialize(&self, result: &RunResult) -> Vec<u8> {
        let mut out = String::from(HEADER);
        out.push('\n');
        for c in &result.clients {
            let id = match c.role {
                Role::Pub => format!("P{}", c.id),
                Role::Sub => format!("S{}", c.id),
            };
            let _ = writeln!(
                out,
                "{},{},{},{},{:.0},{:.0},{:.6}",
                result.run_id, id, c.msgs, c.bytes, c.msgs_per_sec, c.bytes_per_sec, c.seconds
            );
        }
        out.into_bytes()
    }
}
