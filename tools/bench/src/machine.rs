//! Facts about the machine and the build: CPU, memory, the page's `.wasm`, the
//! backend's peak memory, the commit measured.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The machine the figures come from.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Machine {
    /// Logical CPUs.
    pub cores: usize,
    /// `model name` from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// `MemTotal`, MiB.
    pub memory_mib: u64,
    /// Kernel release.
    pub kernel: String,
    /// 1-, 5- and 15-minute load averages when the benchmark started.
    pub load_at_start: String,
}

/// Reads [`Machine`] from `/proc`.
pub fn machine() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    Machine {
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu_model: field(&cpuinfo, "model name").unwrap_or_else(|| "unknown".into()),
        memory_mib: field(&meminfo, "MemTotal")
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kib| kib / 1024),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_owned(),
        load_at_start: load_average(),
    }
}

/// `/proc/loadavg`'s first three fields.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn field(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name).then(|| value.trim().to_owned())
    })
}

/// The page's release `.wasm`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WasmSize {
    /// The file, relative to the workspace.
    pub file: String,
    /// Bytes on disk.
    pub raw_bytes: u64,
    /// Bytes after `gzip -9`.
    pub gzip_bytes: u64,
    /// When the file was written (UTC), to tell a stale build.
    pub built_at: String,
}

/// Measures `dist/*.wasm` (built by `scripts/build-frontend.sh`); `None` when absent.
pub fn wasm_size(root: &Path) -> anyhow::Result<Option<WasmSize>> {
    let dist = root.join("dist");
    let Ok(entries) = std::fs::read_dir(&dist) else {
        return Ok(None);
    };
    let mut wasm: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "wasm"))
        .collect();
    wasm.sort();
    let Some(file) = wasm.pop() else {
        return Ok(None);
    };
    let metadata = std::fs::metadata(&file)?;
    let raw_bytes = metadata.len();
    let built_at = metadata
        .modified()
        .ok()
        .map(time::OffsetDateTime::from)
        .map(|t| {
            format!(
                "{:04}-{:02}-{:02} {:02}:{:02}",
                t.year(),
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute()
            )
        })
        .unwrap_or_default();
    // The same measure as scripts/build-frontend.sh: gzip -9.
    let output = Command::new("gzip")
        .args(["-9", "-c"])
        .arg(&file)
        .output()?;
    anyhow::ensure!(output.status.success(), "gzip failed on {}", file.display());
    Ok(Some(WasmSize {
        file: file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string(),
        raw_bytes,
        gzip_bytes: output.stdout.len() as u64,
        built_at,
    }))
}

/// `git describe`-like text for the measured tree: short commit, and whether it had changes.
pub fn commit(root: &Path) -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let Some(head) = git(&["rev-parse", "--short", "HEAD"]) else {
        return "unknown".into();
    };
    match git(&["status", "--porcelain", "--untracked-files=no"]) {
        Some(changes) if !changes.is_empty() => format!("{head} with uncommitted changes"),
        _ => head,
    }
}

/// `rustc --version`.
pub fn rustc_version() -> String {
    Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}
