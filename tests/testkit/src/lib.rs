//! Test infrastructure, once for every test crate: where the services are
//! ([`postgres_server_url`], [`redis_url`]), a database per test that is dropped
//! when the test passes and kept when it fails ([`TestDatabase`]), and the real
//! processes one test or load run owns: the backend binary, a `redis-server`, a
//! Redis Sentinel group ([`RedisSentinelGroup`]), a PostgreSQL cluster. Each
//! process on its own free port, so a test may kill, pause, flush or restart it
//! without disturbing anything else; and an HAProxy in front of several
//! backends ([`OwnedHaproxy`]).

mod backend_process;
mod binaries;
mod database;
mod haproxy;
mod postgres_cluster;
mod redis_server;
pub mod sentinel;

pub use backend_process::BackendProcess;
pub use binaries::{backend_binary, fault_injection_backend_binary, platform_sim_binary};
pub use database::{TestDatabase, postgres_server_url, redis_url};
pub use haproxy::OwnedHaproxy;
pub use postgres_cluster::{OwnedPostgres, postgres_bin_dir, postgres_data_dir, run_postgres_tool};
pub use redis_server::OwnedRedis;
pub use sentinel::RedisSentinelGroup;

use std::path::{Path, PathBuf};

/// A free TCP port on 127.0.0.1 (free when asked; bind it soon).
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The workspace root (where `Cargo.lock`, `dist/` and `docs/` are).
pub fn workspace_root() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    dir.canonicalize().unwrap_or(dir)
}

/// The workspace's `target/` directory.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}
