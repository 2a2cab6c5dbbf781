//! `trunk serve`, as a developer runs it beside the backend, builds into its own
//! folder (target/trunk-serve/): the `dist/` the backend serves, and whose
//! `index.html` it hashed for its Content-Security-Policy at start, is never
//! touched, so the page and the console served by the backend keep working.

use crate::helpers::{GroupChild, free_port, spawn_app, workspace_root};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A cold debug build of the page takes about 80 s on two cores; CI may be slower.
const FIRST_BUILD_TIMEOUT: Duration = Duration::from_secs(600);

/// Every file under `dir`, by its path below it, with its bytes.
fn files_under(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).expect("a readable folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let name = path
                    .strip_prefix(dir)
                    .expect("below the folder")
                    .display()
                    .to_string();
                files.insert(name, std::fs::read(&path).expect("a readable file"));
            }
        }
    }
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trunk_serve_builds_into_its_own_folder_and_leaves_the_backends_dist_alone() {
    let app = spawn_app().await;
    let root = workspace_root();
    let dist_before = files_under(&root.join("dist"));
    let port = free_port();
    let log_path = std::env::temp_dir().join(format!("trunk-serve-{port}.log"));
    let log = std::fs::File::create(&log_path).expect("a log file");
    // Niced: the build must not starve the browser tests running beside it.
    let mut trunk = GroupChild::spawn(
        Command::new("nice")
            .args(["-n", "19", "trunk", "serve", "--port", &port.to_string()])
            .arg("--no-autoreload")
            .current_dir(&root)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log again"))
            .stderr(log),
    )
    .expect("trunk is on PATH (scripts/install-frontend-tools.sh)");

    // Act: wait for trunk serve's first build, as a developer does.
    let started = Instant::now();
    let page = loop {
        assert!(
            !trunk.has_exited(),
            "trunk serve exited: {}",
            std::fs::read_to_string(&log_path).unwrap_or_default()
        );
        assert!(
            started.elapsed() < FIRST_BUILD_TIMEOUT,
            "trunk serve served nothing within {FIRST_BUILD_TIMEOUT:?}: {}",
            std::fs::read_to_string(&log_path).unwrap_or_default()
        );
        if let Ok(answer) = app
            .http
            .get(format!("http://127.0.0.1:{port}/"))
            .send()
            .await
            && answer.status().is_success()
        {
            let body = answer.text().await.unwrap_or_default();
            if body.contains(".wasm") {
                break body;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    println!("trunk serve's first build took {:?}", started.elapsed());

    // Assert: its build is in its own folder, and dist/ is as it was.
    let served = std::fs::read_to_string(root.join("target/trunk-serve/index.html"))
        .expect("trunk serve wrote target/trunk-serve/index.html");
    assert_eq!(served, page, "trunk serve serves its own folder");
    let dist_after = files_under(&root.join("dist"));
    assert_eq!(
        dist_before.keys().collect::<Vec<_>>(),
        dist_after.keys().collect::<Vec<_>>(),
        "trunk serve added or removed files in dist/"
    );
    assert!(
        dist_before == dist_after,
        "trunk serve rewrote files in dist/"
    );

    // And the backend's page and console still load, within their CSP.
    app.goto("/signin").await;
    app.eventually("the sign-in form", || async {
        app.is_present("signin-email").await.then_some(())
    })
    .await;
    app.assert_no_csp_violations().await;
    let console = app
        .http
        .get(format!("{}/ops/", app.address))
        .send()
        .await
        .expect("the console answers");
    assert_eq!(console.status(), reqwest::StatusCode::OK);
    drop(trunk);
    app.finish().await;
}
