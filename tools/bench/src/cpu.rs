//! Where the machine's CPU went during a run, from `/proc`: the load generator
//! (this process and its children such as pgbench), the backend (one or more
//! instances), the balancer in front of them, our PostgreSQL cluster, the
//! platform the pay step hands payments to (a `platform-sim` process), and
//! everything else. "Everything else" is the noise: other people's
//! builds and tests sharing the machine.
//!
//! Processes are sampled every 250 ms; a process is charged the CPU it used
//! between the first and the last time it was seen inside the window.

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
    /// Length of the window, seconds.
    pub window_s: f64,
    /// Cores the machine has.
    pub cores: f64,
    /// All busy time of the machine.
    pub busy_cores: f64,
    /// This process and its children other than the backend (pgbench, redis-benchmark).
    pub client_cores: f64,
    /// The backend process (every instance, when several run).
    pub backend_cores: f64,
    /// The balancer (HAProxy) in front of the backends; zero when none runs.
    pub balancer_cores: f64,
    /// Our PostgreSQL cluster (all its processes); zero when it is not ours.
    pub postgres_cores: f64,
    /// The payment platform the backend hands payments to, when it is a
    /// process on this machine (`--pay-platform-url`'s `platform-sim`): part
    /// of the pay's work, not noise. Zero in every other step.
    pub platform_cores: f64,
    /// The Redis server the backend uses.
    pub redis_cores: f64,
    /// Interrupt and softirq time (loopback networking lands here). Mostly also
    /// inside the process times above (softirqs run in the sending process), so it
    /// is shown, not subtracted.
    pub irq_cores: f64,
    /// Every other process, including a shared PostgreSQL that is not ours: the noise.
    pub other_cores: f64,
    /// Time the hypervisor gave to other guests: noise too.
    pub steal_cores: f64,
    /// Context switches per second, whole machine.
    pub context_switches_per_s: f64,
}

impl CpuUse {
    /// The cores of everything the measured work runs on: the load generator,
    /// the backend, PostgreSQL, Redis and the platform (the balancer, in the
    /// scale-out step only, is counted there).
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
}

/// The processes whose CPU we can name.
#[derive(Debug, Clone, Default)]
pub struct Roots {
    /// The backend under test: one process, or every instance of a scale-out run.
    pub backends: Vec<u32>,
    /// The balancers (HAProxy) in front of the backends.
    pub balancers: Vec<u32>,
    /// The postmaster of our own PostgreSQL cluster.
    pub postmaster: Option<u32>,
    /// The platform process the pay step hands payments to.
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

#[derive(Debug, Clone, Copy, Default)]
struct MachineTicks {
    busy: u64,
    irq: u64,
    steal: u64,
    context_switches: u64,
}

/// Measures from `from` to `to` in the background.
pub fn watch(roots: Roots, from: Instant, to: Instant) -> JoinHandle<Option<CpuUse>> {
    tokio::spawn(async move {
        tokio::time::sleep_until(from).await;
        let started = Instant::now();
        let machine_start = machine_ticks()?;
        let mut first: HashMap<u32, (u64, Class)> = HashMap::new();
        let mut last: HashMap<u32, (u64, Class)> = HashMap::new();
        let mut initial = true;
        loop {
            let procs = processes();
            for (&pid, proc) in &procs {
                let class = classify(pid, &procs, &roots);
                // A process born inside the window is charged from zero.
                let baseline = if initial { proc.ticks } else { 0 };
                first.entry(pid).or_insert((baseline, class));
                last.insert(pid, (proc.ticks, class));
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
            let start = first.get(pid).map_or(0, |(t, _)| *t);
            *by_class.entry(*class).or_default() += ticks.saturating_sub(start);
        }
        let share = |class| cores_of(by_class.get(&class).copied().unwrap_or(0));
        let busy = cores_of(machine_end.busy.saturating_sub(machine_start.busy));
        let irq = cores_of(machine_end.irq.saturating_sub(machine_start.irq));
        let steal = cores_of(machine_end.steal.saturating_sub(machine_start.steal));
        let (client, backend, balancer, postgres, platform, redis) = (
            share(Class::Client),
            share(Class::Backend),
            share(Class::Balancer),
            share(Class::Postgres),
            share(Class::Platform),
            share(Class::Redis),
        );
        Some(CpuUse {
            window_s,
            cores: std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64),
            busy_cores: busy,
            client_cores: client,
            backend_cores: backend,
            balancer_cores: balancer,
            postgres_cores: postgres,
            platform_cores: platform,
            redis_cores: redis,
            irq_cores: irq,
            other_cores: (busy - steal - client - backend - balancer - postgres - platform - redis)
                .max(0.0),
            steal_cores: steal,
            context_switches_per_s: machine_end
                .context_switches
                .saturating_sub(machine_start.context_switches)
                as f64
                / window_s,
        })
    })
}

fn classify(pid: u32, procs: &HashMap<u32, Proc>, roots: &Roots) -> Class {
    let me = std::process::id();
    let mut current = pid;
    // Walk up the parents; the first root met decides.
    for _ in 0..64 {
        if roots.backends.contains(&current) {
            return Class::Backend;
        }
        if roots.balancers.contains(&current) {
            return Class::Balancer;
        }
        if Some(current) == roots.postmaster {
            return Class::Postgres;
        }
        if Some(current) == roots.redis {
            return Class::Redis;
        }
        if Some(current) == roots.platform {
            return Class::Platform;
        }
        if current == me {
            return Class::Client;
        }
        match procs.get(&current) {
            Some(proc) if proc.ppid > 1 => current = proc.ppid,
            _ => return Class::Other,
        }
    }
    Class::Other
}

/// The `redis-server` process serving `port`, if it runs on this machine.
pub fn find_redis_server(port: u16) -> Option<u32> {
    for pid in pids() {
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let is_redis = args.first().is_some_and(|a| {
            a.rsplit('/').next() == Some("redis-server") || a.starts_with("redis-server")
        });
        let port_text = port.to_string();
        let serves_port = args.iter().any(|a| a.ends_with(&format!(":{port}")))
            || args
                .windows(2)
                .any(|w| w[0] == "--port" && w[1] == port_text)
            || (port == 6379 && !args.iter().any(|a| a == "--port"));
        if is_redis && serves_port {
            return Some(pid);
        }
    }
    None
}

/// The process listening on TCP `port` of this machine (IPv4 or IPv6), found
/// through `/proc/net/tcp*` (the socket's inode) and the processes' open files:
/// how the pay step finds the `platform-sim` behind `--pay-platform-url`.
/// `None` when nothing listens there or the process is not readable (another
/// user's).
pub fn find_listener(port: u16) -> Option<u32> {
    let inodes: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|text| listening_inodes(&text, port))
        .collect();
    if inodes.is_empty() {
        return None;
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    for pid in pids() {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path())
                && wanted.iter().any(|w| target.as_os_str() == w.as_str())
            {
                return Some(pid);
            }
        }
    }
    None
}

/// The inodes of the sockets listening on `port` in one `/proc/net/tcp*`
/// table (`sl local_address rem_address st ... inode`; state `0A` is LISTEN,
/// the port the hex after the address's colon).
fn listening_inodes(table: &str, port: u16) -> Vec<String> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields.get(1)?.rsplit(':').next()?;
            let listening = *fields.get(3)? == "0A";
            (listening && u16::from_str_radix(local_port, 16).ok()? == port)
                .then(|| fields.get(9).map(|inode| (*inode).to_owned()))
                .flatten()
        })
        .collect()
}

/// The ids of the processes running now (the numeric entries of `/proc`).
fn pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
}

fn processes() -> HashMap<u32, Proc> {
    let mut out = HashMap::new();
    for pid in pids() {
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            && let Some(proc) = parse_stat(&stat)
        {
            out.insert(pid, proc);
        }
    }
    out
}

/// `/proc/<pid>/stat`: the name may hold spaces, so fields are counted after the last `)`.
fn parse_stat(stat: &str) -> Option<Proc> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) ... utime(11) stime(12).
    let ppid = fields.get(1)?.parse().ok()?;
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Proc {
        ppid,
        ticks: utime + stime,
    })
}

fn machine_ticks() -> Option<MachineTicks> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let mut ticks = parse_machine(stat.lines().next()?)?;
    ticks.context_switches = stat
        .lines()
        .find_map(|line| line.strip_prefix("ctxt "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    Some(ticks)
}

/// The `cpu` line of `/proc/stat`: user nice system idle iowait irq softirq steal ...
fn parse_machine(line: &str) -> Option<MachineTicks> {
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    let [user, nice, system, _idle, _iowait, irq, softirq, steal] = values[..] else {
        return None;
    };
    Some(MachineTicks {
        busy: user + nice + system + irq + softirq + steal,
        irq: irq + softirq,
        steal,
        context_switches: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_name_with_spaces_and_parens_does_not_shift_the_fields() {
        let stat = "42 (tokio (rt) 1) S 7 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0";
        let proc = parse_stat(stat).expect("parses");
        assert_eq!(proc.ppid, 7);
        assert_eq!(proc.ticks, 300);
    }

    #[test]
    fn a_listening_socket_is_found_by_its_port_and_state() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 4343 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4444 1 0000000000000000 100 0 0 10 0";
        assert_eq!(listening_inodes(table, 8080), vec!["4242".to_owned()]);
        assert_eq!(listening_inodes(table, 8081), vec!["4444".to_owned()]);
        assert!(listening_inodes(table, 9090).is_empty());
    }

    #[test]
    fn this_process_is_found_as_the_listener_of_its_own_port() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
        let port = listener.local_addr().expect("has an address").port();
        assert_eq!(find_listener(port), Some(std::process::id()));
        drop(listener);
        assert_eq!(
            find_listener(port),
            None,
            "nothing listens once it is closed"
        );
    }

    #[test]
    fn machine_busy_time_leaves_out_idle_and_iowait() {
        let line = "cpu  100 10 50 1000 30 5 5 20 0 0";
        let ticks = parse_machine(line).expect("parses");
        assert_eq!(ticks.busy, 190);
        assert_eq!(ticks.irq, 10);
        assert_eq!(ticks.steal, 20);
    }
}
