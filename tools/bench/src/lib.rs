//! Benchmarks of the checkout against the physical limit, in one run on one machine.
//!
//! - [`pgbench`]: pgbench scripts generated from the product's SQL files: the limit;
//! - [`load`] and [`callbacks`]: the same work through the backend over HTTP,
//!   signed like the payment platform signs it;
//! - [`redis_bench`]: `redis-benchmark`'s `GETDEL`, the Redis half of a pay's limit;
//! - [`postgres`]: the two databases and the orders the runs consume;
//! - [`cpu`]: where the CPU went during each run (ours, and the noise);
//! - [`report`]: the figures and their tables, written into `docs/BENCHMARKS.md`;
//! - [`run`]: the steps in order.
//!
//! Run it with `bash scripts/bench.sh`, which also starts the PostgreSQL
//! cluster it measures on. Not part of the test suite.

pub mod callbacks;
pub mod cli;
pub mod cpu;
pub mod handler_sql;
pub mod load;
pub mod pgbench;
pub mod postgres;
pub mod redis_bench;
pub mod report;
pub mod run;
pub mod stats;
