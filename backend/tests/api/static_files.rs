//! The payment page's files: the build output is served, client-side routes get
//! index.html, and dotfiles and symlinks that lead out of the directory are 404
//! with the shared error body, however the path is encoded.

use crate::helpers::{TestApp, spawn_app_with};
use serde_json::Value;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use uuid::Uuid;

/// Secrets planted where they must never be served from.
const SECRETS: &[&str] = &[
    "DOTENV-SECRET",
    "GIT-CONFIG-SECRET",
    "HIDDEN-ASSET-SECRET",
    "OUTSIDE-FILE-SECRET",
    "OUTSIDE-DIR-SECRET",
    "root:",
];

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        let path = std::env::temp_dir().join(format!("{label}-{}", Uuid::new_v4().simple()));
        std::fs::create_dir_all(&path).expect("creates temp dir");
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("creates parent");
    }
    std::fs::write(path, text).expect("writes file");
}

/// A page directory with build output, dotfiles and symlinks, and a directory
/// outside it that the symlinks point into.
fn page_dirs() -> (TempDir, TempDir) {
    let page = TempDir::new("static-page");
    let outside = TempDir::new("static-outside");
    let p = &page.0;
    write(&p.join("index.html"), "<html>INDEX-PAGE</html>");
    write(&p.join("app.js"), "console.log('APP-JS');");
    write(&p.join("assets/style.css"), "body{} /* STYLE-CSS */");
    write(&p.join(".env"), "WEBHOOK_SECRET=DOTENV-SECRET");
    write(&p.join(".git/config"), "[core] GIT-CONFIG-SECRET");
    write(&p.join("assets/.hidden"), "HIDDEN-ASSET-SECRET");
    write(&outside.0.join("secret.txt"), "OUTSIDE-FILE-SECRET");
    write(&outside.0.join("sub/inner.txt"), "OUTSIDE-DIR-SECRET");
    symlink("/etc/passwd", p.join("leak")).expect("symlink");
    symlink(outside.0.join("secret.txt"), p.join("leak.txt")).expect("symlink");
    symlink(&outside.0, p.join("leakdir")).expect("symlink");
    // A symlink that stays inside is part of the build output.
    symlink(p.join("app.js"), p.join("alias.js")).expect("symlink");
    (page, outside)
}

/// An answer read off the wire: status and body.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

/// `GET path` with exactly these bytes as the request target (no client-side
/// normalisation of `..` or percent-encoding).
async fn raw_get(app: &TestApp, path: &str) -> Answer {
    let addr = app.address.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).await.expect("connects");
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("writes");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("reads");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a complete answer");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("status line");
    Answer {
        status,
        head: head.to_ascii_lowercase(),
        body: body.to_owned(),
    }
}

async fn spawn_with_page(dir: &Path) -> TestApp {
    let dir = dir.to_path_buf();
    spawn_app_with(move |config| config.static_dir = Some(dir)).await
}

fn assert_no_secret(path: &str, answer: &Answer) {
    for secret in SECRETS {
        assert!(
            !answer.body.contains(secret),
            "{path} leaked {secret}: {}",
            answer.body
        );
    }
}

#[tokio::test]
async fn dotfiles_and_symlinks_out_of_the_directory_are_404_however_encoded() {
    let (page, _outside) = page_dirs();
    let app = spawn_with_page(&page.0).await;

    for path in [
        "/.env",
        "/%2eenv",
        "/%2Eenv",
        "/.git/config",
        "/.git/",
        "/.git",
        "/%2egit/config",
        "/assets/.hidden",
        "/assets/%2ehidden",
        "/pay/../.env",
        "/../../etc/passwd",
        "/..%2f..%2fetc/passwd",
        "/..%2F..%2F..%2Fetc%2Fpasswd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/assets%2f..%2f.env",
        "/leak",
        "/leak.txt",
        "/leakdir",
        "/leakdir/",
        "/leakdir/secret.txt",
        "/leakdir/sub/inner.txt",
        "/leakdir/sub/",
    ] {
        let answer = raw_get(&app, path).await;
        assert_no_secret(path, &answer);
        assert_eq!(answer.status, 404, "{path}: {}", answer.body);
        let body: Value = serde_json::from_str(&answer.body)
            .unwrap_or_else(|_| panic!("{path}: not the JSON error body: {}", answer.body));
        assert_eq!(body["error"]["code"], "NOT_FOUND", "{path}: {body}");
    }
}

#[tokio::test]
async fn the_build_output_and_client_side_routes_are_still_served() {
    let (page, _outside) = page_dirs();
    let app = spawn_with_page(&page.0).await;

    for path in [
        "/",
        "/index.html",
        "/pay/ord_x",
        "/pay/ord_0123456789abcdef",
        "/signin",
        "/assets/",
        "/no/such/file.js",
    ] {
        let answer = raw_get(&app, path).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
        assert_eq!(answer.body, "<html>INDEX-PAGE</html>", "{path}");
        assert!(answer.head.contains("content-type: text/html"), "{path}");
    }

    for (path, content, mime) in [
        ("/app.js", "APP-JS", "javascript"),
        ("/alias.js", "APP-JS", "javascript"),
        ("/%61pp.js", "APP-JS", "javascript"),
        ("/assets/style.css", "STYLE-CSS", "text/css"),
    ] {
        let answer = raw_get(&app, path).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
        assert!(answer.body.contains(content), "{path}: {}", answer.body);
        assert!(answer.head.contains(mime), "{path}: {}", answer.head);
    }

    // The API beside the page is untouched.
    assert_eq!(raw_get(&app, "/healthz").await.status, 200);
}

#[tokio::test]
async fn an_index_html_that_is_a_symlink_out_of_the_directory_is_not_served() {
    let page = TempDir::new("static-page");
    let outside = TempDir::new("static-outside");
    write(&outside.0.join("index.html"), "OUTSIDE-FILE-SECRET");
    symlink(outside.0.join("index.html"), page.0.join("index.html")).expect("symlink");
    let app = spawn_with_page(&page.0).await;

    for path in ["/", "/pay/ord_x", "/index.html"] {
        let answer = raw_get(&app, path).await;
        assert_no_secret(path, &answer);
        assert_eq!(answer.status, 404, "{path}: {}", answer.body);
    }
}

/// `sha256-<base64>` of a script body, as a CSP names it.
fn csp_hash(script: &str) -> String {
    backend::http::web_security::inline_script_hashes(&format!("<script>{script}</script>"))
        .pop()
        .expect("one inline script")
}

/// The `content-security-policy` line of an answer's head.
fn csp_of(answer: &Answer) -> String {
    answer
        .head
        .lines()
        .find_map(|line| line.strip_prefix("content-security-policy: "))
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn the_operator_console_s_routes_get_its_own_page_and_its_own_loader_hash() {
    let (page, _outside) = page_dirs();
    let p = &page.0;
    let page_loader = "PAGE_LOADER();";
    let console_loader = "CONSOLE_LOADER();";
    write(
        &p.join("index.html"),
        &format!("<html><script>{page_loader}</script>INDEX-PAGE</html>"),
    );
    write(
        &p.join("ops/index.html"),
        &format!("<html><script>{console_loader}</script>CONSOLE-PAGE</html>"),
    );
    write(&p.join("ops/console.js"), "console.log('CONSOLE-JS');");
    write(&p.join("ops/.env"), "WEBHOOK_SECRET=DOTENV-SECRET");
    let app = spawn_with_page(p).await;
    let (page_hash, console_hash) = (csp_hash(page_loader), csp_hash(console_loader));

    for path in [
        "/ops",
        "/ops/",
        "/ops/anomalies",
        "/ops/anomalies/17",
        "/ops/orders/ORD-1",
        "/ops/activity",
        "/ops/no/such/file.js",
    ] {
        let answer = raw_get(&app, path).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
        assert!(
            answer.body.contains("CONSOLE-PAGE"),
            "{path}: {}",
            answer.body
        );
        let csp = csp_of(&answer);
        assert!(
            csp.contains(&console_hash.to_ascii_lowercase()),
            "{path}: {csp}"
        );
        assert!(
            !csp.contains(&page_hash.to_ascii_lowercase()),
            "{path}: {csp}"
        );
    }

    let script = raw_get(&app, "/ops/console.js").await;
    assert_eq!(script.status, 200);
    assert!(script.body.contains("CONSOLE-JS"));

    // The payment page keeps its own page and policy, also at look-alike paths.
    for path in ["/", "/pay/ord_x", "/opsx", "/pay/ops"] {
        let answer = raw_get(&app, path).await;
        assert_eq!(answer.status, 200, "{path}");
        assert!(
            answer.body.contains("INDEX-PAGE"),
            "{path}: {}",
            answer.body
        );
        let csp = csp_of(&answer);
        assert!(
            csp.contains(&page_hash.to_ascii_lowercase()),
            "{path}: {csp}"
        );
        assert!(
            !csp.contains(&console_hash.to_ascii_lowercase()),
            "{path}: {csp}"
        );
    }

    // The same rules inside the console's directory.
    for path in ["/ops/.env", "/ops/%2eenv", "/ops/../.env"] {
        let answer = raw_get(&app, path).await;
        assert_no_secret(path, &answer);
        assert_ne!(answer.status, 200, "{path}: {}", answer.body);
    }
}

#[tokio::test]
async fn without_a_console_build_its_routes_are_404_not_the_payment_page() {
    let (page, _outside) = page_dirs();
    let app = spawn_with_page(&page.0).await;

    for path in ["/ops", "/ops/", "/ops/anomalies"] {
        let answer = raw_get(&app, path).await;
        assert_eq!(answer.status, 404, "{path}: {}", answer.body);
        assert!(!answer.body.contains("INDEX-PAGE"), "{path}");
    }
}
