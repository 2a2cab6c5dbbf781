//! The comparison itself, a pure function of the bill and of what we hold
//! ([`Books`]), so every rule is tested without a database.
//!
//! A bill payment row (`payment:<platform payment id>`):
//!
//! - a CHARGE names that platform payment: `MATCHED`, or `AMOUNT_MISMATCH`
//!   when amount or currency differ;
//! - none, but we started an automatic refund of that payment (a success we
//!   knowingly could not book: late, unsolicited, a second payment, ...):
//!   `MATCHED` (the money is known and on its way back; the refund's own row
//!   and its `REFUND_FAILED` anomaly follow it), or `AMOUNT_MISMATCH`;
//! - none, and the order is CLOSED or FAILED here: `STATE_MISMATCH` (the
//!   platform says paid, we say not paid);
//! - none at all (the order PENDING, PAID by another payment, or unknown):
//!   `MISSING_IN_LEDGER`: the platform collected money we never booked (a
//!   payment whose callbacks were all lost).
//!
//! A bill refund row (`refund:<our refund number>`):
//!
//! - a REFUND ledger row of that number: `MATCHED` or `AMOUNT_MISMATCH`
//!   (and `STATE_MISMATCH` when the bill says the refund did not succeed);
//! - an automatic refund of that number (they write no ledger row, the money
//!   never entered our books): SUCCEEDED here, `MATCHED` or `AMOUNT_MISMATCH`;
//!   PENDING or FAILED here, `STATE_MISMATCH`;
//! - a merchant's or operator's refund of that number with no ledger row
//!   (PENDING or FAILED here): `STATE_MISMATCH`;
//! - no refund of that number: `MISSING_IN_LEDGER`.
//!
//! A CHARGE or REFUND ledger row booked on the bill's day whose key the bill
//! lacks is `MISSING_IN_BILL`, unless an earlier reconciliation found it on
//! another day's bill (a payment decided just before midnight and booked just
//! after).

use super::bill::{BillRow, TradeState};
use api_types::{Currency, OrderStatus, ReconClass, RefundRequester, RefundStatus};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use time::OffsetDateTime;

/// A ledger row, as the comparison needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerRow {
    /// CHARGE (a refund number of None) or REFUND.
    pub refund_no: Option<String>,
    /// The order.
    pub order_no: String,
    /// The platform payment charged or refunded.
    pub platform_payment_id: String,
    /// Minor units.
    pub amount_cents: i64,
    /// Its currency.
    pub currency: Currency,
    /// When we booked it.
    pub booked_at: OffsetDateTime,
}

impl LedgerRow {
    /// The reconciliation key of the row: the key its bill row has.
    pub fn key(&self) -> String {
        match &self.refund_no {
            Some(refund_no) => format!("refund:{refund_no}"),
            None => format!("payment:{}", self.platform_payment_id),
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "kind": if self.refund_no.is_some() { "REFUND" } else { "CHARGE" },
            "order_no": self.order_no,
            "platform_payment_id": self.platform_payment_id,
            "refund_no": self.refund_no,
            "amount_cents": self.amount_cents,
            "currency": self.currency.as_str(),
            "booked_at": self.booked_at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default(),
        })
    }
}

/// A refund of ours, as the comparison needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundFact {
    /// Our refund number.
    pub refund_no: String,
    /// The order refunded.
    pub order_no: String,
    /// The platform payment refunded.
    pub platform_payment_id: String,
    /// Minor units.
    pub amount_cents: i64,
    /// Its currency.
    pub currency: Currency,
    /// Where it stands here.
    pub status: RefundStatus,
    /// Who asked for it.
    pub requested_by: RefundRequester,
}

impl RefundFact {
    fn to_json(&self) -> Value {
        json!({
            "refund_no": self.refund_no,
            "order_no": self.order_no,
            "platform_payment_id": self.platform_payment_id,
            "amount_cents": self.amount_cents,
            "currency": self.currency.as_str(),
            "status": self.status.as_str(),
            "requested_by": self.requested_by.as_str(),
        })
    }
}

/// What we hold that a bill is compared with.
#[derive(Debug, Clone, Default)]
pub struct Books {
    /// CHARGE rows, by the platform payment they name.
    pub charges: HashMap<String, LedgerRow>,
    /// REFUND rows, by refund number.
    pub refunds_booked: HashMap<String, LedgerRow>,
    /// The status of the orders the bill names.
    pub orders: HashMap<String, OrderStatus>,
    /// Our refunds, by refund number.
    pub refunds: HashMap<String, RefundFact>,
    /// Automatic refunds, by the platform payment they give back.
    pub automatic: HashMap<String, RefundFact>,
    /// CHARGE and REFUND rows booked on the bill's day.
    pub booked_on_day: Vec<LedgerRow>,
    /// Keys found on another day's bill by an earlier reconciliation.
    pub billed_elsewhere: HashSet<String>,
}

/// One classified row: what is stored in `reconciliation_items`.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// `payment:<platform payment id>` or `refund:<refund number>`.
    pub row_key: String,
    /// How it compared.
    pub class: ReconClass,
    /// The order concerned.
    pub order_no: String,
    /// What the bill said (None: the bill lacks the row).
    pub bill: Option<Value>,
    /// What we hold (None: nothing).
    pub ledger: Option<Value>,
}

/// Classes every bill row and every ledger row of the day the bill lacks. A
/// key the bill lists twice is classed once, by its first row.
pub fn classify(bill: &[BillRow], books: &Books) -> Vec<Item> {
    let mut items = Vec::new();
    let mut seen = HashSet::new();
    for row in bill {
        let key = row.key();
        if !seen.insert(key.clone()) {
            tracing::warn!(row_key = %key, line = row.line, "the bill lists this row twice; the first one is reconciled");
            continue;
        }
        let (class, ledger) = match row.trade_state {
            TradeState::Success => payment_row(row, books),
            TradeState::Refund => refund_row(row, books),
        };
        items.push(Item {
            row_key: key,
            class,
            order_no: row.out_trade_no.clone(),
            bill: Some(row.to_json()),
            ledger,
        });
    }
    for booked in &books.booked_on_day {
        let key = booked.key();
        if seen.contains(&key) || books.billed_elsewhere.contains(&key) {
            continue;
        }
        seen.insert(key.clone());
        items.push(Item {
            row_key: key,
            class: ReconClass::MissingInBill,
            order_no: booked.order_no.clone(),
            bill: None,
            ledger: Some(booked.to_json()),
        });
    }
    items
}

fn same_money(row: &BillRow, amount_cents: i64, currency: Currency) -> ReconClass {
    if row.moved_cents() == amount_cents && row.currency == currency {
        ReconClass::Matched
    } else {
        ReconClass::AmountMismatch
    }
}

fn payment_row(row: &BillRow, books: &Books) -> (ReconClass, Option<Value>) {
    if let Some(charge) = books.charges.get(&row.transaction_id) {
        return (
            same_money(row, charge.amount_cents, charge.currency),
            Some(charge.to_json()),
        );
    }
    let order = books.orders.get(&row.out_trade_no).copied();
    let order_json = order.map(|status| json!(status.as_str()));
    if let Some(automatic) = books.automatic.get(&row.transaction_id) {
        return (
            same_money(row, automatic.amount_cents, automatic.currency),
            Some(json!({"order_status": order_json, "automatic_refund": automatic.to_json()})),
        );
    }
    let class = match order {
        Some(OrderStatus::Closed | OrderStatus::Failed) => ReconClass::StateMismatch,
        _ => ReconClass::MissingInLedger,
    };
    let ledger = order.map(|_| json!({"order_status": order_json, "charge": null}));
    (class, ledger)
}

fn refund_row(row: &BillRow, books: &Books) -> (ReconClass, Option<Value>) {
    let Some(refund) = &row.refund else {
        return (ReconClass::MissingInLedger, None);
    };
    let succeeded_on_bill = refund.state == "SUCCESS";
    if let Some(booked) = books.refunds_booked.get(&refund.out_refund_no) {
        let class = if succeeded_on_bill {
            same_money(row, booked.amount_cents, booked.currency)
        } else {
            ReconClass::StateMismatch
        };
        return (class, Some(booked.to_json()));
    }
    let Some(fact) = books.refunds.get(&refund.out_refund_no) else {
        return (ReconClass::MissingInLedger, None);
    };
    let ledger = Some(json!({"refund": fact.to_json(), "ledger_row": null}));
    let class = match (fact.requested_by, fact.status) {
        (RefundRequester::Automatic, RefundStatus::Succeeded) if succeeded_on_bill => {
            same_money(row, fact.amount_cents, fact.currency)
        }
        // Nothing moved on either side.
        (_, RefundStatus::Failed) if !succeeded_on_bill => ReconClass::Matched,
        _ => ReconClass::StateMismatch,
    };
    (class, ledger)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::bill::BillRefund;

    fn payment(id: &str, order: &str, amount: i64) -> BillRow {
        BillRow {
            line: 2,
            trade_time: "2026-12-03T10:00:00Z".into(),
            transaction_id: id.into(),
            out_trade_no: order.into(),
            trade_state: TradeState::Success,
            currency: Currency::EUR,
            amount_cents: amount,
            refund: None,
            fee_cents: 0,
        }
    }

    fn refund(id: &str, order: &str, refund_no: &str, amount: i64) -> BillRow {
        BillRow {
            trade_state: TradeState::Refund,
            refund: Some(BillRefund {
                refund_id: format!("rf_{refund_no}"),
                out_refund_no: refund_no.into(),
                amount_cents: amount,
                state: "SUCCESS".into(),
            }),
            ..payment(id, order, 10_000)
        }
    }

    fn charge(id: &str, order: &str, amount: i64) -> LedgerRow {
        LedgerRow {
            refund_no: None,
            order_no: order.into(),
            platform_payment_id: id.into(),
            amount_cents: amount,
            currency: Currency::EUR,
            booked_at: OffsetDateTime::UNIX_EPOCH,
        }
    }

    fn booked_refund(id: &str, order: &str, refund_no: &str, amount: i64) -> LedgerRow {
        LedgerRow {
            refund_no: Some(refund_no.into()),
            ..charge(id, order, amount)
        }
    }

    fn fact(refund_no: &str, by: RefundRequester, status: RefundStatus) -> RefundFact {
        RefundFact {
            refund_no: refund_no.into(),
            order_no: "ord_x".into(),
            platform_payment_id: "pay_x".into(),
            amount_cents: 10_000,
            currency: Currency::EUR,
            status,
            requested_by: by,
        }
    }

    fn classes(items: &[Item]) -> Vec<(String, ReconClass)> {
        items
            .iter()
            .map(|item| (item.row_key.clone(), item.class))
            .collect()
    }

    #[test]
    fn a_charge_and_a_refund_that_agree_are_matched_and_nothing_else_is_reported() {
        let mut books = Books::default();
        books
            .charges
            .insert("pay_1".into(), charge("pay_1", "ord_1", 2_450));
        books.refunds_booked.insert(
            "rfd_1".into(),
            booked_refund("pay_1", "ord_1", "rfd_1", 450),
        );
        books.booked_on_day = books
            .charges
            .values()
            .chain(books.refunds_booked.values())
            .cloned()
            .collect();
        let bill = [
            payment("pay_1", "ord_1", 2_450),
            refund("pay_1", "ord_1", "rfd_1", 450),
        ];

        let items = classify(&bill, &books);

        assert_eq!(
            classes(&items),
            [
                ("payment:pay_1".into(), ReconClass::Matched),
                ("refund:rfd_1".into(), ReconClass::Matched)
            ]
        );
    }

    #[test]
    fn another_amount_or_currency_is_an_amount_mismatch() {
        let mut books = Books::default();
        books
            .charges
            .insert("pay_1".into(), charge("pay_1", "ord_1", 2_450));
        books.refunds_booked.insert(
            "rfd_1".into(),
            booked_refund("pay_1", "ord_1", "rfd_1", 450),
        );
        let mut in_yuan = payment("pay_1", "ord_1", 2_450);
        in_yuan.currency = Currency::CNY;

        assert_eq!(
            classify(&[payment("pay_1", "ord_1", 2_550)], &books)[0].class,
            ReconClass::AmountMismatch
        );
        assert_eq!(
            classify(&[in_yuan], &books)[0].class,
            ReconClass::AmountMismatch
        );
        assert_eq!(
            classify(&[refund("pay_1", "ord_1", "rfd_1", 451)], &books)[0].class,
            ReconClass::AmountMismatch
        );
    }

    #[test]
    fn a_payment_we_never_booked_is_missing_in_the_ledger_unless_the_order_is_closed_or_failed() {
        let mut books = Books::default();
        books
            .orders
            .insert("ord_pending".into(), OrderStatus::Pending);
        books
            .orders
            .insert("ord_closed".into(), OrderStatus::Closed);
        books
            .orders
            .insert("ord_failed".into(), OrderStatus::Failed);
        let bill = [
            payment("pay_1", "ord_pending", 100),
            payment("pay_2", "ord_unknown", 100),
            payment("pay_3", "ord_closed", 100),
            payment("pay_4", "ord_failed", 100),
        ];

        assert_eq!(
            classes(&classify(&bill, &books)),
            [
                ("payment:pay_1".into(), ReconClass::MissingInLedger),
                ("payment:pay_2".into(), ReconClass::MissingInLedger),
                ("payment:pay_3".into(), ReconClass::StateMismatch),
                ("payment:pay_4".into(), ReconClass::StateMismatch),
            ]
        );
    }

    #[test]
    fn money_we_knowingly_give_back_is_matched_and_its_refund_checked_on_its_own_row() {
        let mut books = Books::default();
        books.orders.insert("ord_x".into(), OrderStatus::Closed);
        let given_back = fact(
            "rfd_auto",
            RefundRequester::Automatic,
            RefundStatus::Succeeded,
        );
        books.automatic.insert("pay_x".into(), given_back.clone());
        books.refunds.insert("rfd_auto".into(), given_back);
        books.refunds.insert(
            "rfd_pending".into(),
            fact(
                "rfd_pending",
                RefundRequester::Automatic,
                RefundStatus::Pending,
            ),
        );
        books.refunds.insert(
            "rfd_failed".into(),
            fact(
                "rfd_failed",
                RefundRequester::Merchant,
                RefundStatus::Failed,
            ),
        );
        let bill = [
            payment("pay_x", "ord_x", 10_000),
            refund("pay_x", "ord_x", "rfd_auto", 10_000),
            refund("pay_x", "ord_x", "rfd_pending", 10_000),
            refund("pay_x", "ord_x", "rfd_failed", 10_000),
            refund("pay_x", "ord_x", "rfd_unknown", 10_000),
        ];

        assert_eq!(
            classes(&classify(&bill, &books)),
            [
                ("payment:pay_x".into(), ReconClass::Matched),
                ("refund:rfd_auto".into(), ReconClass::Matched),
                ("refund:rfd_pending".into(), ReconClass::StateMismatch),
                ("refund:rfd_failed".into(), ReconClass::StateMismatch),
                ("refund:rfd_unknown".into(), ReconClass::MissingInLedger),
            ]
        );
    }

    #[test]
    fn a_booked_row_the_bill_lacks_is_missing_in_the_bill_unless_billed_on_another_day() {
        let books = Books {
            booked_on_day: vec![
                charge("pay_1", "ord_1", 100),
                charge("pay_2", "ord_2", 100),
                booked_refund("pay_1", "ord_1", "rfd_1", 50),
            ],
            billed_elsewhere: ["payment:pay_2".to_owned()].into(),
            ..Books::default()
        };

        let items = classify(&[], &books);

        assert_eq!(
            classes(&items),
            [
                ("payment:pay_1".into(), ReconClass::MissingInBill),
                ("refund:rfd_1".into(), ReconClass::MissingInBill),
            ]
        );
        assert!(
            items
                .iter()
                .all(|item| item.bill.is_none() && item.ledger.is_some())
        );
    }

    #[test]
    fn a_row_listed_twice_is_classed_once() {
        let mut books = Books::default();
        books
            .charges
            .insert("pay_1".into(), charge("pay_1", "ord_1", 100));
        let bill = [
            payment("pay_1", "ord_1", 100),
            payment("pay_1", "ord_1", 100),
        ];

        assert_eq!(classify(&bill, &books).len(), 1);
    }
}
