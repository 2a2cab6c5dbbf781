//! Fault injection with real processes; the tests are in `tests/`
//! (`cargo test -p faults`). The backend runs as a child process that is
//! killed, paused and restarted (`target/debug/backend-fault-injection` has
//! the crash points of `backend::infra::faults`); PostgreSQL and Redis servers
//! owned by the test are stopped, flushed or restarted mid-storm.
