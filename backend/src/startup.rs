//! Building and running the application: database, migrations, Redis, router, listener.

use crate::config::{Command, Config, PlatformChoice};
use crate::error::ApiError;
use crate::http::auth::bearer;
use crate::http::auth::session;
use crate::http::limits::Limits;
use crate::http::openapi::ApiDoc;
use crate::http::routes;
use crate::http::serve;
use crate::http::static_files;
use crate::http::web_security::{self, Csrf, SecurityHeaders};
use crate::infra::redis::RedisTarget;
use crate::infra::tokens::TokenStore;
use crate::platform::{Platform, dispatcher};
use crate::state::AppState;
use anyhow::Context;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{StatusCode, header};
use axum::middleware;
use checkout_rules::query_schedule::QuerySchedule;
use secrecy::ExposeSecret;
use sqlx::PgPool;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::sensitive_headers::SetSensitiveHeadersLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use tower_sessions::SessionManagerLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Time a connection has to deliver a complete request head (from its accept,
/// or from the previous response on a kept-alive connection) before it is closed.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections served at once. When all are taken, new connections wait in the
/// kernel's accept backlog until one closes (see [`crate::http::serve`]).
pub const MAX_CONNECTIONS: usize = 1024;

/// Time a response write may make no progress (the client stopped reading)
/// before the connection is closed (see [`crate::http::serve`]).
pub const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections one client address may hold at once: a quarter of
/// [`MAX_CONNECTIONS`], far above a browser's six or a load test's hundred,
/// so one address can never take every slot (see [`crate::http::serve`]).
pub const MAX_CONNECTIONS_PER_CLIENT: usize = MAX_CONNECTIONS / 4;

/// The migrations in `migrations/`, embedded at compile time.
pub use crate::schema::MIGRATOR;

/// A built application: bound to its port, migrated, ready to serve.
pub struct Application {
    listener: TcpListener,
    /// `METRICS_BIND_ADDR`: `/metrics` without a token.
    metrics_listener: Option<TcpListener>,
    state: AppState,
    router: Router,
    query_schedule: QuerySchedule,
    /// When the daily reconciliation worker runs (UTC time of day); None: it does not.
    reconcile_at: Option<time::Time>,
    /// `DRAIN_SECS` and `DRAIN_DEADLINE_SECS`.
    drain: crate::infra::shutdown::DrainTiming,
}

impl Application {
    /// Creates the database if missing, migrates it, connects, binds. Port 0 picks a free port.
    /// With `DATABASE_MIGRATION_URL`, the migrations run with that role and the
    /// serving pool (`DATABASE_URL`) runs no DDL ([`crate::schema::prepare`]).
    ///
    /// Refuses a configuration [`Config::settle`] refuses before connecting to anything.
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        let settled = config.settle()?;
        // Installed before the first request is counted.
        crate::infra::metrics::handle();
        let db = crate::schema::prepare(
            config.database_url.expose(),
            config
                .database_migration_url
                .as_ref()
                .map(ExposeSecret::expose_secret),
            config.database_max_connections,
        )
        .await?;

        // MERCHANT_API_KEY is one of the shop's keys while it is set, and stops working when it is not.
        let merchant_keys = crate::merchants::KeyHasher::new(config.merchant_key_secret.clone());
        crate::db::merchants::register_env_key(
            &db,
            config
                .merchant_api_key
                .as_ref()
                .map(|key| merchant_keys.hash(key.expose_secret())),
        )
        .await
        .context("cannot register MERCHANT_API_KEY")?;

        let webhook = settled.webhook_secret;
        if settled.secret_generated {
            tracing::warn!(
                "WEBHOOK_SECRET is not set: a random secret was generated for this process \
                 (Standard Webhooks callbacks to /api/payments/callback signed with any other secret are refused)"
            );
        }
        let tokens = TokenStore::new(
            &settled.redis,
            &config.redis_key_prefix,
            Duration::from_secs(config.token_ttl_secs),
        )
        .context("REDIS_URL is not a valid Redis URL")?;
        let transport = settled.redis.transport();
        if let RedisTarget::Sentinel {
            sentinels,
            master_name,
            ..
        } = &settled.redis
        {
            tracing::info!(
                ?sentinels,
                %master_name,
                tls = transport,
                "the redis primary is found through sentinel"
            );
        }
        if transport == "unverified" {
            tracing::warn!(
                "REDIS_URL ends in #insecure: Redis's TLS certificates are not verified, so \
                 whoever sits between this instance and Redis can read and forge request tokens"
            );
        }

        let listener = TcpListener::bind(config.bind_addr)
            .await
            .with_context(|| format!("cannot listen on {}", config.bind_addr))?;
        let local = listener.local_addr()?;
        let metrics_listener = match config.metrics_bind_addr {
            Some(addr) => {
                let listener = TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen on {addr} (METRICS_BIND_ADDR)"))?;
                tracing::info!(address = %listener.local_addr()?, "metrics served without a token on METRICS_BIND_ADDR");
                Some(listener)
            }
            None => None,
        };
        let callback_host = if local.ip().is_unspecified() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            local.ip()
        };
        let notify_base = config.notify_base_url.clone().unwrap_or_else(|| {
            format!(
                "http://{}",
                std::net::SocketAddr::new(callback_host, local.port())
            )
        });
        let platform = connect_platform(&settled.platform, &webhook, notify_base)?;
        tracing::info!(notify_url = %platform.notify_url(), "the platform posts its notifications here");

        let reset = platform.forget_in_process_hand_overs(&db).await?;
        if reset > 0 {
            tracing::info!(
                attempts = reset,
                "payments the previous process's in-process platform held will be handed over again"
            );
        }

        // The one rule for demo shoppers: made here, and signing in or keeping a
        // session (auth::session) only while it holds.
        let demo_shoppers_allowed = routes::demo::shoppers_allowed(config.demo, &settled.platform);
        let demo_shoppers = if config.demo {
            let currency = routes::demo::currency_for(settled.platform.kind());
            routes::demo::seed_products(&db, currency).await?;
            if demo_shoppers_allowed {
                routes::demo::seed_shoppers(&db, currency).await?
            } else {
                Vec::new()
            }
        } else {
            routes::demo::remove(&db).await?;
            Vec::new()
        };
        // The demo's second merchant, where demo shoppers may be: it calls this
        // backend's merchant API as a merchant's server would.
        let demo_partner = if demo_shoppers_allowed {
            routes::partner::seed(
                &db,
                &merchant_keys,
                &config.public_origin,
                format!(
                    "http://{}",
                    std::net::SocketAddr::new(callback_host, local.port())
                ),
            )
            .await?
            .map(Arc::new)
        } else {
            None
        };
        let warm = crate::db::warm::WarmConnections::new(
            db.clone(),
            crate::db::warm::WarmConnections::max_for_pool(config.database_max_connections),
        );
        let sessions = session::layer(
            &db,
            warm.clone(),
            Duration::from_secs(config.session_idle_secs),
            config.cookie_secure,
        )
        .await
        .context("cannot prepare the session store")?;

        let state = AppState::new(crate::state::Handles {
            db: db.clone(),
            warm,
            tokens,
            webhook,
            admin_token: config.admin_token.clone().map(Arc::new),
            operator_sessions: crate::http::auth::operator::OperatorSessions::new(
                config.admin_token.as_ref(),
                Duration::from_secs(config.ops_session_max_secs),
            ),
            merchant_keys,
            demo_partner,
            platform,
            demo_shoppers_allowed,
            demo_shoppers: Arc::new(demo_shoppers),
            limits: Limits::new(&config.limits),
            public_origin: config.public_origin.clone().into(),
            order_ttl_secs: config.order_ttl_secs,
            trusted_proxies: crate::http::extract::TrustedProxies::new(&config.trusted_proxies),
            shutdown: crate::infra::shutdown::Shutdown::new(),
            seen: crate::duplicates::SeenCallbacks::new(db.clone()),
            submissions: crate::platform::dispatcher::Submissions::new(db.clone()),
            token_records: crate::db::orders::TokenRecords::new(db.clone()),
            health_log: Default::default(),
        });
        let web = WebSecurity {
            csrf: Csrf::new(&config.public_origin),
            sessions,
            headers: SecurityHeaders::new(config.static_dir.as_deref(), config.cookie_secure)?,
        };
        let router = router(state.clone(), config.static_dir.as_deref(), web);
        tracing::info!(
            address = %local,
            platform = settled.platform.kind().as_str(),
            demo = config.demo,
            "checkout backend ready"
        );
        // Only the checkout's own protocol has bills to download (the sandbox's
        // die with the process; WeChat Pay and Alipay bills are not fetched yet).
        let has_bills = settled.platform.kind() == crate::config::PlatformKind::Remote;
        if config.reconcile_daily && !has_bills {
            tracing::info!(
                platform = settled.platform.kind().as_str(),
                "no daily bill reconciliation with this platform"
            );
        }
        let reconcile_at = (config.reconcile_daily && has_bills).then_some(config.reconcile_at_utc);
        Ok(Self {
            listener,
            metrics_listener,
            state,
            router,
            query_schedule: config.query_schedule(),
            reconcile_at,
            drain: config.drain_timing(),
        })
    }

    /// The port actually bound.
    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    /// The port of the `METRICS_BIND_ADDR` listener, when there is one.
    pub fn metrics_port(&self) -> Option<u16> {
        self.metrics_listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
            .map(|a| a.port())
    }

    /// The shared state (tests use its pool).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// The instance's phase: [`crate::infra::shutdown::Phase::Draining`] from the
    /// first SIGTERM (tests move it themselves).
    pub fn shutdown(&self) -> crate::infra::shutdown::Shutdown {
        self.state.shutdown.clone()
    }

    /// Serves until SIGTERM or SIGINT and a drain ([`crate::infra::shutdown`]); runs
    /// the workers meanwhile. Returns once the requests in flight and the
    /// workers' last rounds finished, or at the drain deadline.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let stop = self.state.shutdown.clone();
        let crate::infra::shutdown::DrainTiming { drain, deadline } = self.drain;
        tokio::spawn(crate::infra::shutdown::follow_signals(stop.clone()));
        let (db, platform) = (self.state.db.clone(), self.state.platform.clone());
        let submissions = self.state.submissions.clone();
        let warm = self.state.warm.clone();
        let reconcile_at = self.reconcile_at;
        let workers = tokio::spawn({
            let stop = stop.clone();
            let schedule = self.query_schedule;
            async move {
                let reconciliation = async {
                    if let Some(at) = reconcile_at {
                        crate::reconcile::worker::run(
                            db.clone(),
                            platform.clone(),
                            at,
                            stop.clone(),
                        )
                        .await;
                    }
                };
                tokio::join!(
                    warm.sweep(stop.clone()),
                    dispatcher::run(db.clone(), platform.clone(), submissions, stop.clone()),
                    crate::expiry::run(db.clone(), platform.clone(), stop.clone()),
                    crate::refund::run_dispatcher(db.clone(), platform.clone(), stop.clone()),
                    crate::active_query::run_queries(
                        db.clone(),
                        platform.clone(),
                        schedule,
                        stop.clone()
                    ),
                    reconciliation,
                );
                tracing::info!("workers stopped: no new rows are claimed");
            }
        });
        let limits = serve::Limits {
            header_read_timeout: HEADER_READ_TIMEOUT,
            write_stall_timeout: WRITE_STALL_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
            max_connections_per_client: MAX_CONNECTIONS_PER_CLIENT,
            trusted_proxies: self.state.trusted_proxies.clone(),
            shutdown_deadline: deadline,
        };
        // The listener closes once the drain is over (or at a second signal).
        let stopping = crate::infra::shutdown::stop_after_drain(stop.clone(), drain);
        let server = serve::serve(self.listener, self.router, limits, stopping);
        let metrics = serve_metrics(self.metrics_listener, self.state.db.clone());
        let serving = async {
            let served = tokio::select! {
                result = server => result,
                result = metrics => result,
                () = crate::infra::metrics::run_upkeep() => Ok(()),
            };
            // The server returns on its own only once stopping; an error stops the rest too.
            stop.advance(crate::infra::shutdown::Phase::Stopping);
            served
        };
        // The workers' last rounds share the requests' deadline.
        let workers_done = async {
            stop.reached(crate::infra::shutdown::Phase::Stopping).await;
            if tokio::time::timeout(deadline, workers).await.is_err() {
                tracing::warn!("a worker round still running at the drain deadline was cut");
            }
        };
        let (served, ()) = tokio::join!(serving, workers_done);
        tracing::info!("stopped");
        served
    }
}

/// `GET /metrics` without a token on the `METRICS_BIND_ADDR` listener (and
/// nothing else there); never ends when there is no such listener.
async fn serve_metrics(listener: Option<TcpListener>, db: PgPool) -> std::io::Result<()> {
    let Some(listener) = listener else {
        return std::future::pending().await;
    };
    let app = Router::new().route(
        "/metrics",
        axum::routing::get(move || async move { crate::http::metrics::render(&db).await }),
    );
    axum::serve(listener, app).await
}

/// The connector for the platform chosen, its choice logged.
fn connect_platform(
    choice: &PlatformChoice,
    webhook: &callback_signing::CallbackSecret,
    notify_base: String,
) -> anyhow::Result<Platform> {
    Ok(match choice {
        PlatformChoice::Remote { url } => {
            tracing::info!(platform = %url, "payments go to a remote platform");
            Platform::remote(url, notify_base)?
        }
        PlatformChoice::Wechatpay(settings) => {
            tracing::info!(api = %settings.api_url, mchid = %settings.merchant.mchid,
                appid = %settings.appid, merchant_serial = %settings.merchant.serial_no,
                platform_serial = %settings.platform.serial, "payments go to WeChat Pay (API v3)");
            Platform::wechatpay(settings.as_ref().clone(), notify_base)?
        }
        PlatformChoice::Alipay(settings) => {
            tracing::info!(gateway = %settings.gateway_url, app_id = %settings.app_id,
                alipay_public_key = %settings.alipay_public_key.fingerprint(),
                "payments go to Alipay (open platform)");
            Platform::alipay(settings.as_ref().clone(), notify_base)?
        }
        PlatformChoice::Sandbox {
            callback_delay,
            drop_callbacks,
        } => sandbox(webhook, *callback_delay, *drop_callbacks, notify_base)?,
    })
}

/// The in-process sandbox platform, announced loudly: nothing it "charges" is real.
#[cfg(feature = "sandbox")]
fn sandbox(
    secret: &callback_signing::CallbackSecret,
    callback_delay: Duration,
    drop_callbacks: bool,
    notify_base: String,
) -> anyhow::Result<Platform> {
    if drop_callbacks {
        tracing::warn!(
            "SANDBOX_DROP_CALLBACKS=true: the sandbox posts no callbacks; only the active query settles payments"
        );
    }
    tracing::warn!(
        "PLATFORM=sandbox: payments are decided by the in-process simulator and no money moves \
         (amounts ending in 13 minor units fail). Never run this in production."
    );
    Platform::in_process(secret, callback_delay, drop_callbacks, notify_base)
}

#[cfg(not(feature = "sandbox"))]
fn sandbox(
    _secret: &callback_signing::CallbackSecret,
    _callback_delay: Duration,
    _drop_callbacks: bool,
    _notify_base: String,
) -> anyhow::Result<Platform> {
    // `Config::settle` refuses PLATFORM=sandbox in this build before we get here.
    Err(crate::config::ConfigError::SandboxNotBuilt.into())
}

/// Starts the backend from the environment and serves until stopped: what
/// `main` does. A refused configuration or a failed start prints one line
/// (`error: ...` with its causes) and exits 2, instead of a debug dump.
///
/// `backend migrate` applies the migrations (with `DATABASE_MIGRATION_URL`, else
/// `DATABASE_URL`), prints what it did and exits 0, for deploys that migrate in a
/// step of their own.
///
/// `backend reconcile --date YYYY-MM-DD` reconciles that day's bill
/// ([`crate::reconcile`]) and prints the outcome: exit 0 once reconciled
/// (with mismatches or without), 1 when it could not be (the platform did not
/// answer, the bill does not read, the database failed), 2 for a refused
/// date or configuration.
pub async fn run_from_env() -> std::process::ExitCode {
    use clap::Parser;
    if let Err(err) = crate::infra::telemetry::try_init() {
        eprintln!("error: {err}");
        return std::process::ExitCode::from(2);
    }
    let config = Config::parse();
    if let Some(Command::Reconcile { date }) = config.command {
        return reconcile_command(&config, date).await;
    }
    let result = async {
        if config.command == Some(Command::Migrate) {
            let url = config
                .database_migration_url
                .as_ref()
                .map_or(config.database_url.expose(), ExposeSecret::expose_secret);
            let migrated = crate::schema::migrate(url).await?;
            for line in migrated.report() {
                println!("{line}");
            }
            return anyhow::Ok(());
        }
        crate::infra::faults::arm_from_env()?;
        let app = Application::build(config).await?;
        app.run_until_stopped().await?;
        anyhow::Ok(())
    }
    .await;
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::from(2)
        }
    }
}

/// `backend reconcile --date`: see [`run_from_env`].
async fn reconcile_command(config: &Config, date: time::Date) -> std::process::ExitCode {
    use std::process::ExitCode;
    let refused = |message: String| {
        eprintln!("error: {message}");
        ExitCode::from(2)
    };
    if let Err(message) = crate::reconcile::check_day_is_over(date, time::OffsetDateTime::now_utc())
    {
        return refused(message);
    }
    let settled = match config.settle() {
        Ok(settled) => settled,
        Err(err) => return refused(err.to_string()),
    };
    if settled.platform.kind() == crate::config::PlatformKind::Sandbox {
        return refused(
            "PLATFORM=sandbox: the in-process sandbox keeps its payments inside the serving \
             process, so this command has no bill to fetch; reconcile against PLATFORM=remote"
                .to_owned(),
        );
    }
    let result = async {
        let notify_base = config
            .notify_base_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", config.bind_addr));
        let platform = connect_platform(&settled.platform, &settled.webhook_secret, notify_base)?;
        let db = sqlx::postgres::PgPoolOptions::new()
            .max_connections(2)
            .acquire_timeout(Duration::from_secs(10))
            .connect(config.database_url.expose())
            .await
            .context("cannot connect to DATABASE_URL")?;
        anyhow::Ok(crate::reconcile::reconcile(&db, &platform, date).await?)
    }
    .await;
    match result {
        Ok(report) => {
            for line in crate::reconcile::report_lines(&report) {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: cannot reconcile {date}: {err:#}");
            ExitCode::from(1)
        }
    }
}

/// Creates the database if it does not exist, applies the pending migrations
/// and opens a pool, all with one URL (the bench and one-role setups; the
/// backend itself goes through [`crate::schema::prepare`]).
pub async fn connect_and_migrate(
    database_url: &str,
    max_connections: u32,
) -> anyhow::Result<PgPool> {
    crate::schema::prepare(database_url, None, max_connections).await
}

/// What guards shoppers' browsers ([`crate::http::web_security`]) and their sessions.
pub struct WebSecurity {
    /// The CSRF check.
    pub csrf: Csrf,
    /// Session cookies and their PostgreSQL store.
    pub sessions: SessionManagerLayer<session::Sessions>,
    /// Headers on every answer.
    pub headers: SecurityHeaders,
}

/// The whole HTTP surface: `/healthz`, `/readyz`, `/metrics`, `/api/*`, and the payment page when `static_dir` is set.
pub fn router(state: AppState, static_dir: Option<&Path>, web: WebSecurity) -> Router {
    let metrics = OpenApiRouter::new()
        .routes(routes!(crate::http::metrics::metrics))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            bearer::require,
        ));
    let (api, mut doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(routes::health::healthz))
        .merge(metrics)
        .nest("/api", routes::api(&state, web.csrf, web.sessions))
        .split_for_parts();
    // The demo partner's pages (404 unless it runs): HTML, outside the API and its description.
    let api = api.merge(routes::partner::routes());
    // The balancer asks /readyz twice a second per instance: it stays out of
    // the request log and the metrics, where a draining instance's 503s
    // would read as failures.
    let (readiness, readiness_doc) = OpenApiRouter::new()
        .routes(routes!(routes::health::readyz))
        .split_for_parts();
    doc.merge(readiness_doc);
    let headers = Arc::new(web.headers);
    let readiness = readiness
        .layer(middleware::from_fn_with_state(
            Arc::clone(&headers),
            web_security::security_headers,
        ))
        .with_state(state.clone());
    // Every route's latency and outcome; after routing, so it knows the route.
    let api = api.route_layer(middleware::from_fn_with_state(
        state.clone(),
        crate::http::metrics::track,
    ));
    let doc = crate::http::openapi::Document::new(&doc);
    let trusted_proxies = state.trusted_proxies.clone();
    let mut app = api.with_state(state);
    app = match static_dir {
        // Files of the build output; client-side routes such as /pay/{order_no}
        // get index.html with 200; dotfiles and symlinks out of `dir` are 404.
        Some(dir) => app.fallback_service(static_files::service(dir)),
        None => app.fallback(|| async { ApiError::NotFound }),
    };
    // The layers every answer passes through wrap the router once, as one
    // service, rather than each route through `Router::layer`: that boxes
    // every route again per layer, and a request then cloned every boxed
    // layer beneath each `from_fn` and `Route` it passed (49 boxed clones, an
    // allocation each, per callback; about a quarter of the backend's own
    // instructions per callback; docs/BENCHMARKS.md, "What each design choice
    // bought"). Here the stack is one type, cloned once per request, and the
    // router is an `Arc`.
    // It is the readiness router's fallback, so `/readyz` alone stays outside.
    let app = ServiceBuilder::new()
        .layer(SetSensitiveHeadersLayer::new([
            header::AUTHORIZATION,
            header::HeaderName::from_static(callback_signing::HEADER_SIGNATURE),
        ]))
        .layer(TraceLayer::new_for_http())
        .layer(CatchPanicLayer::new())
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            Duration::from_secs(15),
        ))
        .layer(middleware::from_fn_with_state(
            headers,
            web_security::security_headers,
        ))
        .layer(DefaultBodyLimit::max(crate::http::extract::MAX_BODY_BYTES))
        .layer(axum::Extension(trusted_proxies))
        .layer(axum::Extension(doc))
        .service(app);
    readiness.fallback_service(app)
}
