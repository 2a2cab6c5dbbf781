//! The payment page and the operator console: the files of the front end's
//! build output, and nothing else.
//!
//! `tower_http`'s `ServeDir` alone serves dotfiles (`.env`, `.git/config`) and
//! follows symlinks out of its directory. This service puts two rules in front
//! of it, then hands the checked, resolved file to `ServeFile` (which keeps
//! content types, `Range`, conditional requests and `405` for other methods):
//!
//! 1. A path with any segment that starts with `.` — after percent-decoding,
//!    so `/%2eenv` and `/..%2f..%2fetc/passwd` count — is `404` with the shared
//!    error body (`NOT_FOUND`). So is a segment that decodes to a `/`, `\` or NUL,
//!    or to bytes that are not UTF-8.
//! 2. The file is resolved with every symlink followed (`canonicalize`) and
//!    served only if it lies inside the canonicalized directory; anything that
//!    resolves outside it (a symlinked file or directory) is `404` as well.
//!
//! Every other path — `/`, a directory, or a path that names no file, such as the
//! client-side routes `/pay/{order_no}` and `/signin` — gets `index.html` with
//! `200`, held to the same rule 2. Under `/ops` (the operator console, its own
//! build in `ops/`) such a path gets `ops/index.html` instead, never the payment
//! page, and `404` when the console was not built.

use crate::error::ApiError;
use axum::Router;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use percent_encoding::percent_decode_str;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use tower::ServiceExt;
use tower_http::services::ServeFile;

/// The file every client-side route gets.
pub const INDEX: &str = "index.html";

/// The operator console's directory in the build output, and its URL prefix (`/ops/`).
pub const CONSOLE_DIR: &str = "ops";

/// True for a path of the operator console: `/ops` or anything under `/ops/`.
pub fn is_console_path(uri_path: &str) -> bool {
    uri_path
        .strip_prefix('/')
        .and_then(|rest| rest.strip_prefix(CONSOLE_DIR))
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// A service (for `Router::fallback_service`) that serves the files under `dir`
/// by the rules above.
pub fn service(dir: &Path) -> Router {
    Router::new()
        .fallback(serve)
        .with_state(Arc::new(dir.to_path_buf()))
}

async fn serve(State(dir): State<Arc<PathBuf>>, request: Request) -> Response {
    let Some(relative) = relative_path(request.uri().path()) else {
        return ApiError::NotFound.into_response();
    };
    let Some(file) = resolve(&dir, &relative).await else {
        return ApiError::NotFound.into_response();
    };
    match ServeFile::new(file).oneshot(request).await {
        Ok(response) => response.into_response(),
        Err(never) => match never {},
    }
}

/// The request path as a relative file path, or `None` when it must not be
/// served: a segment that is empty after decoding is skipped; one that starts
/// with `.` (dotfiles, `.`, `..`) or hides a separator or NUL is refused.
pub fn relative_path(uri_path: &str) -> Option<PathBuf> {
    let mut path = PathBuf::new();
    for raw in uri_path.split('/').filter(|raw| !raw.is_empty()) {
        let segment = percent_decode_str(raw).decode_utf8().ok()?;
        if segment.starts_with('.') || segment.contains(['/', '\\', '\0']) {
            return None;
        }
        let mut components = Path::new(segment.as_ref()).components();
        match (components.next(), components.next()) {
            (Some(Component::Normal(name)), None) => path.push(name),
            _ => return None,
        }
    }
    Some(path)
}

/// The file to serve for `relative`, with every symlink resolved, or `None`
/// when it resolves outside `dir` (or `dir` or its `index.html` is missing).
async fn resolve(dir: &Path, relative: &Path) -> Option<PathBuf> {
    let root = tokio::fs::canonicalize(dir).await.ok()?;
    match tokio::fs::canonicalize(root.join(relative)).await {
        Ok(real) if !real.starts_with(&root) => {
            tracing::warn!(path = %relative.display(), "refused a static path that leaves the page's directory");
            None
        }
        Ok(real) if is_file(&real).await => Some(real),
        // A directory, or no such file: a client-side route gets its app's page.
        _ => {
            let app = if relative.starts_with(CONSOLE_DIR) {
                root.join(CONSOLE_DIR)
            } else {
                root.clone()
            };
            let index = tokio::fs::canonicalize(app.join(INDEX)).await.ok()?;
            (index.starts_with(&root) && is_file(&index).await).then_some(index)
        }
    }
}

async fn is_file(path: &Path) -> bool {
    tokio::fs::metadata(path)
        .await
        .is_ok_and(|meta| meta.is_file())
}

#[cfg(test)]
mod tests {
    use super::{is_console_path, relative_path};
    use std::path::PathBuf;

    #[test]
    fn only_ops_and_paths_under_it_are_the_console_s() {
        for path in ["/ops", "/ops/", "/ops/anomalies", "/ops/orders/ORD-1"] {
            assert!(is_console_path(path), "{path}");
        }
        for path in ["/", "/opsx", "/ops.js", "/pay/ops", "/api/ops/me", "ops"] {
            assert!(!is_console_path(path), "{path}");
        }
    }

    #[test]
    fn ordinary_paths_become_relative_file_paths() {
        assert_eq!(relative_path("/"), Some(PathBuf::new()));
        assert_eq!(relative_path("/app.js"), Some(PathBuf::from("app.js")));
        assert_eq!(
            relative_path("/pay/ord_1%20x"),
            Some(PathBuf::from("pay/ord_1 x"))
        );
        assert_eq!(relative_path("//a//b/"), Some(PathBuf::from("a/b")));
    }

    #[test]
    fn dot_segments_and_hidden_separators_are_refused_even_percent_encoded() {
        for path in [
            "/.env",
            "/%2eenv",
            "/%2Eenv",
            "/.git/config",
            "/assets/.hidden",
            "/..",
            "/./index.html",
            "/a/../.env",
            "/..%2f..%2fetc/passwd",
            "/%2e%2e/%2e%2e/etc/passwd",
            "/a%2f.env",
            "/a%5c..%5cb",
            "/a%00b",
            "/%ff",
        ] {
            assert_eq!(relative_path(path), None, "{path}");
        }
    }
}
