//! `storm`: replays the duplicate-callback incident against a backend and checks
//! the exactly-once invariants from its database. Exits 1 on any violation.
//!
//! With no `--backend-url`, storm starts the backend binary itself on a fresh
//! database and restarts it between the retries and the last delivery.

use anyhow::Context;
use clap::Parser;
use platform_sim::Schedule;
use sqlx::postgres::PgPoolOptions;
use std::path::PathBuf;
use std::process::ExitCode;
use storm::incident::{self, Incident, Restart, Target};
use storm::processes::{self, BackendProcess};

/// Replays the incident: N identical callbacks at once, retries, a restart, one more retry.
#[derive(Debug, Parser)]
#[command(name = "storm", version)]
struct Args {
    /// A running backend. Without it storm starts `--backend-bin` itself.
    #[arg(long, env = "STORM_BACKEND_URL")]
    backend_url: Option<String>,
    /// The backend binary to start when no `--backend-url` is given.
    #[arg(long, env = "BACKEND_BIN")]
    backend_bin: Option<PathBuf>,
    /// The backend's database (to check the invariants). Started backends get a fresh one on this server.
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/checkout"
    )]
    database_url: String,
    /// The backend's Standard Webhooks secret (generated for a started backend).
    #[arg(long, env = "WEBHOOK_SECRET", hide_env_values = true)]
    webhook_secret: Option<String>,
    /// The backend's admin token (generated for a started backend).
    #[arg(long, env = "ADMIN_TOKEN", hide_env_values = true)]
    admin_token: Option<String>,
    /// The backend's merchant API key (generated for a started backend).
    #[arg(long, env = "MERCHANT_API_KEY", hide_env_values = true)]
    merchant_key: Option<String>,
    /// Redis for a started backend.
    #[arg(long, env = "REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// Orders, each with its own callback.
    #[arg(long, default_value_t = 1)]
    orders: usize,
    /// Identical deliveries per order at once.
    #[arg(long, default_value_t = 100)]
    concurrency: usize,
    /// The platform's retries after the burst: `fixed:<interval>x<count>` (the
    /// incident: `fixed:10sx10`), or a real platform's schedule: `wechat`, `alipay`, `standard`.
    #[arg(long, default_value = "fixed:10sx10")]
    schedule: Schedule,
    /// Multiplies every wait: 0.1 runs ten times faster.
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// Shell command that restarts a backend given by `--backend-url`; skipped when absent.
    #[arg(long)]
    restart_command: Option<String>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

fn random_secret() -> String {
    callback_signing::CallbackSecret::generate()
        .expose()
        .to_owned()
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    let incident = Incident {
        orders: args.orders,
        concurrency: args.concurrency,
        retries: args.schedule.retry_delays(),
        time_scale: args.time_scale,
        ..Incident::default()
    };

    let mut managed = None;
    let target = match &args.backend_url {
        Some(url) => Target {
            url: url.clone(),
            webhook_secret: args
                .webhook_secret
                .clone()
                .context("--webhook-secret is needed with --backend-url")?,
            admin_token: args
                .admin_token
                .clone()
                .context("--admin-token is needed with --backend-url")?,
            merchant_key: args
                .merchant_key
                .clone()
                .context("--merchant-key is needed with --backend-url")?,
            db: PgPoolOptions::new()
                .max_connections(4)
                .connect(&args.database_url)
                .await?,
        },
        None => {
            let binary = match &args.backend_bin {
                Some(path) => path.clone(),
                None => processes::backend_binary()?,
            };
            let secret = args.webhook_secret.clone().unwrap_or_else(random_secret);
            let admin = args
                .admin_token
                .clone()
                .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
            let merchant = args
                .merchant_key
                .clone()
                .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
            let base = args
                .database_url
                .rsplit_once('/')
                .map_or(args.database_url.as_str(), |(base, _)| base);
            let run_id = uuid::Uuid::new_v4().simple().to_string();
            let database_url = format!("{base}/checkout_storm_{}", &run_id[..12]);
            let log = processes::target_dir().join(format!("storm/backend-{}.log", &run_id[..12]));
            println!("starting {} (log: {})", binary.display(), log.display());
            let backend = BackendProcess::start(
                &binary,
                vec![
                    (backend::env::PLATFORM.into(), "sandbox".into()),
                    (backend::env::DATABASE_URL.into(), database_url.clone()),
                    (backend::env::REDIS_URL.into(), args.redis_url.clone()),
                    (
                        backend::env::REDIS_KEY_PREFIX.into(),
                        format!("storm:{run_id}:"),
                    ),
                    (backend::env::WEBHOOK_SECRET.into(), secret.clone()),
                    (backend::env::ADMIN_TOKEN.into(), admin.clone()),
                    (backend::env::MERCHANT_API_KEY.into(), merchant.clone()),
                    (
                        backend::env::RUST_LOG.into(),
                        "info,sqlx=warn,tower_http=warn".into(),
                    ),
                ],
                log,
            )
            .await?;
            let target = Target {
                url: backend.url(),
                webhook_secret: secret,
                admin_token: admin,
                merchant_key: merchant,
                db: PgPoolOptions::new()
                    .max_connections(4)
                    .connect(&database_url)
                    .await?,
            };
            managed = Some(backend);
            target
        }
    };

    let restart = match (&mut managed, &args.restart_command) {
        (Some(backend), _) => Restart::Managed(backend),
        (None, Some(command)) => Restart::Command(command.clone()),
        (None, None) => Restart::Skip,
    };
    println!(
        "storm: {} order(s), {} identical callbacks at once, {} retries on schedule {} (time scale {}), then a restart and one more",
        incident.orders,
        incident.concurrency,
        incident.retries.len(),
        args.schedule,
        incident.time_scale
    );
    let started = std::time::Instant::now();
    let report = incident::run(&target, &incident, restart, !args.quiet).await?;
    println!("\n{}", report.table());
    let violations = report.violations();
    println!("finished in {:.1} s", started.elapsed().as_secs_f64());
    if violations.is_empty() {
        println!("EXACTLY ONCE: every order charged once, every delivery answered 200.");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("VIOLATIONS:");
        for violation in &violations {
            println!("  - {violation}");
        }
        Ok(ExitCode::FAILURE)
    }
}
