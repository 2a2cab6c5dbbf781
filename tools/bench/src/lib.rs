//! Benchmarks of the checkout against the physical limit, in one run on one machine.
//!
//! - [`pgbench`]: the callback handler's SQL (`bench::handler_sql::NEW_CHARGE_SQL`,
//!   `DUPLICATE_SQL`) turned into pgbench scripts: the limit;
//! - [`load`] and [`callbacks`]: the same work through the backend over HTTP,
//!   signed like the payment platform signs it;
//! - [`redis_bench`]: `redis-benchmark` next to pay-now;
//! - [`postgres`]: a private PostgreSQL cluster, the databases and the orders;
//! - [`cpu`]: where the CPU went during each run (ours, and the noise);
//! - [`report`]: ratios, targets and `docs/BENCHMARKS.md`;
//! - [`run`]: the steps in order.
//!
//! Not part of the test suite: run it with `bash scripts/bench.sh`.

pub mod callbacks;
pub mod cli;
pub mod cpu;
pub mod explain;
pub mod handler_sql;
pub mod load;
pub mod machine;
pub mod pgbench;
pub mod postgres;
pub mod profile;
pub mod redis_bench;
pub mod report;
pub mod run;
pub mod stats;
