//! Ports and child processes: a port nobody listens on, waiting until one is
//! listened on, and a child whose whole process group dies with it.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    testkit::free_port().expect("a free local port")
}

/// Waits until something accepts TCP connections on `port`.
pub(super) fn wait_for_port(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{what} did not listen on port {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child process in its own process group; the whole group is killed on drop
/// (chromedriver's Chromium processes included).
pub struct GroupChild(Child);

impl GroupChild {
    /// Starts `command` as the leader of a new process group.
    pub fn spawn(command: &mut Command) -> std::io::Result<Self> {
        use std::os::unix::process::CommandExt;
        command.process_group(0).spawn().map(Self)
    }

    /// Whether the child has exited already.
    pub fn has_exited(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(Some(_)))
    }

    pub(super) fn kill(&mut self) {
        // Negative pid: the process group this child leads.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        self.kill();
    }
}
