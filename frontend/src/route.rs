//! Which page a URL path shows.
//!
//! Two routes do not need a router: the app reads `location.pathname` once
//! at start, and moving between pages is an ordinary page load (links are
//! plain anchors; after "Buy" the shop assigns `location`). Each payment page
//! load is therefore a fresh start with exactly one request token.
//! (`leptos_router` would add about 30 KiB gzip to a 150 KiB budget.)

/// A page of the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/`: the demo shop.
    Shop,
    /// `/pay/{order_no}`: the payment page of one order.
    Pay {
        /// The order number, percent-decoded.
        order_no: String,
    },
    /// Anything else.
    NotFound,
}

impl Route {
    /// Parses a URL path (without query or fragment).
    pub fn from_path(path: &str) -> Self {
        let trimmed = path.trim_end_matches('/');
        if trimmed.is_empty() || trimmed == "/index.html" {
            return Self::Shop;
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

    /// The path of this page, for links.
    pub fn path(&self) -> String {
        match self {
            Self::Shop | Self::NotFound => "/".to_owned(),
            Self::Pay { order_no } => format!("/pay/{}", crate::api::path_segment(order_no)),
        }
    }
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
        for path in ["/pay", "/pay/", "/pay/a/b", "/shop", "/pay/%zz", "/pay/%ff"] {
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
}
