//! The double-entry books: each ledger account's balance, read from its
//! entries, the shoppers' wallets summed per currency. Suspense is money we
//! hold that is not ours: it is shown first in its currency when not zero.

use super::{Loading, Problem};
use crate::format::words;
use crate::{Session, api, or_sign_in};
use api_types::ops::{Books, LedgerBalance};
use api_types::{LedgerAccountKind, format_minor};
use leptos::prelude::*;

/// Every account's balance, with a line saying what the kind means.
#[component]
pub fn BooksPage() -> impl IntoView {
    let session = expect_context::<RwSignal<Session>>();
    let books = LocalResource::new(move || async move { or_sign_in(session, api::books().await) });
    view! {
        <section class="card" aria-labelledby="books-title">
            <h1 id="books-title">"Books"</h1>
            <p class="muted">
                "Every movement of money debits one account and credits another. A balance is credits less debits: what the checkout owes the account's owner (negative: what the owner owes the checkout)."
            </p>
            {move || match books.get() {
                None => view! { <Loading /> }.into_any(),
                Some(Err(err)) => view! { <Problem what="Loading the books failed" err=err /> }.into_any(),
                Some(Ok(books)) => view! { <Balances books=books /> }.into_any(),
            }}
        </section>
    }
}

/// What each kind of account holds, in a sentence.
fn meaning(kind: LedgerAccountKind) -> &'static str {
    match kind {
        LedgerAccountKind::Merchant => "owed to the merchant for its sales",
        LedgerAccountKind::Clearing => {
            "taken by the payment platform for us (negative: it owes us)"
        }
        LedgerAccountKind::Suspense => "money we hold that is not ours, on its way back",
        LedgerAccountKind::Funding => "paid into wallets from outside the checkout",
        LedgerAccountKind::Wallet => "the shoppers' stored value",
    }
}

/// The table of balances.
#[component]
fn Balances(books: Books) -> impl IntoView {
    if books.accounts.is_empty() {
        return view! { <p id="books-empty" class="muted">"No money has moved yet."</p> }
            .into_any();
    }
    let suspense_held = books
        .accounts
        .iter()
        .any(|line| line.kind == LedgerAccountKind::Suspense && line.balance_cents != 0);
    view! {
        {suspense_held.then(|| view! {
            <p id="books-suspense" class="attention">
                "Suspense is not zero: money we could not book is waiting to be given back (see the anomalies queue)."
            </p>
        })}
        <table class="table" id="books-accounts">
            <thead>
                <tr>
                    <th scope="col">"Account"</th>
                    <th scope="col">"Owner"</th>
                    <th scope="col" class="num">"Debits"</th>
                    <th scope="col" class="num">"Credits"</th>
                    <th scope="col" class="num">"Held"</th>
                    <th scope="col" class="num">"Balance"</th>
                </tr>
            </thead>
            <tbody>
                {books.accounts.into_iter().map(|line| view! { <Line line=line /> }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

/// One account (or every wallet of a currency).
#[component]
fn Line(line: LedgerBalance) -> impl IntoView {
    let currency = line.currency;
    let money = move |cents: i64| format_minor(cents, currency);
    let owner = if line.kind == LedgerAccountKind::Wallet {
        format!("{} wallets", line.accounts)
    } else {
        line.owner.clone()
    };
    view! {
        <tr
            data-kind=line.kind.as_str()
            data-currency=currency.to_string()
            class:attention=(line.kind == LedgerAccountKind::Suspense && line.balance_cents != 0)
        >
            <td>
                <strong>{format!("{} {currency}", words(line.kind.as_str()))}</strong>
                <br />
                <span class="muted">{meaning(line.kind)}</span>
            </td>
            <td>{owner}</td>
            <td class="num">{money(line.debits_posted_cents)}</td>
            <td class="num">{money(line.credits_posted_cents)}</td>
            <td class="num">{money(line.debits_pending_cents)}</td>
            <td class="num balance">{money(line.balance_cents)}</td>
        </tr>
    }
}
