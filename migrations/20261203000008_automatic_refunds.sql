-- Automatic refunds (issue: refunds): a success the checkout cannot book
-- (after CLOSED or FAILED, a second payment for a PAID order, a payment we
-- never asked for, one too large for the balance) starts a full refund of
-- that platform payment, exactly once, keyed by the platform's payment id.
-- The money never entered our books, so such a refund reserves nothing on the
-- order, writes no REFUND ledger row and credits no account: the platform
-- gives it back to where it came from.

ALTER TABLE refunds ADD CONSTRAINT refunds_requested_by_known
    CHECK (requested_by IN ('merchant', 'operator', 'automatic'));

-- The callback (or query answer) whose success could not be booked: the
-- evidence every automatic refund points at, and only those.
ALTER TABLE refunds ADD COLUMN cause_callback_id text REFERENCES payment_callbacks (callback_id);
ALTER TABLE refunds ADD CONSTRAINT refunds_automatic_iff_cause
    CHECK ((requested_by = 'automatic') = (cause_callback_id IS NOT NULL));

-- However often the unbookable success is delivered or queried, one refund of it.
CREATE UNIQUE INDEX refunds_one_automatic_per_platform_payment
    ON refunds (platform_payment_id) WHERE requested_by = 'automatic';

-- Why a refund failed when the platform refused it outright at hand-over.
ALTER TABLE refunds ADD COLUMN failure_reason text;
ALTER TABLE refunds ADD CONSTRAINT refunds_failure_reason_only_when_failed
    CHECK (failure_reason IS NULL OR status = 'FAILED');

ALTER TABLE anomalies DROP CONSTRAINT anomalies_kind_check;
ALTER TABLE anomalies ADD CONSTRAINT anomalies_kind_check CHECK (kind IN (
    'AMOUNT_MISMATCH', 'SUCCESS_AFTER_FAILED', 'SECOND_SUCCESS_FOR_PAID_ORDER',
    'FAILURE_AFTER_PAID', 'CALLBACK_CONFLICT', 'INSUFFICIENT_FUNDS', 'LATE_SUCCESS',
    'UNSOLICITED_PAYMENT', 'PAYMENT_REFERENCE_MISMATCH', 'STUCK_PAYMENT', 'REFUND_RESULT_CONFLICT',
    'REFUND_FAILED'));
