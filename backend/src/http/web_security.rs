//! What protects shoppers' browsers: the CSRF check on state-changing requests
//! and the security headers on every answer.
//!
//! **CSRF.** A state-changing request (anything but GET/HEAD/OPTIONS) to a
//! route that a session cookie authenticates must
//! 1. come from our own origin: `Sec-Fetch-Site` is `same-origin` or `none`, or,
//!    from a browser that does not send it, `Origin` is `PUBLIC_ORIGIN` (or
//!    names the host the request was sent to); else `403 CSRF_REJECTED`. A
//!    request with neither header is let through on purpose: every browser
//!    sends `Origin` (and current ones `Sec-Fetch-Site`) on a cross-site
//!    request, so one without both was not sent by a browser tricked by
//!    another site, and the cookie is `SameSite=Lax`, which browsers do not
//!    send on cross-site state-changing requests in the first place. (The
//!    rule of Go's `http.CrossOriginProtection`; docs/SECURITY.md
//!    says the same.)
//! 2. carry its body as `application/json`, else `415 UNSUPPORTED_MEDIA_TYPE`:
//!    no HTML form and no "simple" cross-site `fetch` can send that without a
//!    CORS preflight, which we never grant.
//!
//! The check runs before the handler, so a refused request changes nothing.
//!
//! **Headers.** Every answer gets `X-Content-Type-Options: nosniff`,
//! `Referrer-Policy: no-referrer`, `X-Frame-Options: DENY` and a
//! Content-Security-Policy with `frame-ancestors 'none'`: on the page it allows
//! our own scripts, WebAssembly (`'wasm-unsafe-eval'`) and the hashes of the
//! inline loader Trunk writes into `index.html`, and no `unsafe-inline`; under
//! `/ops` the same, with the hashes of the operator console's own `index.html`
//! (`ops/index.html`), so neither app's loader runs in the other's pages; on
//! `/api/*` it allows nothing, and those answers are `Cache-Control: no-store`.
//! With `COOKIE_SECURE=true`, HSTS as well.

use crate::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;

/// The origin the page is served from, for the CSRF check.
#[derive(Debug, Clone)]
pub struct Csrf {
    public_origin: Arc<str>,
}

impl Csrf {
    /// Trusts `public_origin` (`scheme://host[:port]`).
    pub fn new(public_origin: &str) -> Self {
        Self {
            public_origin: public_origin.into(),
        }
    }

    /// Why `method` with `headers` is refused, if it is.
    pub fn check(&self, method: &Method, headers: &HeaderMap) -> Result<(), ApiError> {
        if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
            return Ok(());
        }
        self.check_origin(headers)?;
        check_json(headers)
    }

    fn check_origin(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let text = |name| {
            headers
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
        };
        match text("sec-fetch-site") {
            Some("same-origin" | "none") => return Ok(()),
            Some(_) => {
                return Err(ApiError::CsrfRejected(
                    "cross-site request refused: this API only answers the checkout page's own origin",
                ));
            }
            None => {}
        }
        let Some(origin) = text(header::ORIGIN.as_str()) else {
            // Not a browser (browsers send Origin on every cross-origin POST).
            return Ok(());
        };
        let host = text(header::HOST.as_str());
        let same_host = host.is_some_and(|host| {
            origin
                .split_once("://")
                .is_some_and(|(_, rest)| rest.eq_ignore_ascii_case(host))
        });
        if origin.eq_ignore_ascii_case(&self.public_origin) || same_host {
            Ok(())
        } else {
            Err(ApiError::CsrfRejected(
                "cross-origin request refused: Origin is not the checkout page's origin",
            ))
        }
    }
}

/// A body (or a declared content type) must be JSON.
fn check_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let declared = headers.get(header::CONTENT_TYPE);
    let has_body = headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|len| len.trim() != "0");
    match declared {
        None if !has_body => Ok(()),
        None => Err(ApiError::UnsupportedMediaType),
        Some(value) => {
            let essence = value
                .to_str()
                .unwrap_or_default()
                .split(';')
                .next()
                .unwrap_or_default()
                .trim();
            if essence.eq_ignore_ascii_case("application/json") {
                Ok(())
            } else {
                Err(ApiError::UnsupportedMediaType)
            }
        }
    }
}

/// Middleware: refuses a cross-site or non-JSON state-changing request (module doc).
pub async fn csrf_guard(
    State(csrf): State<Csrf>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    csrf.check(request.method(), request.headers())?;
    Ok(next.run(request).await)
}

/// The headers every answer gets.
#[derive(Debug, Clone)]
pub struct SecurityHeaders {
    page_csp: HeaderValue,
    console_csp: HeaderValue,
    hsts: bool,
}

/// The policy of `/api/*` answers: JSON, never a document that runs anything.
const API_CSP: &str =
    "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

impl SecurityHeaders {
    /// Headers for the pages built into `static_dir` (the payment page's and,
    /// under `ops/`, the operator console's `index.html` inline scripts are
    /// allowed by hash, each on its own pages); HSTS when `hsts`.
    pub fn new(static_dir: Option<&Path>, hsts: bool) -> anyhow::Result<Self> {
        let read = |relative: &str| match static_dir {
            Some(dir) => std::fs::read_to_string(dir.join(relative)).unwrap_or_default(),
            None => String::new(),
        };
        let console_index = format!("{}/index.html", crate::http::static_files::CONSOLE_DIR);
        Ok(Self {
            page_csp: page_csp(&read("index.html"))?,
            console_csp: page_csp(&read(&console_index))?,
            hsts,
        })
    }
}

/// The policy of a page whose `index.html` is `index`.
fn page_csp(index: &str) -> anyhow::Result<HeaderValue> {
    let hashes: String = inline_script_hashes(index)
        .iter()
        .map(|hash| format!(" '{hash}'"))
        .collect();
    let csp = format!(
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'{hashes}; \
         style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
         object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    );
    Ok(HeaderValue::from_str(&csp)?)
}

/// `sha256-<base64>` of every inline `<script>` of `html` (Trunk's loader).
pub fn inline_script_hashes(html: &str) -> Vec<String> {
    let mut hashes = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<script") {
        let after = &rest[start..];
        let Some(open_end) = after.find('>') else {
            break;
        };
        let tag = &after[..open_end];
        let body_and_rest = &after[open_end + 1..];
        let Some(close) = body_and_rest.find("</script>") else {
            break;
        };
        if !tag.contains(" src=") {
            let digest = Sha256::digest(&body_and_rest.as_bytes()[..close]);
            hashes.push(format!(
                "sha256-{}",
                base64::engine::general_purpose::STANDARD.encode(digest)
            ));
        }
        rest = &body_and_rest[close..];
    }
    hashes
}

/// Middleware: adds the security headers (module doc) to every answer.
pub async fn security_headers(
    State(headers): State<Arc<SecurityHeaders>>,
    request: Request,
    next: Next,
) -> Response {
    let api = request.uri().path().starts_with("/api/") || request.uri().path() == "/api";
    let console = crate::http::static_files::is_console_path(request.uri().path());
    let mut response = next.run(request).await;
    let out = response.headers_mut();
    out.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    out.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    out.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if api {
        out.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(API_CSP),
        );
        out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    } else if console {
        out.insert(header::CONTENT_SECURITY_POLICY, headers.console_csp.clone());
    } else {
        out.insert(header::CONTENT_SECURITY_POLICY, headers.page_csp.clone());
    }
    if headers.hsts {
        out.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000; includeSubDomains"),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn the_loader_script_is_hashed_and_external_scripts_are_not() {
        let html = r#"<head><script type="module">import init from '/a.js';await init();</script><script src="/b.js"></script></head>"#;
        let hashes = inline_script_hashes(html);
        // printf %s "import init from '/a.js';await init();" | openssl dgst -sha256 -binary | base64
        let digest = Sha256::digest(b"import init from '/a.js';await init();");
        let expected = format!(
            "sha256-{}",
            base64::engine::general_purpose::STANDARD.encode(digest)
        );
        assert_eq!(hashes, vec![expected]);
    }

    #[test]
    fn csrf_lets_same_origin_and_non_browser_requests_through() {
        let csrf = Csrf::new("http://127.0.0.1:3000");
        let json = ("content-type", "application/json");
        for pairs in [
            vec![json, ("sec-fetch-site", "same-origin")],
            vec![json, ("origin", "http://127.0.0.1:3000")],
            vec![
                json,
                ("origin", "http://localhost:3000"),
                ("host", "localhost:3000"),
            ],
            vec![json],
            vec![],
        ] {
            assert!(
                csrf.check(&Method::POST, &headers(&pairs)).is_ok(),
                "{pairs:?}"
            );
        }
    }

    #[test]
    fn csrf_refuses_other_sites_and_non_json_bodies() {
        let csrf = Csrf::new("http://127.0.0.1:3000");
        let json = ("content-type", "application/json");
        for pairs in [
            vec![json, ("sec-fetch-site", "cross-site")],
            vec![json, ("sec-fetch-site", "same-site")],
            vec![json, ("origin", "https://evil.example")],
            vec![json, ("origin", "null")],
        ] {
            assert!(
                matches!(
                    csrf.check(&Method::POST, &headers(&pairs)),
                    Err(ApiError::CsrfRejected(_))
                ),
                "{pairs:?}"
            );
        }
        for pairs in [
            vec![("content-type", "text/plain")],
            vec![("content-type", "application/x-www-form-urlencoded")],
            vec![("content-length", "5")],
        ] {
            assert!(
                matches!(
                    csrf.check(&Method::DELETE, &headers(&pairs)),
                    Err(ApiError::UnsupportedMediaType)
                ),
                "{pairs:?}"
            );
        }
        assert!(
            csrf.check(&Method::GET, &headers(&[("sec-fetch-site", "cross-site")]))
                .is_ok()
        );
    }
}
