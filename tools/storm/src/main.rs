//! `storm`: replays the duplicate-callback incident against a backend and checks
//! the exactly-once invariants from its database. Exits 1 on any violation.
//!
//! With no `--backend-url`, storm starts the backend binary itself on a fresh
//! database (its sandbox posting no callbacks of its own, so storm's are the
//! ones that charge) and restarts it between the retries and the last delivery.
//! That database (`checkout_storm_<id>`, named when the backend starts) is
//! dropped when the run ends exactly once, and kept for inspection otherwise.
//! `--drop-callbacks` replays the other incident: no callback arrives in time,
//! the backend's active query must settle the orders, and the callbacks come late.
//! `--refunds` goes on after the incident: the merchant refunds every order in
//! full, and each refund's `refund.succeeded` callback arrives the same way
//! (at once, retries, a restart, one more); one REFUND row and one credit each.
//! Its started backend hands over to a platform-sim that storm serves and that
//! posts no callbacks, since the in-process sandbox would forget the payments
//! at the first restart and refuse their refunds.
//! `--platform wechatpay|alipay` replays the incident in a real platform's
//! notification format: storm writes a key set into a temp dir, serves a
//! platform-sim speaking that platform (posting no callbacks, outliving the
//! restarts), starts the backend with `PLATFORM=wechatpay|alipay` against it,
//! runs the shop in CNY, reads each transaction id from platform-sim's book
//! (WeChat Pay and Alipay give it only with the result) and sends WeChat Pay
//! API v3 notifications (encrypted, signed with the platform key; acknowledged
//! by 200 or 204) or Alipay form notifications (RSA2; acknowledged only by a
//! 200 whose body is `success`). `--drop-callbacks` works with them too (the
//! backend's active query asks platform-sim in the platform's own API), and so
//! does `--refunds` (the refunds go through the platform's refund API, their
//! results come as WeChat Pay `REFUND.SUCCESS` or Alipay refund notifications).
//! `--platform` other than standard needs a backend storm starts itself.

use anyhow::Context;
use clap::{CommandFactory, Parser};
use platform_sim::Schedule;
use sqlx::postgres::PgPoolOptions;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use storm::incident::{self, Arrival, Incident, Restart, Target};
use storm::platform::{KeySet, Notifier, OutsidePlatform, PlatformKind};
use storm::processes::{self, BackendProcess};
use storm::shop::PaymentIds;

/// Replays the incident: the shopper pays N orders, then per order identical
/// callbacks at once, retries, a restart, one more retry. With --refunds, then
/// the merchant refunds each order and its refund result comes the same way.
#[derive(Debug, Parser)]
#[command(name = "storm", version)]
struct Args {
    /// A running backend. Without it storm starts `--backend-bin` itself. Run it
    /// with SANDBOX_DROP_CALLBACKS=true (its sandbox then only decides, and
    /// storm's callbacks are the ones that charge) and per-shopper token and pay
    /// limits above --orders.
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
    /// Orders, each paid by the run's shopper and reported by its own callback.
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
    /// The incident where no callback arrives: storm pays the orders, sends
    /// nothing and waits until the backend's active query has settled every
    /// order; then it delivers the same callbacks late (burst, retries, restart,
    /// one more), which must all be acknowledged (200, or the --platform's
    /// rule) and change nothing. A started
    /// backend runs with SANDBOX_DROP_CALLBACKS=true and QUERY_AFTER_SECS = 60 ×
    /// --time-scale (at least 1); give a --backend-url target those settings yourself.
    #[arg(long)]
    drop_callbacks: bool,
    /// Then the refund incident: once every order is PAID, the merchant asks
    /// for a full refund of each (one Idempotency-Key per order, the request
    /// sent twice: the second must be replayed), storm waits until the backend
    /// has handed each refund to the platform, then per refund sends the same
    /// signed refund.succeeded callback --concurrency times at once, the
    /// retries, a restart and one more. It fails unless each order has one
    /// refund, one REFUND row and is REFUNDED, the account was credited once,
    /// every delivery was answered 200 and the invariants hold. A started
    /// backend hands payments and refunds to a platform-sim served by storm
    /// (PLATFORM=remote, posting no callbacks), which outlives its restarts as
    /// a real platform does; the in-process sandbox forgets every payment when
    /// the backend restarts, and refuses their refunds. Give a --backend-url
    /// target such a platform yourself. With --platform wechatpay|alipay the
    /// refund results come in that platform's format (WeChat Pay
    /// REFUND.SUCCESS, Alipay's refund notification) and are acknowledged by its rule.
    #[arg(long, conflicts_with = "drop_callbacks")]
    refunds: bool,
    /// Whose notification format the callbacks come in: `standard` (the
    /// checkout's own Standard Webhooks at /api/payments/callback),
    /// `wechatpay` (WeChat Pay API v3 at /api/payments/callback/wechatpay:
    /// AES-256-GCM resource, platform-key signature in Wechatpay-* headers,
    /// same notification id for every copy; acknowledged by 200 or 204) or
    /// `alipay` (form parameters signed RSA2 at /api/payments/callback/alipay,
    /// same notify_id; acknowledged only by 200 with the body `success`). With
    /// wechatpay or alipay storm starts the backend (PLATFORM=wechatpay|alipay)
    /// against a platform-sim it serves with a fresh key set, and the orders
    /// are in CNY. Works with --drop-callbacks (the active query asks
    /// platform-sim in the platform's API) and --refunds (refund results as
    /// WeChat Pay REFUND.SUCCESS or Alipay refund notifications); not with --backend-url.
    #[arg(long, value_enum, default_value_t = PlatformKind::Standard)]
    platform: PlatformKind,
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
    if args.platform != PlatformKind::Standard {
        let refuse = |what: &str| {
            Args::command()
                .error(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!("--platform {} {what}", args.platform.as_str()),
                )
                .exit()
        };
        if args.backend_url.is_some() {
            refuse(
                "needs a backend storm starts itself: it serves the platform (platform-sim with \
                 a fresh key set) and reads the transaction ids from its book; \
                 --backend-url is for --platform standard",
            );
        }
    }
    let query = QuerySettings::scaled(args.time_scale);
    let incident = Incident {
        orders: args.orders,
        concurrency: args.concurrency,
        retries: args.schedule.retry_delays(),
        time_scale: args.time_scale,
        arrival: if args.drop_callbacks {
            Arrival::Late {
                settle_within: query.settle_within(),
            }
        } else {
            Arrival::OnTime
        },
        ..Incident::default()
    };

    let mut managed = None;
    // The database storm made for the backend it started (none with --backend-url).
    let mut own_database = None;
    let mut platform = None;
    let mut key_set = None;
    let target = match &args.backend_url {
        Some(url) => Target {
            url: url.clone(),
            notifier: Notifier::standard(
                &args
                    .webhook_secret
                    .clone()
                    .context("--webhook-secret is needed with --backend-url")?,
            )?,
            payment_ids: PaymentIds::Recorded,
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
            let database = format!("checkout_storm_{}", &run_id[..12]);
            let database_url = format!("{base}/{database}");
            let log = processes::target_dir().join(format!("storm/backend-{}.log", &run_id[..12]));
            println!(
                "starting {} on database {database} (log: {})",
                binary.display(),
                log.display()
            );
            own_database = Some((base.to_owned(), database));
            let mut env: Vec<(String, String)> = vec![
                (backend::env::DATABASE_URL.into(), database_url.clone()),
                (backend::env::REDIS_URL.into(), args.redis_url.clone()),
                (
                    backend::env::REDIS_KEY_PREFIX.into(),
                    format!("storm:{run_id}:"),
                ),
                (backend::env::WEBHOOK_SECRET.into(), secret.clone()),
                (backend::env::ADMIN_TOKEN.into(), admin.clone()),
                (backend::env::MERCHANT_API_KEY.into(), merchant.clone()),
                // One shopper pays every order of the run.
                (
                    backend::env::RATE_LIMIT_TOKENS_PER_SHOPPER.into(),
                    "0".into(),
                ),
                (backend::env::RATE_LIMIT_PAYS_PER_SHOPPER.into(), "0".into()),
                (
                    backend::env::RUST_LOG.into(),
                    "info,sqlx=warn,tower_http=warn".into(),
                ),
            ];
            // Storm delivers the callbacks itself: the platform only decides.
            if args.platform != PlatformKind::Standard {
                let keys = KeySet::generate()?;
                let outside = OutsidePlatform::start(&secret, args.platform, Some(&keys)).await?;
                println!(
                    "platform-sim speaking {} at {} (posts no callbacks; keys in {})",
                    args.platform.as_str(),
                    outside.url(),
                    keys.dir().display()
                );
                env.push((backend::env::PLATFORM.into(), args.platform.as_str().into()));
                env.extend(keys.backend_env(args.platform, outside.url()));
                platform = Some(outside);
                key_set = Some(keys);
            } else if args.refunds {
                let outside = OutsidePlatform::start(&secret, PlatformKind::Standard, None).await?;
                println!("platform-sim at {} (posts no callbacks)", outside.url());
                env.push((backend::env::PLATFORM.into(), "remote".into()));
                env.push((backend::env::PLATFORM_URL.into(), outside.url().into()));
                platform = Some(outside);
            } else {
                env.push((backend::env::PLATFORM.into(), "sandbox".into()));
                env.push((backend::env::SANDBOX_DROP_CALLBACKS.into(), "true".into()));
            }
            if args.drop_callbacks {
                env.extend(query.env());
            }
            let backend = BackendProcess::start(&binary, env, log).await?;
            let (notifier, payment_ids) = match (&key_set, &platform) {
                (Some(keys), Some(outside)) => (
                    keys.notifier(args.platform, &secret)?,
                    PaymentIds::Book {
                        simulator: outside.simulator().clone(),
                        prefix: args.platform.book_prefix().unwrap_or_default(),
                    },
                ),
                _ => (Notifier::standard(&secret)?, PaymentIds::Recorded),
            };
            let target = Target {
                url: backend.url(),
                notifier,
                payment_ids,
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

    let mut restart = match (&mut managed, &args.restart_command) {
        (Some(backend), _) => Restart::Managed(backend),
        (None, Some(command)) => Restart::Command(command.clone()),
        (None, None) => Restart::Skip,
    };
    if args.drop_callbacks {
        println!(
            "storm: {} order(s) paid, no callback: waiting up to {:.0} s for the active query \
             (QUERY_AFTER_SECS={}), then late: {} identical {} at once, {} retries on schedule {} \
             (time scale {}), a restart and one more",
            incident.orders,
            query.settle_within().as_secs_f64(),
            query.after_secs,
            incident.concurrency,
            args.platform.callbacks(),
            incident.retries.len(),
            args.schedule,
            incident.time_scale
        );
    } else {
        println!(
            "storm: {} order(s) paid, then {} identical {} at once, {} retries on schedule {} (time scale {}), then a restart and one more",
            incident.orders,
            incident.concurrency,
            args.platform.callbacks(),
            incident.retries.len(),
            args.schedule,
            incident.time_scale
        );
    }
    let started = std::time::Instant::now();
    let run = incident::run(&target, &incident, &mut restart, !args.quiet).await?;
    println!("\n{}", run.report.table());
    let mut violations = run.report.violations();
    if args.refunds && !violations.is_empty() {
        println!("storm: refunds skipped: the payment incident did not end exactly once");
    } else if args.refunds {
        if let Some(platform) = &platform {
            platform
                .wait_succeeded(&run.paid, Duration::from_secs(30))
                .await?;
        }
        println!(
            "storm: refunds: {} order(s) refunded in full, each asked for twice with one Idempotency-Key, \
             then {} identical {} at once, {} retries on schedule {} (time scale {}), \
             then a restart and one more",
            run.paid.len(),
            incident.concurrency,
            args.platform.refund_callbacks(),
            incident.retries.len(),
            args.schedule,
            incident.time_scale
        );
        let refunds =
            storm::refunds::run(&target, &incident, &run, &mut restart, !args.quiet).await?;
        println!("\n{}", refunds.table());
        violations.extend(refunds.violations());
    }
    println!("finished in {:.1} s", started.elapsed().as_secs_f64());
    if let Some((server, name)) = own_database {
        // The backend first, so nothing reconnects to the database being dropped.
        drop(restart);
        drop(managed);
        target.db.close().await;
        if !violations.is_empty() {
            println!(
                "storm: database {name} kept for inspection (on the server of --database-url)"
            );
        } else {
            match storm::drop_database(&server, &name).await {
                Ok(()) => println!("storm: database {name} dropped"),
                // The verdict stands; only the clean-up failed.
                Err(err) => println!("storm: could not drop database {name}: {err:#}"),
            }
        }
    }
    if violations.is_empty() && args.refunds {
        println!(
            "EXACTLY ONCE: every order charged once and refunded once (one REFUND row, one credit); \
             every delivery {}.",
            args.platform.acknowledgment()
        );
        Ok(ExitCode::SUCCESS)
    } else if violations.is_empty() && args.drop_callbacks {
        println!(
            "EXACTLY ONCE: every order settled by the active query and charged once; \
             every late delivery {} and changed nothing.",
            args.platform.acknowledgment()
        );
        Ok(ExitCode::SUCCESS)
    } else if violations.is_empty() {
        println!(
            "EXACTLY ONCE: every order charged once, every delivery {}.",
            args.platform.acknowledgment()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        println!("VIOLATIONS:");
        for violation in &violations {
            println!("  - {violation}");
        }
        Ok(ExitCode::FAILURE)
    }
}

/// The active query's timing for a run whose callbacks are dropped: the
/// backend's defaults (first query 60 s after the hand-over, then every 300 s)
/// scaled by `--time-scale`, in whole seconds, at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct QuerySettings {
    after_secs: u64,
    every_secs: u64,
}

impl QuerySettings {
    fn scaled(time_scale: f64) -> Self {
        // Rounded to the millisecond first, so 60 × 0.1 is 6, not 7.
        let scale = |secs: f64| {
            ((secs * time_scale * 1000.0).round() / 1000.0)
                .ceil()
                .max(1.0) as u64
        };
        Self {
            after_secs: scale(60.0),
            every_secs: scale(300.0),
        }
    }

    /// `QUERY_AFTER_SECS` and `QUERY_EVERY_SECS` for a started backend.
    fn env(self) -> [(String, String); 2] {
        [
            (
                backend::env::QUERY_AFTER_SECS.into(),
                self.after_secs.to_string(),
            ),
            (
                backend::env::QUERY_EVERY_SECS.into(),
                self.every_secs.to_string(),
            ),
        ]
    }

    /// How long the orders may take to be settled by the query: the first
    /// query, one more in case the first found the payment undecided, and 30 s
    /// of slack for the worker's ticks and a slow machine.
    fn settle_within(self) -> Duration {
        Duration::from_secs(self.after_secs + self.every_secs + 30)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_timing_is_scaled_and_never_below_a_second() {
        assert_eq!(
            QuerySettings::scaled(1.0),
            QuerySettings {
                after_secs: 60,
                every_secs: 300
            }
        );
        assert_eq!(
            QuerySettings::scaled(0.1),
            QuerySettings {
                after_secs: 6,
                every_secs: 30
            }
        );
        assert_eq!(
            QuerySettings::scaled(0.001),
            QuerySettings {
                after_secs: 1,
                every_secs: 1
            }
        );
        assert_eq!(
            QuerySettings::scaled(0.001).settle_within(),
            Duration::from_secs(32)
        );
    }
}
