//! The `shortlinkd` binary: see `shortlinkd --help`.

fn main() -> std::process::ExitCode {
    shortlinkd::cli::run()
}
