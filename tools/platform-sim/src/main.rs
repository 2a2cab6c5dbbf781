//! Runs the sandbox payment platform as its own process: flags and environment
//! in, HTTP API out, until Ctrl-C or SIGTERM.

use anyhow::Context;
use clap::Parser;
use platform_sim::{CallbackSecret, SimArgs, Simulator};
use std::net::SocketAddr;
use tracing_subscriber::EnvFilter;

/// The sandbox payment platform.
#[derive(Debug, Parser)]
#[command(name = "platform-sim", version, about)]
struct Cli {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, env = "SIM_BIND_ADDR", default_value = "127.0.0.1:4000")]
    bind_addr: SocketAddr,

    /// Standard Webhooks secret (`whsec_` + base64) callbacks are signed with: the backend's WEBHOOK_SECRET.
    #[arg(long, env = "WEBHOOK_SECRET", hide_env_values = true)]
    webhook_secret: String,

    #[command(flatten)]
    sim: SimArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).init();

    let cli = Cli::parse();
    let secret = CallbackSecret::parse(&cli.webhook_secret).context("WEBHOOK_SECRET")?;
    let simulator = Simulator::try_new(cli.sim.into_config(secret))?;
    let listener = tokio::net::TcpListener::bind(cli.bind_addr).await?;
    tracing::info!(
        address = %listener.local_addr()?,
        config = ?simulator.config(),
        "platform-sim listening"
    );
    axum::serve(listener, simulator.router())
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM. Callbacks still being retried are abandoned,
/// as a real platform's would be lost if it vanished.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %err, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(err) => {
                tracing::warn!(error = %err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down");
}
