//! What the floor examples share: their arguments, the clock they read and
//! how they sum it up.

use std::time::{Duration, Instant};

/// Positional argument `n` as a number, `default` when absent.
pub fn arg(n: usize, name: &str, default: usize) -> Result<usize, String> {
    match std::env::args().nth(n) {
        Some(a) => a.parse().map_err(|e| format!("{name} {a:?}: {e}")),
        None => Ok(default),
    }
}

/// CPU and wall time spent in one part of a run.
#[derive(Clone, Copy, Default)]
pub struct Spent {
    pub cpu: Duration,
    pub wall: Duration,
}

impl Spent {
    /// Runs `f`, adding the calling thread's CPU time and the wall time it
    /// took.
    pub fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let (t, cpu) = (Instant::now(), thread_cpu());
        let out = f();
        self.wall += t.elapsed();
        self.cpu += thread_cpu() - cpu;
        out
    }
}

/// The median of `v` (the upper one of an even count); 0 when empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill in.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
