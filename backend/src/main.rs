//! Starts the checkout backend: reads configuration from the environment, then serves.

use backend::config::Config;
use backend::startup::Application;
use backend::telemetry;
use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    telemetry::init();
    let config = Config::parse();
    if let Some(spec) = &config.crash_points {
        backend::faults::arm(spec, config.crash_seed)?;
    }
    let app = Application::build(config).await?;
    app.run_until_stopped().await?;
    Ok(())
}
