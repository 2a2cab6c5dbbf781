//! Everything before the first measurement: the tools a step needs, PostgreSQL
//! (a private cluster or a shared server with room enough), the two databases,
//! and the facts the report records about the run.
//!
//! It fails early, with the command that fixes it, so a long run never dies at
//! its third step for a missing binary.

use super::{Bench, say};
use crate::callbacks::Signer;
use crate::cli::{Args, Step};
use crate::postgres::{self, OrderStock, Server};
use crate::redis_bench::{self, RedisTarget};
use crate::report::{Results, Settings};
use crate::{cpu, machine};
use anyhow::bail;
use sqlx::PgPool;
use std::path::PathBuf;
use time::OffsetDateTime;

/// The first guess of new callbacks per second, to size the order stock before anything was measured.
const FIRST_RATE_GUESS: f64 = 3000.0;
/// The first guess of pay-now pairs per second.
const FIRST_PAY_GUESS: f64 = 1500.0;

impl Bench {
    /// Checks the tools, starts or reaches PostgreSQL, creates the databases and
    /// records the run's facts.
    pub(super) async fn prepare(args: Args, root: PathBuf) -> anyhow::Result<Self> {
        let now = OffsetDateTime::now_utc();
        let id = timestamp(now, "", "_", "");
        let work = storm::processes::target_dir().join("bench").join(&id);
        std::fs::create_dir_all(&work)?;
        let command = args
            .command
            .clone()
            .unwrap_or_else(|| std::env::args().collect::<Vec<_>>().join(" "));
        say(format!(
            "==> bench {id}: {} s per run, {} s warm-up, clients {:?}, steps {:?}\n    work files: {}",
            args.duration,
            args.warmup,
            args.clients,
            args.steps,
            work.display()
        ));

        let needs_backend = [Step::New, Step::Duplicate, Step::Pay, Step::Scale]
            .iter()
            .any(|&s| args.runs(s));
        let backend_bin = args
            .backend_bin
            .clone()
            .unwrap_or_else(|| storm::processes::target_dir().join("release/backend"));
        if needs_backend {
            if !backend_bin.exists() {
                bail!(
                    "{} is missing: build it with `cargo build --release -p backend` (scripts/bench.sh does)",
                    backend_bin.display()
                );
            }
            require_tool("pgbench", "postgresql-client").await?;
        }
        if args.runs(Step::Pay) {
            require_tool("redis-benchmark", "redis-tools").await?;
        }
        if args.runs(Step::Scale) && !haproxy_installed() {
            bail!("haproxy is not installed: apt-get install -y haproxy (scripts/bench.sh does)");
        }

        let mut server = if args.postgres == "own" {
            say("==> Starting a private PostgreSQL cluster");
            Server::start_owned()?
        } else {
            Server::from_url(&args.postgres)?
        };
        if args.keep {
            server.keep();
        }
        let pg_db = format!("bench_{id}_pgbench");
        let http_db = format!("bench_{id}_backend");
        say(format!(
            "==> Databases {pg_db} (pgbench) and {http_db} (backend) on {}:{}: schema from migrations/, {} accounts",
            server.host, server.port, args.accounts
        ));
        let pg_pool = postgres::create_database(&server, &pg_db, args.accounts).await?;
        let http_pool = postgres::create_database(&server, &http_db, args.accounts).await?;
        check_connections(&server, &pg_pool, &args).await?;

        let redis = RedisTarget::from_url(&args.redis_url)?;
        let results = Results {
            command,
            started_at: timestamp(now, "-", " ", ":"),
            commit: machine::commit(&root),
            rustc: machine::rustc_version(),
            machine: machine::machine(),
            postgres_where: server.describe(),
            postgres: postgres::settings(&pg_pool).await?,
            redis_version: redis_bench::version(&args.redis_url)
                .await
                .unwrap_or_else(|err| format!("unreachable ({err})")),
            settings: Settings {
                duration_s: args.duration,
                warmup_s: args.warmup,
                clients: args.clients.clone(),
                db_max_connections: args
                    .db_max_connections
                    .map_or("20 (backend default)".into(), |n| n.to_string()),
                accounts: args.accounts,
                redis_requests: args.redis_requests,
                rounds: args.rounds as usize,
                experiments: experiments(&args),
            },
            ..Results::default()
        };
        say(format!(
            "    PostgreSQL {}: fsync={}, synchronous_commit={}; {} cores ({})",
            results.postgres.version,
            results.postgres.fsync,
            results.postgres.synchronous_commit,
            results.machine.cores,
            results.machine.cpu_model
        ));

        let roots = cpu::Roots {
            backends: Vec::new(),
            balancers: Vec::new(),
            postmaster: server.postmaster_pid(),
            platform: platform_process(args.pay_platform_url.as_deref()),
            redis: cpu::find_redis_server(redis.port),
        };
        Ok(Bench {
            pg_stock: OrderStock::new(pg_pool.clone(), args.accounts),
            http_stock: OrderStock::new(http_pool.clone(), args.accounts),
            pay_cookie: None,
            args,
            root,
            work,
            server,
            pg_db,
            http_db,
            pg_pool,
            http_pool,
            signer: Signer::generate(),
            redis_prefix: format!("bench:{id}:"),
            redis,
            backend_bin,
            roots,
            rate_hint: FIRST_RATE_GUESS,
            pay_hint: FIRST_PAY_GUESS,
            backend: None,
            results,
        })
    }
}

/// The process behind `--pay-platform-url` when it listens on this machine,
/// so its CPU counts as the pay's platform and not as noise.
fn platform_process(url: Option<&str>) -> Option<u32> {
    let url = reqwest::Url::parse(url?).ok()?;
    let local = matches!(
        url.host_str(),
        Some("127.0.0.1" | "localhost" | "[::1]" | "::1")
    );
    let pid = local
        .then(|| url.port_or_known_default())
        .flatten()
        .and_then(cpu::find_listener);
    match pid {
        Some(pid) => say(format!(
            "    the pay's platform at {url} is process {pid}: its CPU is counted as the platform's"
        )),
        None => say(format!(
            "    the pay's platform at {url} is not a process found on this machine: its CPU (if any here) counts as noise"
        )),
    }
    pid
}

/// `now` as year, month, day (joined by `date`), `middle`, then hour, minute,
/// second (joined by `time`): the run's id and its start in the report.
fn timestamp(now: OffsetDateTime, date: &str, middle: &str, time: &str) -> String {
    format!(
        "{:04}{date}{:02}{date}{:02}{middle}{:02}{time}{:02}{time}{:02}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    )
}

/// The experiments switched on, in words for the report.
fn experiments(args: &Args) -> Vec<String> {
    let mut out = Vec::new();
    if args.pgbench_ping {
        out.push(
            "--pgbench-ping: extra pgbench runs whose transactions start with a bare Sync round \
             trip, like the backend pool's check at each checkout (not used for the targets)"
                .to_owned(),
        );
    }
    if let Some(url) = &args.pay_platform_url {
        out.push(format!(
            "--pay-platform-url: pay now hands payments to the platform at {url} instead of the in-process sandbox"
        ));
    }
    out
}

/// `haproxy` on `PATH` or where Debian's package puts it (`/usr/sbin`, not on every user's `PATH`).
fn haproxy_installed() -> bool {
    ["haproxy", "/usr/sbin/haproxy"].iter().any(|program| {
        std::process::Command::new(program)
            .arg("-v")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

async fn require_tool(name: &str, package: &str) -> anyhow::Result<()> {
    let found = tokio::process::Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .await
        .is_ok_and(|o| o.status.success());
    if !found {
        bail!("{name} is not installed: apt-get install -y {package} (scripts/bench.sh does)");
    }
    Ok(())
}

/// A shared server must have room for the most pgbench clients plus the backend's pool.
async fn check_connections(server: &Server, pool: &PgPool, args: &Args) -> anyhow::Result<()> {
    if server.is_owned() {
        return Ok(());
    }
    let free: i64 = sqlx::query_scalar(
        "SELECT current_setting('max_connections')::bigint - (SELECT count(*) FROM pg_stat_activity)",
    )
    .fetch_one(pool)
    .await?;
    let most = args.clients.iter().copied().max().unwrap_or(0) as i64;
    let pool_size = i64::from(args.db_max_connections.unwrap_or(20));
    let wanted = most.max(pool_size) + 5;
    if free < wanted {
        bail!(
            "the PostgreSQL server has {free} free connections, pgbench with {most} clients needs \
             {wanted}: use `--postgres own` (a private cluster with max_connections=300)"
        );
    }
    Ok(())
}
