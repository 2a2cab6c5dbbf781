-- Callback integrity and the active query (issue: the payment lifecycle).
--
-- payment_attempts.platform_payment_id: the platform's id for the payment,
-- recorded when the platform accepts the hand-over (or learned from the first
-- result that names our payment). A success must name the attempt: by our
-- payment id (the merchant reference) and, once recorded, by this id.
ALTER TABLE payment_attempts ADD COLUMN platform_payment_id text;

-- The active query: how often the platform was asked about an attempt with no
-- result, and when to ask next (NULL: QUERY_AFTER_SECS after the hand-over).
ALTER TABLE payment_attempts ADD COLUMN queries integer NOT NULL DEFAULT 0
    CONSTRAINT payment_attempts_queries_not_negative CHECK (queries >= 0);
ALTER TABLE payment_attempts ADD COLUMN next_query_at timestamptz;

ALTER TABLE anomalies DROP CONSTRAINT anomalies_kind_check;
ALTER TABLE anomalies ADD CONSTRAINT anomalies_kind_check CHECK (kind IN (
    'AMOUNT_MISMATCH', 'SUCCESS_AFTER_FAILED', 'SECOND_SUCCESS_FOR_PAID_ORDER',
    'FAILURE_AFTER_PAID', 'CALLBACK_CONFLICT', 'INSUFFICIENT_FUNDS', 'LATE_SUCCESS',
    'UNSOLICITED_PAYMENT', 'PAYMENT_REFERENCE_MISMATCH', 'STUCK_PAYMENT'));
