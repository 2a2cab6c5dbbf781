//! Fault injection with real processes: the backend as a child process that is
//! killed, paused and restarted; PostgreSQL and Redis servers owned by the test
//! and stopped, flushed or restarted mid-storm. After each, the exactly-once
//! invariants are checked from the database and no order may be left stuck.

mod crashes;
mod outages;
mod rig;
mod scale_out;
