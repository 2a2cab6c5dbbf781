//! Where the machine's CPU went during a run, from `/proc`: the load generator
//! (this process and its children such as pgbench), the backends, the
//! balancer, PostgreSQL, Redis, the platform the pay hands payments to, and
//! everything else: the noise (other people's builds and tests sharing the
//! machine).
//!
//! Processes are sampled every 250 ms; a process is charged the CPU it used
//! between the first and the last time it was seen inside the window, and
//! belongs to the first of our processes found among its ancestors.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Linux reports process and machine CPU time in ticks of 1/100 s (`USER_HZ`).
const TICKS_PER_SECOND: f64 = 100.0;
const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// Average CPU use over a window, in cores (1.0 = one core busy all the time).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuUse {
    /// Cores the machine has.
    pub cores: f64,
    /// All busy time of the machine.
    pub busy_cores: f64,
    /// This process and its children (pgbench, redis-benchmark).
    pub client_cores: f64,
    /// The backend (every instance, when several run).
    pub backend_cores: f64,
    /// The balancer (HAProxy) in front of the backends.
    pub balancer_cores: f64,
    /// PostgreSQL (all its processes).
    pub postgres_cores: f64,
    /// The payment platform the pay hands payments to (a `platform-sim`
    /// process): part of the pay's work, not noise.
    pub platform_cores: f64,
    /// The Redis server.
    pub redis_cores: f64,
    /// Every other process: the noise.
    pub other_cores: f64,
    /// Time the hypervisor gave to other guests: noise too.
    pub steal_cores: f64,
}

impl CpuUse {
    /// The cores of everything the measured work runs on but the balancer
    /// (which runs in the scale-out step only, and is shown there).
    pub fn ours_cores(&self) -> f64 {
        self.client_cores
            + self.backend_cores
            + self.postgres_cores
            + self.redis_cores
            + self.platform_cores
    }

    /// The machine's cores nobody used.
    pub fn idle_cores(&self) -> f64 {
        (self.cores - self.busy_cores).max(0.0)
    }

    /// Other processes and steal: what a run shares the machine with.
    pub fn noise_cores(&self) -> f64 {
        self.other_cores + self.steal_cores
    }
}

/// The processes whose CPU we can name.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    /// The backend under test: one process, or every instance of a scale-out run.
    pub backends: Vec<u32>,
    /// The balancers (HAProxy) in front of the backends.
    pub balancers: Vec<u32>,
    /// PostgreSQL's postmaster.
    pub postmaster: Option<u32>,
    /// The platform process the pay hands payments to.
    pub platform: Option<u32>,
    /// The Redis server.
    pub redis: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Class {
    Client,
    Backend,
    Balancer,
    Postgres,
    Platform,
    Redis,
    Other,
}

#[derive(Debug, Clone, Copy)]
struct Proc {
    ppid: u32,
    ticks: u64,
}

/// Measures from `from` to `to` in the background.
pub fn watch(roots: Roots, from: Instant, to: Instant) -> JoinHandle<Option<CpuUse>> {
    tokio::spawn(async move {
        tokio::time::sleep_until(from).await;
        let started = Instant::now();
        let machine_start = machine_ticks()?;
        let mut first: HashMap<u32, u64> = HashMap::new();
        let mut last: HashMap<u32, (u64, Class)> = HashMap::new();
        let mut initial = true;
        loop {
            let procs = processes();
            for (&pid, proc) in &procs {
                // A process born inside the window is charged from zero.
                first
                    .entry(pid)
                    .or_insert(if initial { proc.ticks } else { 0 });
                last.insert(pid, (proc.ticks, classify(pid, &procs, &roots)));
            }
            initial = false;
            let now = Instant::now();
            if now >= to {
                break;
            }
            tokio::time::sleep_until((now + SAMPLE_EVERY).min(to)).await;
        }
        let machine_end = machine_ticks()?;
        let window_s = started.elapsed().as_secs_f64().max(1e-3);
        let cores_of = |ticks: u64| ticks as f64 / TICKS_PER_SECOND / window_s;
        let mut by_class: HashMap<Class, u64> = HashMap::new();
        for (pid, (ticks, class)) in &last {
            let start = first.get(pid).copied().unwrap_or(0);
            *by_class.entry(*class).or_default() += ticks.saturating_sub(start);
        }
        let share = |class| cores_of(by_class.get(&class).copied().unwrap_or(0));
        let busy = cores_of(machine_end.0.saturating_sub(machine_start.0));
        let steal = cores_of(machine_end.1.saturating_sub(machine_start.1));
        let mut cpu = CpuUse {
            cores: std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64),
            busy_cores: busy,
            client_cores: share(Class::Client),
            backend_cores: share(Class::Backend),
            balancer_cores: share(Class::Balancer),
            postgres_cores: share(Class::Postgres),
            platform_cores: share(Class::Platform),
            redis_cores: share(Class::Redis),
            other_cores: 0.0,
            steal_cores: steal,
        };
        cpu.other_cores = (busy - steal - cpu.ours_cores() - cpu.balancer_cores).max(0.0);
        Some(cpu)
    })
}

/// The class of the first of our processes among `pid` and its ancestors.
fn classify(pid: u32, procs: &HashMap<u32, Proc>, roots: &Roots) -> Class {
    let me = Some(std::process::id());
    let named = [
        (roots.postmaster, Class::Postgres),
        (roots.redis, Class::Redis),
        (roots.platform, Class::Platform),
        (me, Class::Client),
    ];
    let mut current = pid;
    for _ in 0..64 {
        if roots.backends.contains(&current) {
            return Class::Backend;
        } else if roots.balancers.contains(&current) {
            return Class::Balancer;
        } else if let Some((_, class)) = named.iter().find(|(p, _)| *p == Some(current)) {
            return *class;
        }
        match procs.get(&current) {
            Some(proc) if proc.ppid > 1 => current = proc.ppid,
            _ => break,
        }
    }
    Class::Other
}

/// The parent of process `pid`.
pub fn parent_of(pid: u32) -> Option<u32> {
    Some(parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)?.ppid)
}

/// True when the server at `url` runs on this machine, so its processes are
/// ours to account for.
pub fn on_this_machine(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|url| {
        matches!(
            url.host_str(),
            Some("127.0.0.1" | "localhost" | "[::1]" | "::1")
        )
    })
}

/// The CPU's model name, from `/proc/cpuinfo`.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == "model name").then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn processes() -> HashMap<u32, Proc> {
    let entries = std::fs::read_dir("/proc").into_iter().flatten().flatten();
    entries
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            Some((pid, parse_stat(&stat)?))
        })
        .collect()
}

/// `/proc/<pid>/stat`: the name may hold spaces, so fields are counted after the last `)`.
fn parse_stat(stat: &str) -> Option<Proc> {
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    // After the name: state(0) ppid(1) ... utime(11) stime(12).
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Proc {
        ppid: fields.get(1)?.parse().ok()?,
        ticks: utime + stime,
    })
}

/// The machine's (busy, steal) ticks so far.
fn machine_ticks() -> Option<(u64, u64)> {
    parse_machine(std::fs::read_to_string("/proc/stat").ok()?.lines().next()?)
}

/// The `cpu` line of `/proc/stat`: user nice system idle iowait irq softirq steal ...
fn parse_machine(line: &str) -> Option<(u64, u64)> {
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    let [user, nice, system, _idle, _iowait, irq, softirq, steal] = values[..] else {
        return None;
    };
    Some((user + nice + system + irq + softirq + steal, steal))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_name_with_spaces_and_parens_does_not_shift_the_fields() {
        let stat = "42 (tokio (rt) 1) S 7 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0";
        let proc = parse_stat(stat).expect("parses");
        assert_eq!((proc.ppid, proc.ticks), (7, 300));
        assert_eq!(
            parent_of(std::process::id()),
            Some(std::os::unix::process::parent_id())
        );
    }

    #[test]
    fn machine_busy_time_leaves_out_idle_and_iowait() {
        assert_eq!(
            parse_machine("cpu  100 10 50 1000 30 5 5 20 0 0"),
            Some((190, 20))
        );
    }
}
