//! Everything before the first measurement: the two databases on the given
//! server, and the facts the report records about the run.

use super::{Bench, say};
use crate::callbacks::Signer;
use crate::cli::Args;
use crate::cpu;
use crate::postgres::{self, OrderStock};
use crate::redis_bench::{self, RedisTarget};
use crate::report::Results;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::Command;
use time::OffsetDateTime;
use time::macros::format_description;

/// The first guess of new callbacks per second, to size the order stock before anything was measured.
const FIRST_RATE_GUESS: f64 = 3000.0;
/// The first guess of pays per second.
const FIRST_PAY_GUESS: f64 = 1500.0;

impl Bench {
    /// Creates the databases and records the run's facts.
    pub(super) async fn prepare(args: Args, root: PathBuf) -> anyhow::Result<Self> {
        let now = OffsetDateTime::now_utc();
        let id = now.format(format_description!(
            "[year][month][day]_[hour][minute][second]"
        ))?;
        let work = testkit::target_dir().join("bench").join(&id);
        std::fs::create_dir_all(&work)?;
        say(format!(
            "==> bench {id}: {} s per run, {} s warm-up, clients {:?}, steps {:?}\n    work files: {}",
            args.duration,
            args.warmup,
            args.clients,
            args.steps,
            work.display()
        ));
        let backend_bin = args
            .backend_bin
            .clone()
            .unwrap_or_else(|| testkit::target_dir().join("release/backend"));
        anyhow::ensure!(
            backend_bin.exists(),
            "{} is missing: build it with `cargo build --release -p backend` (scripts/bench.sh does)",
            backend_bin.display()
        );

        let server = args.postgres.trim_end_matches('/').to_owned();
        let (pg_db, http_db) = (format!("bench_{id}_pgbench"), format!("bench_{id}_backend"));
        say(format!(
            "==> Databases {pg_db} (pgbench) and {http_db} (backend) on {server}: the backend's migrations, {} accounts",
            args.accounts
        ));
        let pg_pool = postgres::create_database(&server, &pg_db, args.accounts).await?;
        let http_pool = postgres::create_database(&server, &http_db, args.accounts).await?;

        let redis = RedisTarget::from_url(&args.redis_url)?;
        let (redis_version, redis_pid) = redis_bench::version_and_pid(&args.redis_url)
            .await
            .with_context(|| format!("cannot reach Redis at {}", args.redis_url))?;
        let roots = cpu::Roots {
            postmaster: if cpu::on_this_machine(&server) {
                postgres::postmaster_pid(&pg_pool).await
            } else {
                None
            },
            redis: redis_pid.filter(|_| cpu::on_this_machine(&args.redis_url)),
            platform: args.pay_platform_url.as_ref().and(args.pay_platform_pid),
            ..cpu::Roots::default()
        };
        let results = Results {
            command: args
                .command
                .clone()
                .unwrap_or_else(|| std::env::args().collect::<Vec<_>>().join(" ")),
            started_at: now.format(format_description!(
                "[year]-[month]-[day] [hour]:[minute]:[second]"
            ))?,
            commit: commit(&root),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model: cpu::cpu_model(),
            postgres: postgres::describe(&pg_pool).await?,
            redis_version,
            duration_s: args.duration,
            warmup_s: args.warmup,
            clients: args.clients.clone(),
            rounds: args.rounds as usize,
            db_max_connections: args
                .db_max_connections
                .map_or("20 (backend default)".into(), |n| n.to_string()),
            accounts: args.accounts,
            ..Results::default()
        };
        say(format!("    PostgreSQL {}", results.postgres));
        Ok(Bench {
            pg_stock: OrderStock::new(pg_pool.clone(), args.accounts),
            http_stock: OrderStock::new(http_pool.clone(), args.accounts),
            pay_cookie: None,
            redis_prefix: format!("bench:{id}:"),
            args,
            root,
            work,
            pg_db,
            http_db,
            pg_pool,
            http_pool,
            signer: Signer::generate(),
            redis,
            backend_bin,
            roots,
            rate_hint: FIRST_RATE_GUESS,
            pay_hint: FIRST_PAY_GUESS,
            backend: None,
            results,
        })
    }

    /// The URL of database `db` on the server.
    pub(super) fn database_url(&self, db: &str) -> String {
        format!("{}/{db}", self.args.postgres.trim_end_matches('/'))
    }
}

/// The measured tree: its short commit, and whether it had changes.
fn commit(root: &Path) -> String {
    let dirty = "--dirty= with uncommitted changes";
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["describe", "--always", "--match=", dirty])
        .output();
    match out {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        _ => "unknown".into(),
    }
}
