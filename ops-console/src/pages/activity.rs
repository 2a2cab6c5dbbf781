//! The last hour, minute by minute: callback deliveries received against
//! duplicates suppressed, and pay requests against replays. Two bar charts
//! drawn as SVG by the console, read again every [`REFRESH_MS`] by themselves.

use super::Problem;
use crate::chart::{self, Frame};
use crate::format::{minute, timestamp};
use crate::{Session, api, or_sign_in};
use api_types::ops::{Activity, ActivityMinute};
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::time::Duration;

/// How often the chart reads the activity again.
pub const REFRESH_MS: u64 = 5_000;

/// The two charts, refreshing themselves.
#[component]
pub fn ActivityPage() -> impl IntoView {
    let session = expect_context::<RwSignal<Session>>();
    let latest = RwSignal::new(None::<Result<Activity, api::ApiError>>);
    let refreshes = RwSignal::new(0_u32);
    let in_flight = StoredValue::new(false);
    let load = move || {
        if in_flight.get_value() {
            return;
        }
        in_flight.set_value(true);
        spawn_local(async move {
            let answer = or_sign_in(session, api::activity().await);
            // A failed refresh keeps the last picture, with the error above it.
            match (&answer, latest.get_untracked()) {
                (Err(_), Some(Ok(_))) => {}
                _ => latest.set(Some(answer.clone())),
            }
            if let Err(err) = answer {
                leptos::logging::warn!("activity refresh failed: {err}");
            }
            refreshes.update(|n| *n += 1);
            in_flight.set_value(false);
        });
    };
    load();
    if let Ok(handle) = set_interval_with_handle(load, Duration::from_millis(REFRESH_MS)) {
        on_cleanup(move || handle.clear());
    }

    view! {
        <section class="card" aria-labelledby="activity-title">
            <h1 id="activity-title">"The last hour"</h1>
            <p class="muted">
                "Per minute, UTC, the current minute last. Refreshes every 5 seconds; "
                <span id="activity-refreshes" data-count=move || refreshes.get().to_string()>
                    {move || format!("read {} times.", refreshes.get())}
                </span>
            </p>
            {move || match latest.get() {
                None => view! { <p class="muted">"Loading\u{2026}"</p> }.into_any(),
                Some(Err(err)) => view! { <Problem what="Loading the activity failed" err=err /> }.into_any(),
                Some(Ok(activity)) => view! { <Charts activity=activity /> }.into_any(),
            }}
        </section>
    }
}

/// Both charts for one reading.
#[component]
fn Charts(activity: Activity) -> impl IntoView {
    let minutes = activity.minutes;
    let pick = |f: fn(&ActivityMinute) -> i64| minutes.iter().map(f).collect::<Vec<_>>();
    let deliveries = pick(|m| m.deliveries);
    let duplicates = pick(|m| m.duplicates);
    let pays = pick(|m| m.pays);
    let replays = pick(|m| m.replays);
    let labels: Vec<String> = minutes.iter().map(|m| minute(m.minute)).collect();
    let updated = minutes
        .last()
        .map(|m| timestamp(m.minute))
        .unwrap_or_default();
    view! {
        <h2>"Callback deliveries"</h2>
        <BarChart
            id="chart-deliveries"
            title="Callback deliveries received and duplicates suppressed, per minute"
            first=("Deliveries received", deliveries)
            second=("Duplicates suppressed", duplicates)
            labels=labels.clone()
        />
        <h2>"Pay requests"</h2>
        <BarChart
            id="chart-pays"
            title="Pay requests that created a payment attempt and pay requests answered by a replay, per minute"
            first=("Pay requests", pays)
            second=("Replays", replays)
            labels=labels
        />
        <p class="muted">"Current minute starts " {updated} "."</p>
    }
}

/// One chart: two series as paired bars, a y axis with its maximum and half, a
/// time axis, and a legend with the hour's totals.
#[component]
fn BarChart(
    id: &'static str,
    title: &'static str,
    first: (&'static str, Vec<i64>),
    second: (&'static str, Vec<i64>),
    labels: Vec<String>,
) -> impl IntoView {
    let frame = Frame::STANDARD;
    let (bars, top) = chart::bars(&first.1, &second.1, &frame);
    let total = |values: &[i64]| values.iter().sum::<i64>();
    let (total_first, total_second) = (total(&first.1), total(&second.1));
    let slots = labels.len().max(1);
    let ticks = [0, top / 2, top].map(|value| {
        let y = frame.baseline() - frame.plot_height() * value as f64 / top as f64;
        view! {
            <line class="grid" x1=frame.left x2=frame.width - frame.right y1=y y2=y />
            <text class="axis-label" x=frame.left - 6.0 y=y + 4.0 text-anchor="end">{value.to_string()}</text>
        }
    });
    // A time label every 10 minutes, and the current minute.
    let x_labels = labels
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 10 == 0 || *i + 1 == labels.len())
        .map(|(i, label)| {
            let x = chart::slot_centre(i, slots, &frame);
            view! {
                <text class="axis-label" x=x y=frame.height - 8.0 text-anchor="middle">{label.clone()}</text>
            }
        })
        .collect_view();
    let rects = bars
        .into_iter()
        .map(|bar| {
            let name = if bar.series == 0 { first.0 } else { second.0 };
            let when = labels.get(bar.slot).cloned().unwrap_or_default();
            view! {
                <rect
                    class=if bar.series == 0 { "bar series-a" } else { "bar series-b" }
                    x=bar.x
                    y=bar.y
                    width=bar.width
                    height=bar.height
                >
                    <title>{format!("{when}: {} {name}", bar.value)}</title>
                </rect>
            }
        })
        .collect_view();
    view! {
        <figure class="chart">
            <svg
                id=id
                class="chart-svg"
                viewBox=format!("0 0 {} {}", frame.width, frame.height)
                role="img"
                aria-label=title
                data-total-a=total_first.to_string()
                data-total-b=total_second.to_string()
            >
                {ticks}
                <line class="axis" x1=frame.left x2=frame.left y1=frame.top y2=frame.baseline() />
                <line class="axis" x1=frame.left x2=frame.width - frame.right y1=frame.baseline() y2=frame.baseline() />
                {rects}
                {x_labels}
            </svg>
            <figcaption class="legend">
                <span class="swatch series-a"></span>
                {format!("{}: {} this hour", first.0, total_first)}
                <span class="swatch series-b"></span>
                {format!("{}: {} this hour", second.0, total_second)}
            </figcaption>
        </figure>
    }
}
