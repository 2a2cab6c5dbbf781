//! The harness of the fast-path equivalence tests: every case run on its own
//! twins, a few at a time, and every disagreement reported.

use futures::StreamExt;

/// Runs `run` on every case (with its index, for the twins' names), 8 at a
/// time; fails naming the first case whose paths disagreed (`Err`). Returns
/// how many cases the one statement took by itself (`Ok(true)`).
pub async fn cases_agree<C, F, Fut>(cases: &[C], run: F) -> usize
where
    C: Copy,
    F: Fn(usize, C) -> Fut,
    Fut: Future<Output = Result<bool, String>>,
{
    let results: Vec<Result<bool, String>> =
        futures::stream::iter(cases.iter().copied().enumerate())
            .map(|(n, case)| run(n, case))
            .buffer_unordered(8)
            .collect()
            .await;
    let failures: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases disagree; first: {}",
        failures.len(),
        cases.len(),
        failures.first().map_or("", |f| f.as_str())
    );
    results.iter().filter(|r| matches!(r, Ok(true))).count()
}
