//! `redis-benchmark` on the Redis half of a pay: the request token's `GETDEL`,
//! on keys of our own prefix that a `SET key value EX 900 NX` run (the token's
//! issue) filled first, as a pay finds its token.

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
    /// From `redis://[user@]host:port[/db]`.
    pub fn from_url(url: &str) -> anyhow::Result<Self> {
        let parsed = reqwest::Url::parse(url).context("--redis-url must be redis://host:port")?;
        Ok(Self {
            host: parsed
                .host_str()
                .context("--redis-url has no host")?
                .to_owned(),
            port: parsed.port().unwrap_or(6379),
        })
    }
}

/// Runs `redis-benchmark -c clients -n requests` for one command (`SET ... EX
/// 900 NX` when `set`, else `GETDEL`). Keys are drawn from `requests` random
/// numbers, so most `GETDEL`s after a `SET` run find their key.
pub async fn run(
    target: &RedisTarget,
    prefix: &str,
    set: bool,
    clients: usize,
    requests: u64,
) -> anyhow::Result<Run> {
    let key = format!("{prefix}__rand_int__");
    let command: Vec<&str> = if set {
        vec!["SET", &key, VALUE, "EX", "900", "NX"]
    } else {
        vec!["GETDEL", &key]
    };
    let output = Command::new("redis-benchmark")
        .args(["-h", &target.host, "-p", &target.port.to_string()])
        .args(["-c", &clients.to_string(), "-n", &requests.to_string()])
        .args(["-r", &requests.to_string(), "--csv"])
        .args(command)
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
    let [_max, p99, _p95, p50, _min, _avg, rps] = fields[..] else {
        bail!("redis-benchmark row has too few fields: {line}");
    };
    Ok(Run {
        rate: rps,
        latency: Latency {
            p50_ms: p50,
            p99_ms: p99,
        },
        ..Run::default()
    })
}

/// Removes every key under `prefix` (what `SET` left behind and the backend's tokens).
pub async fn clean(url: &str, prefix: &str) -> anyhow::Result<()> {
    let mut conn = redis::Client::open(url)?
        .get_multiplexed_async_connection()
        .await?;
    let mut cursor: u64 = 0;
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
            redis::cmd("UNLINK")
                .arg(&keys)
                .query_async::<u64>(&mut conn)
                .await?;
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}

/// `redis_version` and `process_id` from `INFO server`.
pub async fn version_and_pid(url: &str) -> anyhow::Result<(String, Option<u32>)> {
    let mut conn = redis::Client::open(url)?
        .get_multiplexed_async_connection()
        .await?;
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut conn)
        .await?;
    let field = |name: &str| {
        info.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    Ok((
        field("redis_version").unwrap_or("?").to_owned(),
        field("process_id").and_then(|pid| pid.parse().ok()),
    ))
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
        assert_eq!((run.latency.p50_ms, run.latency.p99_ms), (0.103, 0.263));
        Ok(())
    }
}
