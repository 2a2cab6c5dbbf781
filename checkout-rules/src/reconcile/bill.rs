//! Reading a platform's daily bill: the CSV platform-sim's `GET /v1/bills/{date}`
//! writes (WeChat Pay trade-bill columns, see `platform_sim::bill`), row by
//! row into [`BillRow`]s with amounts in integer minor units.
//!
//! Strict on purpose: the header must be exactly [`COLUMNS`], every line must
//! have as many fields, no field may be quoted, and every amount must be a
//! plain decimal with the currency's number of decimals. A bill we cannot read
//! fully is refused as a whole ([`BillFormatError`]): reconciling half a bill
//! would report the other half as missing.

use api_types::Currency;
use serde_json::{Value, json};

/// The columns of a bill, in order (the wire contract, [`api_types::platform::BILL_COLUMNS`]).
pub use api_types::platform::BILL_COLUMNS as COLUMNS;

/// What a bill row reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TradeState {
    /// `SUCCESS`: a payment the platform collected that day.
    Success,
    /// `REFUND`: a refund of a payment.
    Refund,
}

/// The refund half of a `REFUND` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BillRefund {
    /// The platform's refund id.
    pub refund_id: String,
    /// Our refund number.
    pub out_refund_no: String,
    /// What was given back, in minor units.
    pub amount_cents: i64,
    /// The platform's state of the refund (`SUCCESS` when the money went back).
    pub state: String,
}

/// One row of a daily bill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BillRow {
    /// The line it was on (the header is line 1), for messages.
    pub line: usize,
    /// When the platform says it happened, as written.
    pub trade_time: String,
    /// The platform's payment id.
    pub transaction_id: String,
    /// Our order number.
    pub out_trade_no: String,
    /// A payment or a refund.
    pub trade_state: TradeState,
    /// The currency of every amount on the row.
    pub currency: Currency,
    /// The payment's amount, in minor units.
    pub amount_cents: i64,
    /// The refund, on a `REFUND` row.
    pub refund: Option<BillRefund>,
    /// The platform's fee, in minor units.
    pub fee_cents: i64,
}

impl BillRow {
    /// The row's key in the reconciliation: `payment:<platform payment id>`
    /// for a payment, `refund:<our refund number>` for a refund.
    pub fn key(&self) -> String {
        match &self.refund {
            Some(refund) => format!("refund:{}", refund.out_refund_no),
            None => format!("payment:{}", self.transaction_id),
        }
    }

    /// The money the row moved: the payment's amount, or the refund's.
    pub fn moved_cents(&self) -> i64 {
        self.refund
            .as_ref()
            .map_or(self.amount_cents, |refund| refund.amount_cents)
    }

    /// What the bill said, for a person (stored with the row and its anomaly).
    pub fn to_json(&self) -> Value {
        let mut value = json!({
            "line": self.line,
            "trade_time": self.trade_time,
            "transaction_id": self.transaction_id,
            "out_trade_no": self.out_trade_no,
            "trade_state": match self.trade_state {
                TradeState::Success => "SUCCESS",
                TradeState::Refund => "REFUND",
            },
            "currency": self.currency.as_str(),
            "amount_cents": self.amount_cents,
            "fee_cents": self.fee_cents,
        });
        if let Some(refund) = &self.refund {
            value["refund_id"] = json!(refund.refund_id);
            value["out_refund_no"] = json!(refund.out_refund_no);
            value["refund_amount_cents"] = json!(refund.amount_cents);
            value["refund_state"] = json!(refund.state);
        }
        value
    }
}

/// A bill that cannot be read; nothing of it is reconciled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BillFormatError {
    /// The first line is not the expected header.
    #[error("the bill's header is not {expected:?}: {found:?}", expected = COLUMNS.join(","))]
    Header {
        /// What the first line held.
        found: String,
    },
    /// A row that does not read.
    #[error("line {line} of the bill: {reason}")]
    Row {
        /// The line (the header is line 1).
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
}

/// Reads a bill. An empty day is the header alone.
pub fn parse(text: &str) -> Result<Vec<BillRow>, BillFormatError> {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    if header.trim_end_matches('\r') != COLUMNS.join(",") {
        return Err(BillFormatError::Header {
            found: header.chars().take(300).collect(),
        });
    }
    lines
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(at, line)| {
            let line_no = at + 2;
            parse_row(line_no, line.trim_end_matches('\r')).map_err(|reason| BillFormatError::Row {
                line: line_no,
                reason,
            })
        })
        .collect()
}

fn parse_row(line: usize, text: &str) -> Result<BillRow, String> {
    let fields: Vec<&str> = text.split(',').collect();
    if fields.len() != COLUMNS.len() {
        return Err(format!(
            "{} fields, expected {}",
            fields.len(),
            COLUMNS.len()
        ));
    }
    if let Some(quoted) = fields.iter().find(|field| field.contains('"')) {
        return Err(format!("quoted fields are not read: {quoted:?}"));
    }
    let field = |name: &str| -> &str {
        let at = COLUMNS
            .iter()
            .position(|column| *column == name)
            .unwrap_or(0);
        fields[at].trim()
    };
    let required = |name: &str| -> Result<String, String> {
        let value = field(name);
        if value.is_empty() {
            return Err(format!("{name} is empty"));
        }
        Ok(value.to_owned())
    };
    let currency: Currency = field("currency")
        .parse()
        .map_err(|err| format!("currency: {err}"))?;
    let amount = |name: &str| -> Result<i64, String> {
        parse_amount(field(name), currency).map_err(|err| format!("{name}: {err}"))
    };
    let trade_state = match field("trade_state") {
        "SUCCESS" => TradeState::Success,
        "REFUND" => TradeState::Refund,
        other => {
            return Err(format!(
                "trade_state {other:?} is neither SUCCESS nor REFUND"
            ));
        }
    };
    let refund = match trade_state {
        TradeState::Success => None,
        TradeState::Refund => Some(BillRefund {
            refund_id: required("refund_id")?,
            out_refund_no: required("out_refund_no")?,
            amount_cents: amount("refund_amount")?,
            state: required("refund_state")?,
        }),
    };
    Ok(BillRow {
        line,
        trade_time: required("trade_time")?,
        transaction_id: required("transaction_id")?,
        out_trade_no: required("out_trade_no")?,
        trade_state,
        currency,
        amount_cents: amount("amount")?,
        refund,
        fee_cents: amount("fee")?,
    })
}

/// Parses a decimal amount in major units into minor units, exactly: with
/// [`platform_protocols::money::parse_yuan`] for the two-decimal currencies
/// (EUR, CNY, ...), digit by digit for the others. Never through a float.
pub fn parse_amount(text: &str, currency: Currency) -> Result<i64, String> {
    let exponent = currency.exponent();
    if exponent == 2 {
        return platform_protocols::money::parse_yuan(text).map_err(|err| err.to_string());
    }
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
    let decimals = usize::try_from(exponent).unwrap_or(usize::MAX);
    if whole.is_empty() || !digits(whole) || !digits(fraction) || fraction.len() > decimals {
        return Err(format!(
            "{text:?} is not an amount with at most {exponent} decimals"
        ));
    }
    let padded = format!("{whole}{fraction:0<decimals$}");
    padded
        .bytes()
        .try_fold(0_i64, |acc, byte| {
            acc.checked_mul(10)?.checked_add(i64::from(byte - b'0'))
        })
        .ok_or_else(|| format!("{text:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "trade_time,transaction_id,out_trade_no,trade_state,currency,amount,refund_id,out_refund_no,refund_amount,refund_state,fee,rate";

    #[test]
    fn reads_payment_and_refund_rows_with_exact_amounts() {
        let text = format!(
            "{HEADER}\n\
             2026-12-03T10:00:00Z,pay_1,ord_1,SUCCESS,EUR,24.50,,,,,0.15,0.60%\n\
             2026-12-03T11:00:00Z,pay_1,ord_1,REFUND,EUR,24.50,rf_1,rfd_1,4.50,SUCCESS,0.00,0.60%\n"
        );

        let rows = parse(&text).expect("reads");

        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].key(), "payment:pay_1");
        assert_eq!(rows[0].amount_cents, 2_450);
        assert_eq!(rows[0].moved_cents(), 2_450);
        assert_eq!(rows[0].fee_cents, 15);
        assert_eq!(rows[1].key(), "refund:rfd_1");
        assert_eq!(rows[1].moved_cents(), 450);
        assert_eq!(rows[1].line, 3);
    }

    #[test]
    fn an_empty_day_is_the_header_alone() {
        assert_eq!(parse(&format!("{HEADER}\n")), Ok(Vec::new()));
    }

    #[test]
    fn a_bill_that_does_not_read_is_refused_whole() {
        assert!(matches!(
            parse("time,id\n"),
            Err(BillFormatError::Header { .. })
        ));
        assert!(matches!(parse(""), Err(BillFormatError::Header { .. })));
        for bad in [
            "2026-12-03T10:00:00Z,pay_1,ord_1,SUCCESS,EUR,24.5.0,,,,,0.15,0.60%",
            "2026-12-03T10:00:00Z,pay_1,ord_1,SUCCESS,EUR,-1.00,,,,,0.15,0.60%",
            "2026-12-03T10:00:00Z,pay_1,ord_1,SUCCESS,EUR,1e3,,,,,0.15,0.60%",
            "2026-12-03T10:00:00Z,pay_1,ord_1,SUCCESS,EUR,24.501,,,,,0.15,0.60%",
            "2026-12-03T10:00:00Z,pay_1,ord_1,CLOSED,EUR,24.50,,,,,0.15,0.60%",
            "2026-12-03T10:00:00Z,pay_1,ord_1,SUCCESS,eur,24.50,,,,,0.15,0.60%",
            "2026-12-03T10:00:00Z,,ord_1,SUCCESS,EUR,24.50,,,,,0.15,0.60%",
            "2026-12-03T10:00:00Z,pay_1,ord_1,REFUND,EUR,24.50,rf_1,,4.50,SUCCESS,0.00,0.60%",
            "2026-12-03T10:00:00Z,pay_1,\"ord,1\",SUCCESS,EUR,24.50,,,,,0.15,0.60%",
            "2026-12-03T10:00:00Z,pay_1,ord_1,SUCCESS,EUR,24.50",
        ] {
            let result = parse(&format!("{HEADER}\n{bad}\n"));
            assert!(
                matches!(result, Err(BillFormatError::Row { line: 2, .. })),
                "{bad}: {result:?}"
            );
        }
    }

    #[test]
    fn amounts_follow_the_currencys_decimals() {
        let yen: Currency = "JPY".parse().expect("currency");
        let dinar: Currency = "KWD".parse().expect("currency");
        assert_eq!(parse_amount("500", yen), Ok(500));
        assert!(parse_amount("500.5", yen).is_err());
        assert_eq!(parse_amount("1.234", dinar), Ok(1_234));
        assert_eq!(parse_amount("1.2", dinar), Ok(1_200));
        assert_eq!(parse_amount("0.01", Currency::EUR), Ok(1));
        assert!(parse_amount("", Currency::EUR).is_err());
        assert!(parse_amount("99999999999999999999", yen).is_err());
    }
}
