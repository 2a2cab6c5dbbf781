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
use crate::pgbench::{self, CallbackPath};
use crate::report::{Balanced, ScaleOut};
use std::net::SocketAddr;
use testkit::{BackendProcess, OwnedHaproxy};

impl Bench {
    pub(super) async fn step_scale(&mut self) -> anyhow::Result<()> {
        let counts = self.args.instance_counts();
        let most = counts.last().copied().unwrap_or(1);
        let clients = self.focus();
        say(format!(
            "==> Scale-out at {clients} clients: pgbench on NEW_CHARGE_SQL, then new callbacks straight \
             to one backend and through HAProxy with {counts:?} backends on one database"
        ));
        let script = self.write_script("new.sql", pgbench::script(CallbackPath::New))?;
        let mut backends = Vec::with_capacity(most);
        let mut balancers = Vec::with_capacity(counts.len());
        let outcome = async {
            for n in 1..=most {
                let env = self.backend_env("callbacks", 500);
                let log = self.work.join(format!("backend-scale-{n}.log"));
                let backend = BackendProcess::start(&self.backend_bin, env, log).await?;
                self.roots.backends.extend(backend.pid());
                backends.push(backend);
            }
            let ports: Vec<u16> = backends.iter().map(BackendProcess::port).collect();
            for &n in &counts {
                let haproxy = OwnedHaproxy::start(&ports[..n]).await?;
                self.roots.balancers.extend(haproxy.pid());
                balancers.push((n, SocketAddr::from(([127, 0, 0, 1], haproxy.port)), haproxy));
            }
            let (seconds, warmup) = (self.args.duration, self.args.warmup);
            if warmup > 0 {
                say(format!(
                    "    warm-up ({warmup} s each at {clients} clients: pgbench, HAProxy + {most}; discarded)"
                ));
                self.pgbench_new(&script, clients, warmup).await?;
                let (_, most_addr, _) = balancers.last().ok_or_else(|| anyhow::anyhow!("no HAProxy"))?;
                self.backend_new_at(*most_addr, clients, warmup).await?;
            }
            let direct_addr = SocketAddr::from(([127, 0, 0, 1], ports[0]));
            let mut scale = ScaleOut {
                clients,
                balanced: counts
                    .iter()
                    .map(|&instances| Balanced {
                        instances,
                        runs: Vec::new(),
                    })
                    .collect(),
                ..ScaleOut::default()
            };
            for round in 0..self.args.rounds {
                let run = self.pgbench_new(&script, clients, seconds).await?;
                say(run.line(&self.label("pgbench new callback", round), "tps  "));
                scale.pgbench.push(run);
                let run = self.backend_new_at(direct_addr, clients, seconds).await?;
                say(run.line(&self.label("straight to 1 backend", round), "req/s"));
                scale.direct.push(run);
                for (series, (n, addr, _)) in scale.balanced.iter_mut().zip(&balancers) {
                    let run = self.backend_new_at(*addr, clients, seconds).await?;
                    say(run.line(&self.label(&format!("HAProxy + {n}"), round), "req/s"));
                    series.runs.push(run);
                }
            }
            anyhow::Ok(scale)
        }
        .await;
        self.roots.backends.clear();
        self.roots.balancers.clear();
        // The backends stop gracefully; HAProxy goes when dropped.
        for backend in &mut backends {
            backend.terminate();
        }
        self.results.scale = Some(outcome?);
        Ok(())
    }
}
