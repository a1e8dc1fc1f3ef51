//! A process's memory as the kernel reports it (`/proc/<pid>/status`): what a driver's peak
//! and a `conns` run's memory per connection are read from.

/// Which figure of the status file.
#[derive(Debug, Clone, Copy)]
pub enum Figure {
    /// Resident now (`VmRSS`).
    Resident,
    /// Resident at its highest so far (`VmHWM`).
    Peak,
}

/// The figure of process `pid` (this process with `None`), in bytes; `None` where it cannot be
/// read (the process has exited, or this is not Linux).
pub fn bytes(pid: Option<u32>, figure: Figure) -> Option<u64> {
    let path = pid.map_or_else(
        || "/proc/self/status".to_string(),
        |p| format!("/proc/{p}/status"),
    );
    let field = match figure {
        Figure::Resident => "VmRSS:",
        Figure::Peak => "VmHWM:",
    };
    let status = std::fs::read_to_string(path).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_resident_size_no_larger_than_its_peak() {
        let now = bytes(None, Figure::Resident).expect("readable on Linux");
        let peak = bytes(Some(std::process::id()), Figure::Peak).expect("readable on Linux");
        assert!(0 < now && now <= peak, "{now} {peak}");
    }
}
