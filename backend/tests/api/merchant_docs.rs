//! docs/MERCHANTS.md's examples, run as written: every `sh` block, in order,
//! by bash with `set -euo pipefail` against a running backend. The blocks
//! before the `<!-- the shopper pays here -->` mark run first; the test then
//! pays the order they placed, as a shopper would; the rest run after, with
//! what the first part exported.

use crate::helpers::{ADMIN_TOKEN, spawn_app};
use api_types::OrderStatus;
use tokio::process::Command;

/// The `sh` blocks of `markdown`, in order.
fn sh_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```sh") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// Runs `script` with bash (off the test's runtime, which serves the app);
/// its stdout, or a panic with everything it said.
async fn bash(script: &str, env: &[(&str, &str)]) -> String {
    let output = Command::new("bash")
        .arg("-c")
        .arg(format!("set -euo pipefail\n{script}"))
        .envs(env.iter().copied())
        .kill_on_drop(true)
        .output()
        .await
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "the docs' example failed ({}):\n{script}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[tokio::test]
async fn the_merchant_guide_works_as_written() {
    let app = spawn_app().await;
    let shopper = app.create_account(100_000, "EUR").await;
    let guide =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/MERCHANTS.md"))
            .expect("docs/MERCHANTS.md");
    let (before, after) = guide
        .split_once("<!-- the shopper pays here -->")
        .expect("the guide marks where the shopper pays");
    let (first, second) = (sh_blocks(before), sh_blocks(after));
    assert!(
        first.len() >= 2 && second.len() >= 5,
        "{first:?} {second:?}"
    );

    let state = tempfile_path();
    let checkout = app.url("");
    let shopper_id = shopper.shopper_id.to_string();
    let env = [
        ("CHECKOUT", checkout.trim_end_matches('/')),
        ("ADMIN_TOKEN", ADMIN_TOKEN),
        ("SHOPPER_ID", shopper_id.as_str()),
    ];
    let printed = bash(&format!("{}\nexport -p > {state}", first.join("\n")), &env).await;
    assert!(
        printed.contains("/pay/ord_"),
        "the pay_url is printed: {printed}"
    );
    let order_no = bash(&format!(". {state}\necho -n \"$ORDER_NO\""), &env).await;

    // The shopper pays at pay_url.
    assert_eq!(
        app.pay_by_until_final(&order_no, "platform").await.status,
        OrderStatus::Paid
    );

    let printed = bash(&format!(". {state}\n{}", second.join("\n")), &env).await;
    assert!(printed.contains("PAID"), "{printed}");
    assert!(printed.contains("order-1234"), "{printed}");
    assert!(printed.contains("PENDING"), "{printed}");
    assert!(
        printed.contains(&format!("CHARGE 4200 {order_no}")),
        "{printed}"
    );
    let _ = std::fs::remove_file(&state);
    app.assert_invariants().await;
}

/// A file name of its own for the exported variables.
fn tempfile_path() -> String {
    std::env::temp_dir()
        .join(format!(
            "merchant-guide-{}.sh",
            uuid::Uuid::new_v4().simple()
        ))
        .display()
        .to_string()
}
