//! The backend with crash points armed from `CRASH_POINTS`: for the fault tests
//! only. Built only with `--features fault-injection`; the `backend` binary of
//! an ordinary build has no crash points at all.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    backend::startup::run_from_env().await
}
