//! The `storm` command, run as a user would: it starts the backend itself.

use std::process::Command;

#[test]
fn storm_replays_the_incident_quickly_and_reports_exactly_once() {
    let backend = storm::processes::backend_binary().expect("backend binary");
    let output = Command::new(env!("CARGO_BIN_EXE_storm"))
        .args([
            "--time-scale",
            "0.01",
            "--orders",
            "2",
            "--concurrency",
            "30",
            "--quiet",
        ])
        .arg("--backend-bin")
        .arg(backend)
        .output()
        .expect("storm runs");
    let stdout = String::from_utf8_lossy(&output.stdout);

    assert!(
        output.status.success(),
        "storm failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("burst: 30 at once x 2 order(s)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("balance deducted: 9998 (expected 9998)"),
        "{stdout}"
    );
    assert!(stdout.contains("EXACTLY ONCE"), "{stdout}");
}

#[test]
fn storm_without_callbacks_waits_for_the_active_query_then_delivers_late() {
    let backend = storm::processes::backend_binary().expect("backend binary");
    let output = Command::new(env!("CARGO_BIN_EXE_storm"))
        .args([
            "--drop-callbacks",
            "--time-scale",
            "0.01",
            "--orders",
            "2",
            "--concurrency",
            "10",
            "--quiet",
        ])
        .arg("--backend-bin")
        .arg(backend)
        .output()
        .expect("storm runs");
    let stdout = String::from_utf8_lossy(&output.stdout);

    assert!(
        output.status.success(),
        "storm failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("the active query settled 2/2 order(s)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("burst: 10 at once x 2 order(s) (late)"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("  query\n").count(), 2, "{stdout}");
    assert!(
        stdout.contains("balance deducted: 9998 (expected 9998)"),
        "{stdout}"
    );
    assert!(stdout.contains("EXACTLY ONCE"), "{stdout}");
}
