//! Fuzzes workload files: the input, decoded lossily as UTF-8, is a file given to
//! `msgbench run`. Nothing may panic (a hostile file must not take the stack or the memory:
//! aliases and deep nesting are refused), and a workload that reads and checks must print a
//! form that reads back as the same workload, its captured curves replayed at a warp too.

#![no_main]

use libfuzzer_sys::fuzz_target;
use msgbench::plan::workload::Workload;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(w) = Workload::from_text(&text, "fuzz.yaml", "fuzz") else {
        return;
    };
    if w.validate().is_err() {
        return;
    }
    let Ok(printed) = w.to_json() else {
        return;
    };
    let again = Workload::from_value(&printed, "printed").expect("the printed form reads back");
    assert_eq!(again.to_json().ok(), Some(printed), "{text}");
    // Its captured curves replayed (`--time-warp`): the schedules they become print and read
    // back as well.
    let mut warped = w;
    if warped.warp(2.0).is_err() || warped.validate().is_err() {
        return;
    }
    let Ok(printed) = warped.to_json() else {
        return;
    };
    let again = Workload::from_value(&printed, "warped").expect("a warped form reads back");
    assert_eq!(again.to_json().ok(), Some(printed), "{text}");
});
