//! The scale-out step (`--steps scale`): at the focus client count, pgbench on
//! `bench::handler_sql::NEW_CHARGE_SQL`, then the same new callbacks straight to
//! one backend and through HAProxy (`deploy/haproxy.cfg`) with 1, 2 and 3
//! backends, round after round; the figures go to `docs/SCALING.md`.
//!
//! Every instance runs on the backend's one database with the environment the
//! single backend of the callback steps gets. All instances, and one HAProxy
//! per instance count, start before the first run and stay up until the last,
//! so a round's runs differ only in where the load is sent.

use super::{Bench, say};
use crate::pgbench::CallbackPath;
use crate::report::{Balanced, ScaleOut};
use crate::stats::Run;
use anyhow::{Context, bail};
use std::net::SocketAddr;
use std::path::Path;
use storm::processes::{BackendProcess, OwnedHaproxy};

/// Connections kept free beside the instances' pools and pgbench: each
/// instance's migration connection at start, and the benchmark's own pools.
const SPARE_CONNECTIONS: i64 = 10;

/// The processes of the step; stopped when it ends, however it ends.
struct Cluster {
    backends: Vec<BackendProcess>,
    /// One HAProxy per instance count, in front of the first that many backends.
    balancers: Vec<(usize, OwnedHaproxy)>,
}

impl Cluster {
    /// Backend 1, addressed straight.
    fn direct(&self) -> anyhow::Result<SocketAddr> {
        let backend = self.backends.first().context("no backend runs")?;
        Ok(SocketAddr::from(([127, 0, 0, 1], backend.port())))
    }

    /// The HAProxy in front of `instances` backends.
    fn balancer(&self, instances: usize) -> anyhow::Result<SocketAddr> {
        let (_, haproxy) = self
            .balancers
            .iter()
            .find(|(n, _)| *n == instances)
            .with_context(|| format!("no HAProxy for {instances} backends"))?;
        Ok(SocketAddr::from(([127, 0, 0, 1], haproxy.port)))
    }

    /// Stops the backends gracefully (HAProxy goes when dropped).
    fn stop(mut self) {
        for backend in &mut self.backends {
            backend.terminate();
        }
    }
}

impl Bench {
    pub(super) async fn step_scale(&mut self) -> anyhow::Result<()> {
        let counts = self.args.instance_counts();
        let most = counts.last().copied().unwrap_or(1);
        let clients = self.focus();
        let pool = self.args.db_max_connections.unwrap_or(20);
        say(format!(
            "==> Scale-out at {clients} clients: pgbench on NEW_CHARGE_SQL, then new callbacks straight \
             to one backend and through HAProxy with {counts:?} backends on one database"
        ));
        let budget = self.connection_budget(most, pool, clients).await?;
        say(format!("    connection budget: {budget}"));
        let script = self
            .write_script(CallbackPath::New, false, "new_callback.sql")
            .await?;
        let cluster = self.start_cluster(most, &counts).await?;
        let outcome = self.scale_rounds(&cluster, &counts, clients, &script).await;
        self.roots.backends.clear();
        self.roots.balancers.clear();
        cluster.stop();
        let (pgbench, direct, balanced) = outcome?;
        self.results.scale = Some(ScaleOut {
            clients,
            pool_per_instance: pool,
            haproxy: haproxy_version().await,
            budget,
            pgbench,
            direct,
            balanced,
        });
        Ok(())
    }

    /// Checks that `instances` pools of `pool` and `clients` pgbench clients
    /// fit the server's connections; says how, for the report.
    async fn connection_budget(
        &self,
        instances: usize,
        pool: u32,
        clients: usize,
    ) -> anyhow::Result<String> {
        let (max, reserved, used): (i64, i64, i64) = sqlx::query_as(
            "SELECT current_setting('max_connections')::bigint, \
                    current_setting('superuser_reserved_connections')::bigint, \
                    (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')",
        )
        .fetch_one(&self.http_pool)
        .await?;
        let pools = instances as i64 * i64::from(pool);
        let wanted = pools + clients as i64 + SPARE_CONNECTIONS;
        let free = max - reserved - used;
        if wanted > free {
            bail!(
                "{instances} instances x DATABASE_MAX_CONNECTIONS {pool} = {pools} connections, plus \
                 {clients} pgbench clients and {SPARE_CONNECTIONS} spare, need {wanted}; the server \
                 has {free} free (max_connections {max}, {reserved} reserved, {used} in use): lower \
                 --db-max-connections or --instances, or use --postgres own"
            );
        }
        Ok(format!(
            "{instances} instances x {pool} = {pools} connections, plus {clients} pgbench clients and \
             {SPARE_CONNECTIONS} spare = {wanted}, of max_connections {max} ({reserved} reserved, \
             {used} in use before the step)"
        ))
    }

    /// Starts `most` backends on the backend's database and one HAProxy per count.
    async fn start_cluster(&mut self, most: usize, counts: &[usize]) -> anyhow::Result<Cluster> {
        let mut cluster = Cluster {
            backends: Vec::with_capacity(most),
            balancers: Vec::with_capacity(counts.len()),
        };
        for n in 1..=most {
            let env = self.backend_env("callbacks", 500);
            let log = self.work.join(format!("backend-scale-{n}.log"));
            let backend = BackendProcess::start(&self.backend_bin, env, log).await?;
            say(format!(
                "    backend {n}: pid {} on 127.0.0.1:{}",
                backend.pid().unwrap_or(0),
                backend.port()
            ));
            self.roots.backends.extend(backend.pid());
            cluster.backends.push(backend);
        }
        let ports: Vec<u16> = cluster.backends.iter().map(BackendProcess::port).collect();
        for &n in counts {
            let haproxy = OwnedHaproxy::start(&ports[..n]).await?;
            say(format!(
                "    HAProxy for {n} backend(s): pid {} on 127.0.0.1:{}",
                haproxy.pid().unwrap_or(0),
                haproxy.port
            ));
            self.roots.balancers.extend(haproxy.pid());
            cluster.balancers.push((n, haproxy));
        }
        Ok(cluster)
    }

    /// The warm-up, then every round: pgbench, straight, then HAProxy per count.
    async fn scale_rounds(
        &mut self,
        cluster: &Cluster,
        counts: &[usize],
        clients: usize,
        script: &Path,
    ) -> anyhow::Result<(Vec<Run>, Vec<Run>, Vec<Balanced>)> {
        let (seconds, warmup) = (self.args.duration, self.args.warmup);
        let most = counts.last().copied().unwrap_or(1);
        if warmup > 0 {
            say(format!(
                "    warm-up ({warmup} s each at {clients} clients: pgbench, HAProxy + {most}; discarded)"
            ));
            self.pgbench_new(script, clients, warmup, false).await?;
            self.backend_new_at(cluster.balancer(most)?, clients, warmup, false)
                .await?;
        }
        let (mut pgbench, mut direct) = (Vec::new(), Vec::new());
        let mut balanced: Vec<Balanced> = counts
            .iter()
            .map(|&instances| Balanced {
                instances,
                runs: Vec::new(),
            })
            .collect();
        for round in 0..self.args.rounds {
            let run = self.pgbench_new(script, clients, seconds, false).await?;
            say(run.line(&self.label("pgbench new callback", round), "tps  "));
            pgbench.push(run);
            let run = self
                .backend_new_at(cluster.direct()?, clients, seconds, false)
                .await?;
            say(run.line(&self.label("straight to 1 backend", round), "req/s"));
            direct.push(run);
            for series in &mut balanced {
                let n = series.instances;
                let run = self
                    .backend_new_at(cluster.balancer(n)?, clients, seconds, false)
                    .await?;
                say(run.line(&self.label(&format!("HAProxy + {n}"), round), "req/s"));
                series.runs.push(run);
            }
        }
        Ok((pgbench, direct, balanced))
    }
}

/// `haproxy -v`'s first line.
async fn haproxy_version() -> String {
    for program in ["haproxy", "/usr/sbin/haproxy"] {
        if let Ok(out) = tokio::process::Command::new(program)
            .arg("-v")
            .output()
            .await
            && out.status.success()
        {
            return String::from_utf8_lossy(&out.stdout)
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned();
        }
    }
    "unknown".into()
}
