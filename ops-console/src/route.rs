//! Which view a URL under `/ops/` shows. Every view is its own address, so an
//! operator can share a link to an anomaly or an order's timeline; moving
//! between views is a plain page load (the backend answers every path under
//! `/ops/` with the console).

/// The console's views.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/ops/` and `/ops/anomalies`: the anomalies queue; `/ops/anomalies/{id}`
    /// opens one.
    Anomalies {
        /// The anomaly opened, if any.
        open: Option<i64>,
    },
    /// `/ops/orders`: search; `/ops/orders/{order_no}`: that order's timeline.
    Orders {
        /// The order whose timeline is shown, if any.
        order_no: Option<String>,
    },
    /// `/ops/activity`: the last hour's chart.
    Activity,
    /// `/ops/reconciliation`: a day's reconciliation results.
    Reconciliation,
    /// `/ops/books`: every ledger account's balance.
    Books,
    /// `/ops/merchants`: the merchants and their keys.
    Merchants,
    /// Anything else.
    NotFound,
}

impl Route {
    /// The view for a URL path.
    pub fn from_path(path: &str) -> Self {
        let Some(rest) = path.strip_prefix("/ops") else {
            return Self::NotFound;
        };
        let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
        match segments.as_slice() {
            [] | ["anomalies"] => Self::Anomalies { open: None },
            ["anomalies", id] => match id.parse() {
                Ok(id) => Self::Anomalies { open: Some(id) },
                Err(_) => Self::NotFound,
            },
            ["orders"] => Self::Orders { order_no: None },
            ["orders", order_no] => Self::Orders {
                order_no: Some(decode(order_no)),
            },
            ["activity"] => Self::Activity,
            ["reconciliation"] => Self::Reconciliation,
            ["books"] => Self::Books,
            ["merchants"] => Self::Merchants,
            _ => Self::NotFound,
        }
    }

    /// The path of the view.
    pub fn path(&self) -> String {
        match self {
            Self::Anomalies { open: None } => "/ops/anomalies".to_owned(),
            Self::Anomalies { open: Some(id) } => format!("/ops/anomalies/{id}"),
            Self::Orders { order_no: None } => "/ops/orders".to_owned(),
            Self::Orders {
                order_no: Some(order_no),
            } => format!("/ops/orders/{}", web_client::encode_component(order_no)),
            Self::Activity => "/ops/activity".to_owned(),
            Self::Reconciliation => "/ops/reconciliation".to_owned(),
            Self::Books => "/ops/books".to_owned(),
            Self::Merchants => "/ops/merchants".to_owned(),
            Self::NotFound => "/ops/".to_owned(),
        }
    }

    /// The navigation tab the view belongs to.
    pub fn tab(&self) -> Option<Tab> {
        match self {
            Self::Anomalies { .. } => Some(Tab::Anomalies),
            Self::Orders { .. } => Some(Tab::Orders),
            Self::Activity => Some(Tab::Activity),
            Self::Reconciliation => Some(Tab::Reconciliation),
            Self::Books => Some(Tab::Books),
            Self::Merchants => Some(Tab::Merchants),
            Self::NotFound => None,
        }
    }
}

/// The console's navigation tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    /// The anomalies queue.
    Anomalies,
    /// Order timelines and search.
    Orders,
    /// The last hour.
    Activity,
    /// Reconciliation results.
    Reconciliation,
    /// The ledger accounts' balances.
    Books,
    /// The merchants and their keys.
    Merchants,
}

impl Tab {
    /// Every tab, in the order the navigation shows them.
    pub const ALL: [Tab; 6] = [
        Tab::Anomalies,
        Tab::Orders,
        Tab::Activity,
        Tab::Reconciliation,
        Tab::Books,
        Tab::Merchants,
    ];

    /// The tab's label.
    pub fn label(self) -> &'static str {
        match self {
            Tab::Anomalies => "Anomalies",
            Tab::Orders => "Orders",
            Tab::Activity => "Activity",
            Tab::Reconciliation => "Reconciliation",
            Tab::Books => "Books",
            Tab::Merchants => "Merchants",
        }
    }

    /// Where the tab leads.
    pub fn route(self) -> Route {
        match self {
            Tab::Anomalies => Route::Anomalies { open: None },
            Tab::Orders => Route::Orders { order_no: None },
            Tab::Activity => Route::Activity,
            Tab::Reconciliation => Route::Reconciliation,
            Tab::Books => Route::Books,
            Tab::Merchants => Route::Merchants,
        }
    }

    /// The element id of its link (stable, for tests).
    pub fn id(self) -> &'static str {
        match self {
            Tab::Anomalies => "tab-anomalies",
            Tab::Orders => "tab-orders",
            Tab::Activity => "tab-activity",
            Tab::Reconciliation => "tab-reconciliation",
            Tab::Books => "tab-books",
            Tab::Merchants => "tab-merchants",
        }
    }
}

/// Percent-decodes a path segment; a segment that does not decode to UTF-8 is kept as it is.
fn decode(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let value = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| raw.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_console_root_opens_the_anomalies_queue() {
        for path in ["/ops", "/ops/", "/ops/anomalies", "/ops/anomalies/"] {
            assert_eq!(
                Route::from_path(path),
                Route::Anomalies { open: None },
                "{path}"
            );
        }
        assert_eq!(
            Route::from_path("/ops/anomalies/42"),
            Route::Anomalies { open: Some(42) }
        );
    }

    #[test]
    fn every_view_has_its_own_address_and_reads_back() {
        for route in [
            Route::Anomalies { open: None },
            Route::Anomalies { open: Some(7) },
            Route::Orders { order_no: None },
            Route::Orders {
                order_no: Some("ord 1/x".into()),
            },
            Route::Activity,
            Route::Reconciliation,
            Route::Books,
            Route::Merchants,
        ] {
            assert_eq!(Route::from_path(&route.path()), route, "{}", route.path());
        }
    }

    #[test]
    fn unknown_paths_are_not_found() {
        for path in [
            "/",
            "/pay/x",
            "/ops/anomalies/x",
            "/ops/nope",
            "/ops/orders/a/b",
        ] {
            assert_eq!(Route::from_path(path), Route::NotFound, "{path}");
        }
    }
}
