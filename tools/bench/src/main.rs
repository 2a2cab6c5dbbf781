//! `bench`: measures the checkout against pgbench and redis-benchmark and writes docs/BENCHMARKS.md.

use bench::cli::Args;
use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    bench::run::run(args).await?;
    Ok(())
}
