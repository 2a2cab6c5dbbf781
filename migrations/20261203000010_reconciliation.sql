-- Daily bill reconciliation (issue 13): the platform's bill of a UTC day
-- compared with the ledger. One row per (bill date, row key): a bill row's key
-- is `payment:<platform payment id>` or `refund:<our refund number>`, and a
-- ledger row the bill lacks gets the same key, so a row is classed once per
-- date. Reconciling a date again inserts nothing (ON CONFLICT DO NOTHING):
-- the first verdict stands, and a person's review starts from it.
CREATE TABLE reconciliation_items (
    item_id   bigserial PRIMARY KEY,
    bill_date date NOT NULL,
    row_key   text NOT NULL CONSTRAINT reconciliation_items_row_key_known
              CHECK (row_key ~ '^(payment|refund):.+$'),
    class     text NOT NULL CONSTRAINT reconciliation_items_class_check CHECK (class IN (
                  'MATCHED', 'MISSING_IN_LEDGER', 'MISSING_IN_BILL', 'AMOUNT_MISMATCH', 'STATE_MISMATCH')),
    -- The order concerned, as the bill or the ledger names it.
    order_no  text NOT NULL,
    -- What the bill said (NULL: the bill lacks the row) and what we hold (NULL: nothing).
    bill      jsonb,
    ledger    jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT reconciliation_items_once_per_date_and_row UNIQUE (bill_date, row_key),
    CONSTRAINT reconciliation_items_bill_unless_missing
        CHECK ((class = 'MISSING_IN_BILL') = (bill IS NULL))
);
-- A ledger row booked just after midnight whose bill row fell on the day
-- before is found matched there, not missing here.
CREATE INDEX reconciliation_items_row_key_idx ON reconciliation_items (row_key);

-- The day's bookings are read by time: without this index every run would scan the ledger.
CREATE INDEX payment_ledger_created_at_idx ON payment_ledger (created_at);

-- One row per reconciled date, written in the same transaction as its items:
-- the daily worker reconciles a date that has none.
CREATE TABLE reconciliation_runs (
    bill_date     date PRIMARY KEY,
    bill_rows     integer NOT NULL CONSTRAINT reconciliation_runs_rows_not_negative CHECK (bill_rows >= 0),
    reconciled_at timestamptz NOT NULL DEFAULT now()
);

-- Every mismatch is also an anomaly, kind = its class (AMOUNT_MISMATCH was one already).
ALTER TABLE anomalies DROP CONSTRAINT anomalies_kind_check;
ALTER TABLE anomalies ADD CONSTRAINT anomalies_kind_check CHECK (kind IN (
    'AMOUNT_MISMATCH', 'SUCCESS_AFTER_FAILED', 'SECOND_SUCCESS_FOR_PAID_ORDER',
    'FAILURE_AFTER_PAID', 'CALLBACK_CONFLICT', 'INSUFFICIENT_FUNDS', 'LATE_SUCCESS',
    'UNSOLICITED_PAYMENT', 'PAYMENT_REFERENCE_MISMATCH', 'STUCK_PAYMENT', 'REFUND_RESULT_CONFLICT',
    'REFUND_FAILED', 'MERCHANT_MISMATCH', 'MISSING_IN_LEDGER', 'MISSING_IN_BILL', 'STATE_MISMATCH'));
