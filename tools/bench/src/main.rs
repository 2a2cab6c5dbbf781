//! `bench`: measures the checkout against pgbench and redis-benchmark and writes
//! the tables of docs/BENCHMARKS.md.

use bench::cli::Args;
use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    bench::run::run(Args::parse()).await?;
    Ok(())
}
