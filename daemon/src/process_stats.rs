//! The standard `process_*` metrics Prometheus client libraries export,
//! read from `/proc/self` at each scrape: CPU seconds, resident and virtual
//! memory, open and maximum file descriptors, start time.

use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};

/// What `/proc/self` says about this process.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ProcessStats {
    pub cpu_seconds: f64,
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub open_fds: u64,
    pub max_fds: u64,
    pub start_time_seconds: f64,
}

/// Fields of `/proc/self/stat` after the command name (which may hold
/// spaces and parentheses, so it is cut at the last `)`).
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().collect())
}

/// Reads the figures, or `None` where `/proc` is missing or unreadable.
pub fn read() -> Option<ProcessStats> {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    // SAFETY: as above.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let f = stat_fields(&stat)?;
    // After the name: state is field 3 (index 0 here); utime 14, stime 15,
    // starttime 22, vsize 23, rss 24 (1-based in proc(5)).
    let num = |i: usize| f.get(i - 3)?.parse::<u64>().ok();
    let boot = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse::<u64>().ok())?;
    let max_fds = std::fs::read_to_string("/proc/self/limits")
        .ok()?
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3)?.parse().ok())
        .unwrap_or(0);
    Some(ProcessStats {
        cpu_seconds: (num(14)? + num(15)?) as f64 / ticks,
        resident_bytes: num(24)? * page,
        virtual_bytes: num(23)?,
        open_fds: std::fs::read_dir("/proc/self/fd").ok()?.count() as u64,
        max_fds,
        start_time_seconds: boot as f64 + num(22)? as f64 / ticks,
    })
}

/// The figures as a registry (no prefix: these names are standard).
pub fn registry() -> Registry {
    let mut r = Registry::default();
    let Some(p) = read() else {
        return r;
    };
    r.register_with_unit(
        "process_cpu",
        "Total user and system CPU time spent",
        Unit::Seconds,
        ConstCounter::new(p.cpu_seconds),
    );
    r.register_with_unit(
        "process_resident_memory",
        "Resident memory size",
        Unit::Bytes,
        ConstGauge::new(p.resident_bytes as i64),
    );
    r.register_with_unit(
        "process_virtual_memory",
        "Virtual memory size",
        Unit::Bytes,
        ConstGauge::new(p.virtual_bytes as i64),
    );
    r.register(
        "process_open_fds",
        "Open file descriptors",
        ConstGauge::new(p.open_fds as i64),
    );
    r.register(
        "process_max_fds",
        "Maximum open file descriptors",
        ConstGauge::new(p.max_fds as i64),
    );
    r.register_with_unit(
        "process_start_time",
        "Start time of the process since the Unix epoch",
        Unit::Seconds,
        ConstGauge::new(p.start_time_seconds),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_reads_sensibly() {
        let p = read().expect("/proc/self");
        assert!(p.resident_bytes > 1 << 20, "{p:?}");
        assert!(p.virtual_bytes >= p.resident_bytes, "{p:?}");
        assert!(p.open_fds >= 3 && p.max_fds >= p.open_fds, "{p:?}");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(p.start_time_seconds <= now + 1.0 && p.start_time_seconds > now - 86_400.0);
    }

    #[test]
    fn a_command_name_with_spaces_and_parens_does_not_shift_fields() {
        let f = stat_fields("42 (a b) c) S 1 2 3").unwrap();
        assert_eq!(f, ["S", "1", "2", "3"]);
    }
}
