//! What the floor examples share: their arguments and the clock they read.

use std::time::Duration;

/// Positional argument `n` as a number, `default` when absent.
pub fn arg(n: usize, name: &str, default: usize) -> Result<usize, String> {
    match std::env::args().nth(n) {
        Some(a) => a.parse().map_err(|e| format!("{name} {a:?}: {e}")),
        None => Ok(default),
    }
}

/// CPU time of the calling thread.
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill in.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
