//! Fault injection with real processes: the backend as a child process that is
//! killed, paused and restarted; PostgreSQL and Redis servers owned by the test
//! and stopped, flushed or restarted mid-storm or mid-sweep; the payment
//! platform inside the backend (its sandbox) or outside it (`platform-sim`
//! served by the test). Orders are paid first, and every callback names its
//! payment. After each, the exactly-once invariants are checked from the
//! database and no order may be left stuck.

mod cluster;
mod crashes;
mod metrics;
mod outages;
mod rig;
mod scale_out;
mod sign_in_flood;
