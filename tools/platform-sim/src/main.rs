//! Runs the sandbox payment platform as its own process: flags and environment
//! in, HTTP API out, until Ctrl-C or SIGTERM.

use anyhow::Context;
use clap::Parser;
use platform_sim::{CallbackSecret, SimArgs, Simulator};
use std::net::SocketAddr;
use std::path::PathBuf;
use tracing_subscriber::EnvFilter;

/// The sandbox payment platform.
#[derive(Debug, Parser)]
#[command(name = "platform-sim", version, about, subcommand_negates_reqs = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    /// Address to listen on; port 0 picks a free port.
    #[arg(long, env = "SIM_BIND_ADDR", default_value = "127.0.0.1:4000")]
    bind_addr: SocketAddr,

    /// Standard Webhooks secret (`whsec_` + base64) callbacks are signed with: the backend's WEBHOOK_SECRET.
    #[arg(long, env = "WEBHOOK_SECRET", hide_env_values = true, required = true)]
    webhook_secret: Option<String>,

    #[command(flatten)]
    sim: SimArgs,
}

/// What to do instead of serving.
#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Write a matching set of merchant and platform keys (RSA key pairs, serial
    /// numbers, WeChat Pay APIv3 key) into DIR for local runs; refuses to overwrite.
    Keys {
        /// The directory to write into (created if missing).
        dir: PathBuf,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).init();

    let cli = Cli::parse();
    if let Some(Command::Keys { dir }) = &cli.command {
        let (_, report) = platform_sim::keys::write_local_keys(dir)?;
        print!("{report}");
        return Ok(());
    }
    let webhook_secret = cli.webhook_secret.context("WEBHOOK_SECRET is required")?;
    let secret = CallbackSecret::parse(&webhook_secret).context("WEBHOOK_SECRET")?;
    let simulator = Simulator::try_new(cli.sim.into_config_with_keys(secret)?)?;
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
