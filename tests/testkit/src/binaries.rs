//! Where the binaries under test are: the backend (with and without crash
//! points) and platform-sim, taken from an environment variable or built into
//! the workspace's `target/` when missing.

use crate::target_dir;
use anyhow::{Context, bail};
use std::path::PathBuf;
use std::process::Command;

/// The ordinary backend binary (no crash points): `BACKEND_BIN`, else
/// `target/debug/backend`, built if missing.
pub fn backend_binary() -> anyhow::Result<PathBuf> {
    binary("BACKEND_BIN", "backend", &[])
}

/// The backend with crash points (`CRASH_POINTS`), for the fault tests:
/// `BACKEND_FAULT_INJECTION_BIN`, else `target/debug/backend-fault-injection`,
/// built with `--features fault-injection` if missing.
pub fn fault_injection_backend_binary() -> anyhow::Result<PathBuf> {
    binary(
        "BACKEND_FAULT_INJECTION_BIN",
        "backend-fault-injection",
        &["--features", "fault-injection"],
    )
}

/// The platform simulator binary: `PLATFORM_SIM_BIN`, else
/// `target/debug/platform-sim`, built if missing.
pub fn platform_sim_binary() -> anyhow::Result<PathBuf> {
    package_binary("PLATFORM_SIM_BIN", "platform-sim", "platform-sim", &[])
}

fn binary(variable: &str, name: &str, features: &[&str]) -> anyhow::Result<PathBuf> {
    package_binary(variable, "backend", name, features)
}

fn package_binary(
    variable: &str,
    package: &str,
    name: &str,
    features: &[&str],
) -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os(variable) {
        return Ok(PathBuf::from(path));
    }
    let path = target_dir().join("debug").join(name);
    if !path.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", package, "--bin", name])
            .args(features)
            .status()
            .with_context(|| format!("cannot run cargo build -p {package} --bin {name}"))?;
        if !status.success() {
            bail!("cargo build -p {package} --bin {name} failed");
        }
    }
    Ok(path)
}
