//! The benchmark, step by step: set up PostgreSQL and the data, measure each
//! step (pgbench, then the backend, at each client count), tear down, report.

use crate::callbacks::Signer;
use crate::cli::{Args, Step};
use crate::load::{self, Job, Prepared};
use crate::machine;
use crate::pgbench::{self, CallbackPath, Invocation};
use crate::postgres::{self, CALLBACK_PREFIX, ORDER_PREFIX, OrderStock, Server};
use crate::redis_bench::{self, RedisCommand, RedisTarget};
use crate::report::{Results, Settings, StatementBreakdown, kept_analysis};
use crate::stats::Run;
use crate::{cpu, explain, profile};
use anyhow::{Context, bail};
use sqlx::PgPool;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use storm::processes::BackendProcess;
use time::OffsetDateTime;
use tokio::time::Instant;

/// The first guess of new callbacks per second, to size the order stock before anything was measured.
const FIRST_RATE_GUESS: f64 = 3000.0;
/// The first guess of pay-now pairs per second.
const FIRST_PAY_GUESS: f64 = 1500.0;
/// Sandbox callback delay for the pay-now phase: an hour, so no callback lands while measuring.
const PAY_CALLBACK_DELAY_MS: u64 = 3_600_000;

pub use testkit::workspace_root;

fn say(text: impl AsRef<str>) {
    println!("{}", text.as_ref());
}

/// Runs the benchmark and writes the report; returns the figures.
pub async fn run(args: Args) -> anyhow::Result<Results> {
    let started = Instant::now();
    let root = workspace_root();
    if let Some(json) = &args.report_from {
        let text = std::fs::read_to_string(json)
            .with_context(|| format!("cannot read {}", json.display()))?;
        let results: Results = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a bench results.json", json.display()))?;
        say(results.summary());
        write_report(&args, &root, &results)?;
        return Ok(results);
    }
    let now = OffsetDateTime::now_utc();
    let id = format!(
        "{:04}{:02}{:02}_{:02}{:02}{:02}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    );
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

    let needs_backend = [Step::New, Step::Duplicate, Step::Pay]
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
        started_at: format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            now.year(),
            u8::from(now.month()),
            now.day(),
            now.hour(),
            now.minute(),
            now.second()
        ),
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
        backend: None,
        postmaster: server.postmaster_pid(),
        redis: cpu::find_redis_server(redis.port),
    };
    let mut bench = Bench {
        pg_stock: OrderStock::new(pg_pool.clone(), args.accounts),
        http_stock: OrderStock::new(http_pool.clone(), args.accounts),
        args,
        root,
        work,
        server,
        pg_db,
        http_db,
        pg_pool,
        http_pool,
        signer: Signer::generate()?,
        redis_prefix: format!("bench:{id}:"),
        redis,
        backend_bin,
        roots,
        rate_hint: FIRST_RATE_GUESS,
        pay_hint: FIRST_PAY_GUESS,
        backend: None,
        results,
    };
    let outcome = bench.steps().await;
    bench.teardown().await;
    outcome?;

    let Bench {
        mut results,
        args,
        root,
        work,
        ..
    } = bench;
    results.elapsed_s = started.elapsed().as_secs_f64();
    std::fs::write(
        work.join("results.json"),
        serde_json::to_string_pretty(&results)?,
    )?;
    say(results.summary());
    write_report(&args, &root, &results)?;
    say(format!(
        "==> Done in {:.0} s; raw figures in {}",
        results.elapsed_s,
        work.join("results.json").display()
    ));
    Ok(results)
}

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

/// Writes the Markdown report, keeping the analysis of the one it replaces.
fn write_report(args: &Args, root: &Path, results: &Results) -> anyhow::Result<()> {
    if args.no_write {
        return Ok(());
    }
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| root.join("docs/BENCHMARKS.md"));
    let analysis = std::fs::read_to_string(&output)
        .ok()
        .and_then(|text| kept_analysis(&text));
    if let Some(dir) = output.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&output, results.markdown(analysis.as_deref()))?;
    say(format!("==> Wrote {}", output.display()));
    Ok(())
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

/// CPU and WAL accounting running beside a measured window.
struct Watch {
    cpu: tokio::task::JoinHandle<Option<cpu::CpuUse>>,
    wal: tokio::task::JoinHandle<Option<postgres::WalUse>>,
}

impl Watch {
    async fn attach(self, run: &mut Run) -> anyhow::Result<()> {
        run.cpu = self.cpu.await?;
        run.wal = self.wal.await?;
        Ok(())
    }
}

struct Bench {
    args: Args,
    root: PathBuf,
    work: PathBuf,
    server: Server,
    pg_db: String,
    http_db: String,
    pg_pool: PgPool,
    http_pool: PgPool,
    pg_stock: OrderStock,
    http_stock: OrderStock,
    signer: Signer,
    redis_prefix: String,
    redis: RedisTarget,
    backend_bin: PathBuf,
    roots: cpu::Roots,
    rate_hint: f64,
    pay_hint: f64,
    backend: Option<(BackendProcess, SocketAddr)>,
    results: Results,
}

impl Bench {
    async fn steps(&mut self) -> anyhow::Result<()> {
        if self.args.runs(Step::New) {
            self.step_new().await?;
        }
        if self.args.runs(Step::Duplicate) {
            self.step_duplicate().await?;
        }
        self.stop_backend("callbacks (new and duplicate)");
        if self.args.runs(Step::Pay) {
            self.step_pay().await?;
        }
        if self.args.runs(Step::Size) {
            say("==> Page size");
            self.results.wasm = machine::wasm_size(&self.root)?;
            match &self.results.wasm {
                Some(wasm) => say(format!(
                    "    {}: {:.1} KiB raw, {:.1} KiB gzip -9",
                    wasm.file,
                    wasm.raw_bytes as f64 / 1024.0,
                    wasm.gzip_bytes as f64 / 1024.0
                )),
                None => {
                    say("    no dist/*.wasm: run `bash scripts/build-frontend.sh` first");
                    self.results
                        .notes
                        .push("no dist/*.wasm was found; the page size was not measured".into());
                }
            }
        }
        Ok(())
    }

    async fn teardown(&mut self) {
        self.stop_backend("callbacks (new and duplicate)");
        if let Err(err) = redis_bench::clean(&self.args.redis_url, &self.redis_prefix).await {
            say(format!(
                "    warning: could not remove our Redis keys: {err}"
            ));
        }
        self.pg_pool.close().await;
        self.http_pool.close().await;
        if !self.args.keep
            && let Err(err) = self
                .server
                .drop_databases(&[self.pg_db.clone(), self.http_db.clone()])
                .await
        {
            say(format!("    warning: could not drop the databases: {err}"));
        }
    }

    // ---- the backend process ----

    async fn start_backend(
        &mut self,
        name: &str,
        callback_delay_ms: u64,
    ) -> anyhow::Result<SocketAddr> {
        let admin: [u8; 16] = rand::random();
        let mut env = vec![
            ("DATABASE_URL".to_owned(), self.server.url(&self.http_db)),
            ("REDIS_URL".to_owned(), self.args.redis_url.clone()),
            (
                "REDIS_KEY_PREFIX".to_owned(),
                format!("{}backend:", self.redis_prefix),
            ),
            ("WEBHOOK_SECRET".to_owned(), self.signer.secret().to_owned()),
            (
                "ADMIN_TOKEN".to_owned(),
                admin.iter().map(|b| format!("{b:02x}")).collect(),
            ),
            ("RUST_LOG".to_owned(), "warn".to_owned()),
            (
                "SANDBOX_CALLBACK_DELAY_MS".to_owned(),
                callback_delay_ms.to_string(),
            ),
        ];
        if let Some(n) = self.args.db_max_connections {
            env.push(("DATABASE_MAX_CONNECTIONS".to_owned(), n.to_string()));
        }
        if name == "pay"
            && let Some(url) = &self.args.pay_platform_url
        {
            env.push(("PLATFORM_URL".to_owned(), url.clone()));
        }
        let log = self.work.join(format!("backend-{name}.log"));
        let process = BackendProcess::start(&self.backend_bin, env, log).await?;
        let addr: SocketAddr = process
            .url()
            .trim_start_matches("http://")
            .parse()
            .context("backend address")?;
        self.roots.backend = process.pid();
        say(format!(
            "    backend pid {} on {addr} ({}), RUST_LOG=warn",
            process.pid().unwrap_or(0),
            self.backend_bin.display()
        ));
        self.backend = Some((process, addr));
        Ok(addr)
    }

    async fn backend_addr(&mut self) -> anyhow::Result<SocketAddr> {
        match &self.backend {
            Some((_, addr)) => Ok(*addr),
            None => self.start_backend("callbacks", 500).await,
        }
    }

    fn stop_backend(&mut self, phase: &str) {
        if let Some((mut process, _)) = self.backend.take() {
            if let Some(kib) = process.pid().and_then(machine::peak_rss_kib) {
                say(format!(
                    "    backend peak RSS (VmHWM), {phase}: {:.1} MiB",
                    kib as f64 / 1024.0
                ));
                self.results.peak_rss_kib.push((phase.to_owned(), kib));
            }
            process.terminate();
            self.roots.backend = None;
        }
    }

    // ---- helpers ----

    fn focus(&self) -> usize {
        self.args.focus_clients()
    }

    /// A progress label, with the round when there are several.
    fn label(&self, what: &str, round: u32) -> String {
        if self.args.rounds > 1 {
            format!("{what} #{}", round + 1)
        } else {
            what.to_owned()
        }
    }

    /// (clients, round) in the order they run: every round of one count, then the next.
    fn schedule(&self) -> Vec<(usize, u32)> {
        self.args
            .clients
            .iter()
            .flat_map(|&clients| (0..self.args.rounds).map(move |round| (clients, round)))
            .collect()
    }

    fn orders_needed(&self, rate: f64, seconds: u64, clients: usize) -> i64 {
        (rate * seconds as f64 * 1.5) as i64 + 100 * clients as i64
    }

    /// CPU and WAL accounting over the steady part of a window starting at `start`.
    fn watch(&self, start: Instant, seconds: u64) -> Watch {
        let window = Duration::from_secs(seconds);
        let lead = Duration::from_millis(1500).min(window / 4);
        let tail = Duration::from_millis(300).min(window / 4);
        let (from, to) = (start + lead, start + window - tail);
        Watch {
            cpu: cpu::watch(self.roots, from, to),
            wal: postgres::watch_wal(self.pg_pool.clone(), from, to),
        }
    }

    async fn before_run(&self, pool: &PgPool, focus: bool) -> anyhow::Result<()> {
        postgres::settle(pool).await?;
        if focus && self.server.is_owned() {
            postgres::reset_statements(pool).await?;
        }
        Ok(())
    }

    async fn write_script(
        &mut self,
        path: CallbackPath,
        ping: bool,
        name: &str,
    ) -> anyhow::Result<PathBuf> {
        let text = pgbench::script(path, ping)?;
        let file = self.work.join(name);
        std::fs::write(&file, &text)?;
        if !ping && !self.results.scripts.iter().any(|(n, _)| n == name) {
            self.results.scripts.push((name.to_owned(), text));
        }
        Ok(file)
    }

    // ---- new callbacks ----

    async fn step_new(&mut self) -> anyhow::Result<()> {
        say(
            "==> New callbacks: pgbench on backend::charge::NEW_CHARGE_SQL, then POST /api/payments/callback",
        );
        let script = self
            .write_script(CallbackPath::New, false, "new_callback.sql")
            .await?;
        let ping_script = if self.args.pgbench_ping {
            Some(
                self.write_script(CallbackPath::New, true, "new_callback_ping.sql")
                    .await?,
            )
        } else {
            None
        };
        self.backend_addr().await?;
        let focus = self.focus();
        let warmup = self.args.warmup;
        if warmup > 0 {
            say(format!(
                "    warm-up ({warmup} s each at {focus} clients, discarded)"
            ));
            self.pgbench_new(&script, focus, warmup, false).await?;
            self.backend_new(focus, warmup, false).await?;
        }
        for (clients, round) in self.schedule() {
            let measured = clients == focus && round == 0;
            let run = self
                .pgbench_new(&script, clients, self.args.duration, measured)
                .await?;
            say(run.line(&self.label("pgbench new callback", round), "tps  "));
            self.results.new_pgbench.push(run);
            if let Some(ping_script) = ping_script.as_ref().filter(|_| round == 0) {
                let run = self
                    .pgbench_new(ping_script, clients, self.args.duration, false)
                    .await?;
                say(run.line("pgbench + ping new callback", "tps  "));
                self.results.new_pgbench_ping.push(run);
            }
            let run = self
                .backend_new(clients, self.args.duration, measured)
                .await?;
            say(run.line(&self.label("backend new callback", round), "req/s"));
            self.results.new_backend.push(run);
        }

        let k = {
            self.pg_stock.ensure(1).await?;
            self.pg_stock.take(1)
        };
        match explain::new_callback(&self.pg_pool, k).await {
            Ok(plans) => self.results.explain = plans,
            Err(err) => say(format!("    warning: EXPLAIN failed: {err:#}")),
        }

        if self.args.profile {
            if profile::available().await {
                let seconds = self.args.duration;
                say(format!(
                    "    profiling with perf ({seconds} s each at {focus} clients, not counted)"
                ));
                let recording = profile::start(
                    &self.work.join("perf-pgbench-new.data"),
                    Duration::from_secs(seconds),
                )?;
                self.pgbench_new(&script, focus, seconds, false).await?;
                let text = recording.finish(None).await?;
                self.results
                    .profiles
                    .push((format!("pgbench, new callbacks, {focus} clients"), text));
                let recording = profile::start(
                    &self.work.join("perf-backend-new.data"),
                    Duration::from_secs(seconds),
                )?;
                self.backend_new(focus, seconds, false).await?;
                let text = recording.finish(self.roots.backend).await?;
                self.results
                    .profiles
                    .push((format!("backend, new callbacks, {focus} clients"), text));
            } else {
                say("    perf is not available: no profile");
                self.results
                    .notes
                    .push("--profile was given but perf does not run here".into());
            }
        }
        Ok(())
    }

    async fn pgbench_new(
        &mut self,
        script: &Path,
        clients: usize,
        seconds: u64,
        measured: bool,
    ) -> anyhow::Result<Run> {
        let need = self.orders_needed(self.rate_hint, seconds, clients);
        self.pg_stock.ensure(need).await?;
        self.http_stock.ensure(need).await?;
        let base = self.pg_stock.next();
        let pool = self.pg_pool.clone();
        self.before_run(&pool, measured).await?;
        let mut vars = vec![
            ("i".to_owned(), "0".to_owned()),
            ("base".to_owned(), base.to_string()),
            ("nclients".to_owned(), clients.to_string()),
        ];
        vars.extend(pgbench::constants(CallbackPath::New));
        let invocation = Invocation {
            script,
            server_args: self.server.cli_args(),
            database: &self.pg_db,
            clients,
            duration: Some(Duration::from_secs(seconds)),
            vars,
            log_prefix: Some(self.work.join(format!("pgbench_new_{clients}"))),
        };
        let watch = self.watch(Instant::now(), seconds);
        let mut run = invocation.run().await?;
        watch.attach(&mut run).await?;
        postgres::wait_idle(&pool, &self.pg_db).await?;
        self.pg_stock.skip_used("payment_callbacks").await?;
        self.rate_hint = self.rate_hint.max(run.rate);
        if measured {
            self.record_statements(
                format!("pgbench, new callbacks, {clients} clients"),
                &pool,
                true,
                run.ok,
            )
            .await;
        }
        Ok(run)
    }

    async fn record_statements(
        &mut self,
        label: String,
        pool: &PgPool,
        pgbench_db: bool,
        operations: u64,
    ) {
        if !self.server.is_owned() {
            return;
        }
        let db = if pgbench_db {
            &self.pg_db
        } else {
            &self.http_db
        };
        match postgres::statement_times(pool, db).await {
            Ok(statements) => self.results.statements.push(StatementBreakdown {
                label,
                operations,
                statements,
            }),
            Err(err) => say(format!("    warning: pg_stat_statements: {err}")),
        }
    }

    async fn backend_new(
        &mut self,
        clients: usize,
        seconds: u64,
        measured: bool,
    ) -> anyhow::Result<Run> {
        let addr = self.backend_addr().await?;
        let need = self.orders_needed(self.rate_hint, seconds, clients);
        self.pg_stock.ensure(need).await?;
        self.http_stock.ensure(need).await?;
        let base = self.http_stock.next();
        let per_worker = (need as usize).div_ceil(clients);
        let signing = Instant::now();
        let mut jobs = Vec::with_capacity(clients);
        for worker in 0..clients {
            let mut queue = VecDeque::with_capacity(per_worker);
            for i in 0..per_worker {
                let k = base + (worker + clients * i) as i64;
                queue.push_back(self.signer.callback(k)?);
            }
            jobs.push(Job::Queue(queue));
        }
        let signed = per_worker * clients;
        let signing_us = signing.elapsed().as_secs_f64() * 1e6 / signed.max(1) as f64;
        self.results.signing_us = Some(
            self.results
                .signing_us
                .map_or(signing_us, |s| s.min(signing_us)),
        );
        let pool = self.http_pool.clone();
        self.before_run(&pool, measured).await?;
        let run = self.load(addr, jobs, seconds, "new callbacks").await?;
        self.http_stock.skip_used("payment_callbacks").await?;
        self.rate_hint = self.rate_hint.max(run.rate);
        if measured {
            self.record_statements(
                format!("backend, new callbacks, {clients} clients"),
                &pool,
                false,
                run.ok,
            )
            .await;
        }
        Ok(run)
    }

    /// Runs HTTP workers with CPU accounting; the first operation's run.
    async fn load(
        &mut self,
        addr: SocketAddr,
        jobs: Vec<Job>,
        seconds: u64,
        what: &str,
    ) -> anyhow::Result<Run> {
        Ok(self
            .load_all(addr, jobs, seconds, what)
            .await?
            .into_iter()
            .next()
            .unwrap_or_default())
    }

    async fn load_all(
        &mut self,
        addr: SocketAddr,
        jobs: Vec<Job>,
        seconds: u64,
        what: &str,
    ) -> anyhow::Result<Vec<Run>> {
        let clients = jobs.len();
        let connections = load::connect(addr, clients).await?;
        let start = Instant::now() + Duration::from_millis(50);
        let watch = self.watch(start, seconds);
        let outcome = load::run(connections, jobs, start, Duration::from_secs(seconds)).await?;
        let (cpu, wal) = (watch.cpu.await?, watch.wal.await?);
        let mut runs = outcome.runs;
        for run in &mut runs {
            run.cpu = cpu;
            run.wal = wal;
            if outcome.exhausted_workers > 0 {
                run.errors += outcome.exhausted_workers as u64;
                run.error_kinds.insert(
                    "worker ran out of prepared requests (raise the estimate)".into(),
                    outcome.exhausted_workers as u64,
                );
            }
        }
        if outcome.exhausted_workers > 0 {
            self.results.notes.push(format!(
                "{what} at {clients} clients: {} workers ran out of prepared requests before the end",
                outcome.exhausted_workers
            ));
        }
        Ok(runs)
    }

    // ---- duplicates ----

    async fn step_duplicate(&mut self) -> anyhow::Result<()> {
        say(
            "==> Duplicate storm: one callback id; pgbench on backend::charge::DUPLICATE_SQL, then the backend",
        );
        let new_script = self
            .write_script(CallbackPath::New, false, "new_callback.sql")
            .await?;
        let script = self
            .write_script(CallbackPath::Duplicate, false, "duplicate_callback.sql")
            .await?;
        let ping_script = if self.args.pgbench_ping {
            Some(
                self.write_script(CallbackPath::Duplicate, true, "duplicate_callback_ping.sql")
                    .await?,
            )
        } else {
            None
        };

        // pgbench side: charge one order once with the new-callback script, then repeat its id.
        self.pg_stock.ensure(1).await?;
        let k = self.pg_stock.take(1);
        let mut vars = vec![
            ("i".to_owned(), "0".to_owned()),
            ("base".to_owned(), k.to_string()),
            ("nclients".to_owned(), "1".to_owned()),
        ];
        vars.extend(pgbench::constants(CallbackPath::New));
        let first = Invocation {
            script: &new_script,
            server_args: self.server.cli_args(),
            database: &self.pg_db,
            clients: 1,
            duration: None,
            vars,
            log_prefix: None,
        }
        .run()
        .await?;
        anyhow::ensure!(
            first.ok == 1 && first.errors == 0,
            "the first delivery for pgbench's duplicate failed: {:?}",
            first.error_kinds
        );
        let mut dup_vars = vec![
            (
                "dup_callback_id".to_owned(),
                format!("{CALLBACK_PREFIX}{k}"),
            ),
            ("dup_order_no".to_owned(), format!("{ORDER_PREFIX}{k}")),
        ];
        dup_vars.extend(pgbench::constants(CallbackPath::Duplicate));

        // Backend side: the same, over HTTP.
        let addr = self.backend_addr().await?;
        self.http_stock.ensure(1).await?;
        let k = self.http_stock.take(1);
        let callback = self.signer.callback(k)?;
        let status = load::send_once(addr, &callback).await?;
        anyhow::ensure!(
            status == hyper::StatusCode::OK,
            "the first delivery answered {status}"
        );

        let focus = self.focus();
        let warmup = self.args.warmup;
        if warmup > 0 {
            say(format!(
                "    warm-up ({warmup} s each at {focus} clients, discarded)"
            ));
            self.pgbench_dup(&script, &dup_vars, focus, warmup, false)
                .await?;
            self.backend_dup(&callback, focus, warmup, false).await?;
        }
        for (clients, round) in self.schedule() {
            let measured = clients == focus && round == 0;
            let run = self
                .pgbench_dup(&script, &dup_vars, clients, self.args.duration, measured)
                .await?;
            say(run.line(&self.label("pgbench duplicate", round), "tps  "));
            self.results.dup_pgbench.push(run);
            if let Some(ping_script) = ping_script.as_ref().filter(|_| round == 0) {
                let run = self
                    .pgbench_dup(ping_script, &dup_vars, clients, self.args.duration, false)
                    .await?;
                say(run.line("pgbench + ping duplicate", "tps  "));
                self.results.dup_pgbench_ping.push(run);
            }
            let run = self
                .backend_dup(&callback, clients, self.args.duration, measured)
                .await?;
            say(run.line(&self.label("backend duplicate", round), "req/s"));
            self.results.dup_backend.push(run);
        }
        Ok(())
    }

    async fn pgbench_dup(
        &mut self,
        script: &Path,
        vars: &[(String, String)],
        clients: usize,
        seconds: u64,
        measured: bool,
    ) -> anyhow::Result<Run> {
        let pool = self.pg_pool.clone();
        self.before_run(&pool, measured).await?;
        let invocation = Invocation {
            script,
            server_args: self.server.cli_args(),
            database: &self.pg_db,
            clients,
            duration: Some(Duration::from_secs(seconds)),
            vars: vars.to_vec(),
            log_prefix: Some(self.work.join(format!("pgbench_dup_{clients}"))),
        };
        let watch = self.watch(Instant::now(), seconds);
        let mut run = invocation.run().await?;
        watch.attach(&mut run).await?;
        postgres::wait_idle(&pool, &self.pg_db).await?;
        if measured {
            self.record_statements(
                format!("pgbench, duplicates, {clients} clients"),
                &pool,
                true,
                run.ok,
            )
            .await;
        }
        Ok(run)
    }

    async fn backend_dup(
        &mut self,
        callback: &Prepared,
        clients: usize,
        seconds: u64,
        measured: bool,
    ) -> anyhow::Result<Run> {
        let addr = self.backend_addr().await?;
        // Same id, same body; a fresh signature time keeps it inside the 5-minute tolerance.
        let callback = self.signer.resign(callback)?;
        let jobs = (0..clients)
            .map(|_| Job::Repeat(callback.clone()))
            .collect();
        let pool = self.http_pool.clone();
        self.before_run(&pool, measured).await?;
        let run = self.load(addr, jobs, seconds, "duplicates").await?;
        if measured {
            self.record_statements(
                format!("backend, duplicates, {clients} clients"),
                &pool,
                false,
                run.ok,
            )
            .await;
        }
        Ok(run)
    }

    // ---- pay now ----

    async fn step_pay(&mut self) -> anyhow::Result<()> {
        say(format!(
            "==> Pay now (request token, then pay) with SANDBOX_CALLBACK_DELAY_MS={PAY_CALLBACK_DELAY_MS}, then redis-benchmark"
        ));
        let addr = self.start_backend("pay", PAY_CALLBACK_DELAY_MS).await?;
        let focus = self.focus();
        let warmup = self.args.warmup;
        if warmup > 0 {
            say(format!(
                "    warm-up ({warmup} s at {focus} clients, discarded)"
            ));
            self.backend_pay(addr, focus, warmup).await?;
        }
        for clients in self.args.clients.clone() {
            let runs = self.backend_pay(addr, clients, self.args.duration).await?;
            let mut runs = runs.into_iter();
            let pair = runs.next().unwrap_or_default();
            say(pair.line("backend pay now (pair)", "pair/s"));
            let token = runs.next().unwrap_or_default();
            let submit = runs.next().unwrap_or_default();
            say(format!(
                "      token p50 {:.2} ms p99 {:.2} ms; pay p50 {:.2} ms p99 {:.2} ms",
                token.latency.p50_ms,
                token.latency.p99_ms,
                submit.latency.p50_ms,
                submit.latency.p99_ms
            ));
            self.results.pay.push(pair);
            self.results.pay_token.push(token);
            self.results.pay_submit.push(submit);
        }
        self.stop_backend("pay now");
        let prefix = format!("{}rb:", self.redis_prefix);
        for clients in self.args.clients.clone() {
            for command in [RedisCommand::SetExNx, RedisCommand::GetDel] {
                let run = redis_bench::run(
                    &self.redis,
                    &prefix,
                    command,
                    clients,
                    self.args.redis_requests,
                )
                .await?;
                say(run.line(&format!("redis {}", command.label()), "op/s "));
                match command {
                    RedisCommand::SetExNx => self.results.redis_set.push(run),
                    RedisCommand::GetDel => self.results.redis_getdel.push(run),
                }
            }
        }
        Ok(())
    }

    async fn backend_pay(
        &mut self,
        addr: SocketAddr,
        clients: usize,
        seconds: u64,
    ) -> anyhow::Result<Vec<Run>> {
        let need = self.orders_needed(self.pay_hint, seconds, clients);
        self.http_stock.ensure(need).await?;
        let base = self.http_stock.next();
        let per_worker = (need as usize).div_ceil(clients);
        let jobs = (0..clients)
            .map(|worker| {
                Job::PayNow(
                    (0..per_worker)
                        .map(|i| format!("{ORDER_PREFIX}{}", base + (worker + clients * i) as i64))
                        .collect(),
                )
            })
            .collect();
        let pool = self.http_pool.clone();
        self.before_run(&pool, false).await?;
        let runs = self.load_all(addr, jobs, seconds, "pay now").await?;
        self.http_stock.skip_used("request_tokens_issued").await?;
        if let Some(pair) = runs.first() {
            self.pay_hint = self.pay_hint.max(pair.rate);
        }
        Ok(runs)
    }
}
