//! `redis-benchmark` for the two commands pay-now sends to Redis: the token's
//! `SET key value EX 900 NX` and the submit's `GETDEL key`, on keys of our own prefix.

use crate::stats::{Latency, Run};
use anyhow::{Context, bail};
use tokio::process::Command;

/// A value of the size of a real token binding.
const VALUE: &str = r#"{"order_no":"bench_1234567","amount_cents":1234,"currency":"EUR"}"#;

/// Where Redis listens.
#[derive(Debug, Clone)]
pub struct RedisTarget {
    /// Host.
    pub host: String,
    /// Port.
    pub port: u16,
}

impl RedisTarget {
    /// From `redis://host:port[/db]`.
    pub fn from_url(url: &str) -> anyhow::Result<Self> {
        let rest = url
            .strip_prefix("redis://")
            .context("--redis-url must be redis://host:port")?;
        let rest = rest.split('/').next().unwrap_or(rest);
        let rest = rest.rsplit('@').next().unwrap_or(rest);
        let (host, port) = rest.split_once(':').unwrap_or((rest, "6379"));
        Ok(Self {
            host: host.to_owned(),
            port: port.parse().context("port in --redis-url")?,
        })
    }
}

/// The command a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisCommand {
    /// `SET <prefix>__rand_int__ <binding> EX 900 NX`.
    SetExNx,
    /// `GETDEL <prefix>__rand_int__`.
    GetDel,
}

impl RedisCommand {
    /// How the report names it.
    pub fn label(self) -> &'static str {
        match self {
            Self::SetExNx => "SET key val EX 900 NX",
            Self::GetDel => "GETDEL key",
        }
    }

    fn args(self, prefix: &str) -> Vec<String> {
        let key = format!("{prefix}__rand_int__");
        match self {
            Self::SetExNx => vec![
                "SET".into(),
                key,
                VALUE.into(),
                "EX".into(),
                "900".into(),
                "NX".into(),
            ],
            Self::GetDel => vec!["GETDEL".into(), key],
        }
    }
}

/// Runs `redis-benchmark -c clients -n requests` for one command. Keys are drawn
/// from `requests` random numbers, so most `GETDEL`s after a `SET` run find their key.
pub async fn run(
    target: &RedisTarget,
    prefix: &str,
    command: RedisCommand,
    clients: usize,
    requests: u64,
) -> anyhow::Result<Run> {
    let output = Command::new("redis-benchmark")
        .args(["-h", &target.host, "-p", &target.port.to_string()])
        .args(["-c", &clients.to_string(), "-n", &requests.to_string()])
        .args(["-r", &requests.to_string(), "--csv"])
        .args(command.args(prefix))
        .kill_on_drop(true)
        .output()
        .await
        .context("cannot run redis-benchmark (install it: apt-get install -y redis-tools)")?;
    if !output.status.success() {
        bail!(
            "redis-benchmark failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let mut run = parse_csv(&String::from_utf8_lossy(&output.stdout))?;
    run.clients = clients;
    run.ok = requests;
    Ok(run)
}

/// The last CSV row: `"test","rps","avg","min","p50","p95","p99","max"`; the test
/// name may hold quotes, so the numbers are read from the end.
fn parse_csv(stdout: &str) -> anyhow::Result<Run> {
    let line = stdout
        .lines()
        .rfind(|line| !line.starts_with("\"test\"") && line.contains("\",\""))
        .context("redis-benchmark printed no result")?;
    let fields: Vec<f64> = line
        .trim()
        .trim_matches('"')
        .rsplitn(8, "\",\"")
        .take(7)
        .map(|v| v.parse::<f64>().context("redis-benchmark number"))
        .collect::<anyhow::Result<_>>()?;
    // rsplitn yields from the end: max p99 p95 p50 min avg rps.
    let [max, p99, _p95, p50, _min, avg, rps] = fields[..] else {
        bail!("redis-benchmark row has too few fields: {line}");
    };
    Ok(Run {
        rate: rps,
        latency: Latency {
            p50_ms: p50,
            p99_ms: p99,
            mean_ms: avg,
            max_ms: max,
        },
        ..Run::default()
    })
}

/// Removes every key under `prefix` (what `SET` left behind and the backend's tokens).
pub async fn clean(url: &str, prefix: &str) -> anyhow::Result<u64> {
    let client = redis::Client::open(url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let mut cursor: u64 = 0;
    let mut removed = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut conn)
            .await?;
        if !keys.is_empty() {
            let n: u64 = redis::cmd("UNLINK")
                .arg(&keys)
                .query_async(&mut conn)
                .await?;
            removed += n;
        }
        if next == 0 {
            return Ok(removed);
        }
        cursor = next;
    }
}

/// `redis_version` from `INFO server`.
pub async fn version(url: &str) -> anyhow::Result<String> {
    let client = redis::Client::open(url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut conn)
        .await?;
    Ok(info
        .lines()
        .find_map(|line| line.strip_prefix("redis_version:"))
        .unwrap_or("?")
        .trim()
        .to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_csv_row_with_quotes_in_the_command_is_read_from_the_end() -> anyhow::Result<()> {
        let out = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\
                   \"SET k:__rand_int__ {\"a\":\"b\"} EX 900 NX\",\"48543.69\",\"0.110\",\"0.032\",\"0.103\",\"0.175\",\"0.263\",\"2.295\"\n";
        let run = parse_csv(out)?;
        assert_eq!(run.rate, 48543.69);
        assert_eq!(run.latency.p50_ms, 0.103);
        assert_eq!(run.latency.p99_ms, 0.263);
        assert_eq!(run.latency.max_ms, 2.295);
        Ok(())
    }
}
