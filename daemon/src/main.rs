//! The `shortlinkd` binary: see `shortlinkd --help`.

/// mimalloc instead of glibc's allocator: a create makes a few hundred
/// small allocations (HTTP, JSON, SQLite), which cost about a seventh of the
/// daemon's CPU in glibc's `malloc` and `free` (issue 14).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    shortlinkd::cli::run()
}
