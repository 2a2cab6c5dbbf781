//! Where a merchant may send its shoppers back to: its `return_origins` (set
//! by the operator) and, per order, a `return_url` and `cancel_url` whose
//! origin is one of them. Parsed as a browser parses a URL (the WHATWG URL
//! standard, through the `url` crate), so what is checked here is what the
//! page will navigate to: no scheme, host or port trick can lead elsewhere.
//!
//! A URL is allowed when it is `https`, or `http` on a loopback host (a
//! merchant's test server), carries no user name or password, is at most
//! [`MAX_URL_CHARS`] long, and its origin equals one of the merchant's.

use url::{Host, Url};

/// Longest return or cancel URL.
pub const MAX_URL_CHARS: usize = 2048;
/// Most return origins per merchant.
pub const MAX_ORIGINS: usize = 20;

/// Why a URL or an origin is refused; the text is for the merchant's developer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotAllowed(pub String);

/// A merchant's return origin, as the operator gives it: `https://host[:port]`
/// (or `http` on a loopback host) and nothing after it. Answers its
/// serialisation (lower-case host, default port dropped), the form compared
/// with an order's URLs.
pub fn origin(text: &str) -> Result<String, NotAllowed> {
    let url = parse(text)?;
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() || text.ends_with('/')
    {
        return Err(NotAllowed(format!(
            "{text:?} is not an origin: give scheme://host[:port] with nothing after it"
        )));
    }
    Ok(url.origin().ascii_serialization())
}

/// Checks an order's `return_url` or `cancel_url` against the merchant's
/// origins (each as [`origin`] answered it); answers the URL as it will be
/// followed (normalised by the parser).
pub fn check(text: &str, origins: &[String]) -> Result<Url, NotAllowed> {
    if text.chars().count() > MAX_URL_CHARS {
        return Err(NotAllowed(format!(
            "the URL is longer than {MAX_URL_CHARS} characters"
        )));
    }
    let url = parse(text)?;
    let its_origin = url.origin().ascii_serialization();
    if !origins.contains(&its_origin) {
        return Err(NotAllowed(format!(
            "{its_origin} is not one of this merchant's return origins ({})",
            if origins.is_empty() {
                "it has none; ask the operator to add yours".to_owned()
            } else {
                origins.join(", ")
            }
        )));
    }
    Ok(url)
}

/// `url` with `order_no` and `status` appended to its query, where the
/// payment page sends the shopper: the merchant reads the order before
/// trusting them (the return proves nothing).
pub fn with_result(url: &Url, order_no: &str, status: &str) -> Url {
    let mut url = url.clone();
    url.query_pairs_mut()
        .append_pair("order_no", order_no)
        .append_pair("status", status);
    url
}

fn parse(text: &str) -> Result<Url, NotAllowed> {
    let url = Url::parse(text)
        .map_err(|err| NotAllowed(format!("{text:?} is not an absolute URL: {err}")))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(NotAllowed(
            "the URL may not carry a user name or password".to_owned(),
        ));
    }
    let loopback = match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(name)) => name == "localhost",
        None => false,
    };
    match url.scheme() {
        "https" if url.host().is_some() => Ok(url),
        "http" if loopback => Ok(url),
        "http" => Err(NotAllowed(format!(
            "{text:?} must be https (http only on a loopback host)"
        ))),
        scheme => Err(NotAllowed(format!(
            "{text:?} has scheme {scheme:?}; only https (or http on a loopback host) is allowed"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shop() -> Vec<String> {
        vec![
            origin("https://shop.example").expect("origin"),
            origin("http://127.0.0.1:8081").expect("origin"),
        ]
    }

    #[test]
    fn origins_are_https_or_loopback_http_and_nothing_after() {
        assert_eq!(
            origin("https://Shop.Example:443").as_deref(),
            Ok("https://shop.example")
        );
        assert_eq!(
            origin("http://localhost:8080").as_deref(),
            Ok("http://localhost:8080")
        );
        assert_eq!(origin("http://[::1]:9").as_deref(), Ok("http://[::1]:9"));
        for bad in [
            "",
            "shop.example",
            "https://shop.example/",
            "https://shop.example/path",
            "https://shop.example?x=1",
            "https://shop.example#top",
            "http://shop.example",
            "ftp://shop.example",
            "javascript:alert(1)",
            "https://user:pw@shop.example",
            "data:text/html,hi",
        ] {
            assert!(origin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_url_of_one_of_the_merchants_origins_is_allowed() {
        let origins = shop();
        for good in [
            "https://shop.example/thanks",
            "https://SHOP.example:443/thanks?cart=1#done",
            "http://127.0.0.1:8081/back",
        ] {
            assert!(check(good, &origins).is_ok(), "{good}");
        }
    }

    #[test]
    fn every_other_url_is_refused() {
        let origins = shop();
        for bad in [
            "https://evil.example/",
            "https://shop.example.evil.example/",
            "https://shop.example@evil.example/",
            "https://evil.example\\@shop.example/",
            "http://shop.example/",
            "https://shop.example:8443/",
            "http://127.0.0.1:8082/",
            "//evil.example/",
            "/relative",
            "javascript:alert(document.cookie)",
            "data:text/html,<script>alert(1)</script>",
            "https://user@shop.example/",
            "",
        ] {
            assert!(check(bad, &origins).is_err(), "{bad}");
        }
        assert!(check("https://shop.example/", &[]).is_err());
        let long = format!("https://shop.example/{}", "a".repeat(MAX_URL_CHARS));
        assert!(check(&long, &origins).is_err());
    }

    #[test]
    fn the_result_is_appended_to_the_query_encoded() {
        let url = check("https://shop.example/back?cart=7", &shop()).expect("allowed");
        assert_eq!(
            with_result(&url, "ord_1&x=2", "PAID").as_str(),
            "https://shop.example/back?cart=7&order_no=ord_1%26x%3D2&status=PAID"
        );
    }
}
