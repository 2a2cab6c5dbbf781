//! Which page a URL shows, and where the sign-in page may send a shopper back to.
//!
//! Three routes do not need a router: the app reads `location` once at start,
//! and moving between pages is an ordinary page load (links are plain anchors;
//! after "Buy" or signing in the page assigns `location`). Each payment page
//! load is therefore a fresh start with exactly one request token.
//! (`leptos_router` would add about 30 KiB gzip to a 150 KiB budget.)
//!
//! `/signin?next=...` carries the page to return to. It comes from the URL, so
//! anybody can write it: [`safe_next`] accepts only a path on this site, never
//! another site (`//evil.example`, `https://evil.example`, `/\evil.example`).

/// A page of the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/`: the shop (needs a session).
    Shop,
    /// `/signin?next=...`: the sign-in form.
    SignIn {
        /// Where to go after signing in: a path on this site that passed
        /// [`safe_next`]; the shop when `None`.
        next: Option<String>,
    },
    /// `/pay/{order_no}`: the payment page of one order (needs a session).
    Pay {
        /// The order number, percent-decoded.
        order_no: String,
    },
    /// Anything else.
    NotFound,
}

/// Longest `next` accepted; a longer one is dropped (the shop is used instead).
pub const MAX_NEXT_LEN: usize = 2_048;

impl Route {
    /// Parses a URL path (without query or fragment).
    pub fn from_path(path: &str) -> Self {
        Self::from_location(path, "")
    }

    /// Parses `location.pathname` and `location.search` (with or without its `?`).
    pub fn from_location(path: &str, search: &str) -> Self {
        let trimmed = path.trim_end_matches('/');
        if trimmed.is_empty() || trimmed == "/index.html" {
            return Self::Shop;
        }
        if trimmed == "/signin" {
            let next = query_param(search, "next").and_then(|raw| safe_next(&raw));
            return Self::SignIn { next };
        }
        match trimmed.strip_prefix("/pay/") {
            Some(segment) if !segment.is_empty() && !segment.contains('/') => {
                match percent_decode(segment) {
                    Some(order_no) => Self::Pay { order_no },
                    None => Self::NotFound,
                }
            }
            _ => Self::NotFound,
        }
    }

    /// The sign-in page that returns to `current_path` (this page's path) afterwards.
    pub fn sign_in_returning_to(current_path: &str) -> Self {
        Self::SignIn {
            next: safe_next(current_path),
        }
    }

    /// The path (and query) of this page, for links.
    pub fn path(&self) -> String {
        match self {
            Self::Shop | Self::NotFound => "/".to_owned(),
            Self::SignIn { next: None } => "/signin".to_owned(),
            Self::SignIn { next: Some(next) } => {
                format!("/signin?next={}", web_client::encode_component(next))
            }
            Self::Pay { order_no } => format!("/pay/{}", web_client::encode_component(order_no)),
        }
    }
}

/// `raw` when it is a path on this site to return to after signing in, else `None`.
///
/// Accepted: starts with exactly one `/`. Refused: anything a browser could
/// resolve to another host (`//host`, `/\host`, `scheme:...`, which does not
/// start with `/`), any backslash, whitespace or control character (browsers
/// drop tabs and newlines from URLs, so `/\t/host` would become `//host`),
/// and anything longer than [`MAX_NEXT_LEN`]. The sign-in page itself is not
/// a destination either.
pub fn safe_next(raw: &str) -> Option<String> {
    let rest = raw.strip_prefix('/')?;
    let acceptable = raw.len() <= MAX_NEXT_LEN
        && !rest.starts_with('/')
        && !raw
            .chars()
            .any(|c| c == '\\' || c.is_whitespace() || c.is_control());
    let path = raw.split(['?', '#']).next().unwrap_or_default();
    let sign_in = path.trim_end_matches('/') == "/signin";
    (acceptable && !sign_in).then(|| raw.to_owned())
}

/// The percent-decoded value of the first `name=` parameter of a query string.
pub fn query_param(search: &str, name: &str) -> Option<String> {
    search
        .strip_prefix('?')
        .unwrap_or(search)
        .split('&')
        .find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key == name).then(|| percent_decode(value))?
        })
}

/// Decodes `%XX` escapes; `None` when an escape is broken or the result is not UTF-8.
fn percent_decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = segment.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn pay(order_no: &str) -> Route {
        Route::Pay {
            order_no: order_no.to_owned(),
        }
    }

    fn sign_in(next: Option<&str>) -> Route {
        Route::SignIn {
            next: next.map(str::to_owned),
        }
    }

    #[test]
    fn the_root_is_the_shop() {
        assert_eq!(Route::from_path("/"), Route::Shop);
        assert_eq!(Route::from_path(""), Route::Shop);
        assert_eq!(Route::from_path("/index.html"), Route::Shop);
    }

    #[test]
    fn pay_paths_carry_the_order_number() {
        assert_eq!(Route::from_path("/pay/ORD-1"), pay("ORD-1"));
        assert_eq!(Route::from_path("/pay/ORD-1/"), pay("ORD-1"));
        assert_eq!(Route::from_path("/pay/a%20b"), pay("a b"));
    }

    #[test]
    fn anything_else_is_not_found() {
        for path in [
            "/pay",
            "/pay/",
            "/pay/a/b",
            "/shop",
            "/pay/%zz",
            "/pay/%ff",
            "/signin/x",
            "/signing",
        ] {
            assert_eq!(Route::from_path(path), Route::NotFound, "{path}");
        }
    }

    #[test]
    fn paths_round_trip() {
        for order_no in ["ORD-1", "a b/c", "é"] {
            let route = pay(order_no);
            assert_eq!(Route::from_path(&route.path()), route);
        }
        assert_eq!(Route::Shop.path(), "/");
    }

    #[test]
    fn the_sign_in_page_reads_where_to_go_back_to() {
        assert_eq!(Route::from_path("/signin"), sign_in(None));
        assert_eq!(Route::from_location("/signin/", ""), sign_in(None));
        assert_eq!(
            Route::from_location("/signin", "?next=%2Fpay%2FORD-1"),
            sign_in(Some("/pay/ORD-1"))
        );
        assert_eq!(
            Route::from_location("/signin", "next=%2F&x=1"),
            sign_in(Some("/"))
        );
        assert_eq!(
            Route::from_location("/signin", "?x=1&next=/pay/ORD-2"),
            sign_in(Some("/pay/ORD-2"))
        );
        assert_eq!(Route::from_location("/signin", "?x=1"), sign_in(None));
        assert_eq!(Route::from_location("/signin", "?next=%zz"), sign_in(None));
    }

    #[test]
    fn the_sign_in_page_never_sends_a_shopper_to_another_site() {
        for next in [
            "//evil.example",
            "%2F%2Fevil.example",
            "https://evil.example",
            "https%3A%2F%2Fevil.example",
            "http:evil.example",
            "javascript:alert(1)",
            "/%5Cevil.example",
            "%2F%5Cevil.example",
            "/%09/evil.example",
            "/%0A/evil.example",
            "/%20/evil.example",
            "evil.example",
            "",
            "///evil.example",
            "/signin",
            "/signin%3Fnext%3D%2F%2Fevil.example",
        ] {
            assert_eq!(
                Route::from_location("/signin", &format!("?next={next}")),
                sign_in(None),
                "next={next}"
            );
        }
        let long = format!("/{}", "a".repeat(MAX_NEXT_LEN));
        assert_eq!(safe_next(&long), None);
    }

    #[test]
    fn paths_on_this_site_are_accepted_as_they_are() {
        for next in ["/", "/pay/ORD-1", "/pay/a%20b", "/pay/x?y=1#z", "/pay/a:b"] {
            assert_eq!(safe_next(next).as_deref(), Some(next), "{next}");
        }
    }

    #[test]
    fn a_sign_in_link_round_trips_the_page_to_return_to() {
        for path in ["/", "/pay/ORD-1", "/pay/a%20b%2Fc"] {
            let route = Route::sign_in_returning_to(path);
            assert_eq!(route, sign_in(Some(path)));
            let link = route.path();
            let (link_path, search) = link.split_once('?').expect("a query");
            assert_eq!(link_path, "/signin");
            assert!(!search.contains('/'), "{search}");
            assert_eq!(Route::from_location(link_path, search), route);
        }
        assert_eq!(Route::sign_in_returning_to("//evil.example"), sign_in(None));
        assert_eq!(sign_in(None).path(), "/signin");
    }
}
