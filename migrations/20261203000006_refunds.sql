-- Refunds, exactly once (issue: refunds).
--
-- refunds: one row per refund number. Its amount is reserved on the order
-- while PENDING (orders.refund_reserved_cents) and booked when it SUCCEEDS
-- (orders.refunded_cents, a REFUND ledger row, the account credited). The
-- CHECKs keep refunded <= reserved <= the charge, so no interleaving of
-- refund requests can give back more than was taken, whatever the code does.

ALTER TABLE orders ADD COLUMN refund_reserved_cents bigint NOT NULL DEFAULT 0;
ALTER TABLE orders ADD COLUMN refunded_cents bigint NOT NULL DEFAULT 0;
ALTER TABLE orders ADD CONSTRAINT orders_refunds_within_charge
    CHECK (0 <= refunded_cents AND refunded_cents <= refund_reserved_cents
           AND refund_reserved_cents <= amount_cents);
ALTER TABLE orders ADD CONSTRAINT orders_refunds_only_when_paid
    CHECK (refund_reserved_cents = 0 OR status IN ('PAID', 'REFUNDED'));

ALTER TABLE orders DROP CONSTRAINT orders_status_known;
ALTER TABLE orders ADD CONSTRAINT orders_status_known CHECK (status IN ('PENDING', 'PAID', 'FAILED', 'CLOSED', 'REFUNDED'));
ALTER TABLE orders DROP CONSTRAINT orders_paid_at_iff_paid;
ALTER TABLE orders ADD CONSTRAINT orders_paid_at_iff_paid CHECK ((status IN ('PAID', 'REFUNDED')) = (paid_at IS NOT NULL));
ALTER TABLE orders ADD CONSTRAINT orders_refunded_iff_all_given_back
    CHECK ((status = 'REFUNDED') = (refunded_cents = amount_cents AND status <> 'PENDING' AND refunded_cents > 0));

CREATE OR REPLACE FUNCTION orders_status_transition_guard() RETURNS trigger AS $$
BEGIN
    IF NEW.status IS DISTINCT FROM OLD.status
       AND NOT (OLD.status = 'PENDING' AND NEW.status IN ('PAID', 'FAILED', 'CLOSED'))
       AND NOT (OLD.status = 'PAID' AND NEW.status = 'REFUNDED') THEN
        RAISE EXCEPTION 'order % may not move from % to %', OLD.order_no, OLD.status, NEW.status
            USING ERRCODE = 'check_violation', CONSTRAINT = 'orders_status_transition';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TABLE refunds (
    refund_no          text PRIMARY KEY,
    order_no           text NOT NULL REFERENCES orders (order_no),
    amount_cents       bigint NOT NULL CONSTRAINT refunds_amount_positive CHECK (amount_cents > 0),
    currency           text NOT NULL,
    reason             text NOT NULL,
    status             text NOT NULL DEFAULT 'PENDING'
                       CONSTRAINT refunds_status_known CHECK (status IN ('PENDING', 'SUCCEEDED', 'FAILED')),
    -- The platform payment refunded, and the platform's id for the refund once known.
    platform_payment_id text NOT NULL,
    platform_refund_id  text,
    -- Who asked: 'merchant' or 'operator'.
    requested_by       text NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    -- Set once the platform accepted it; NULL rows are handed over again.
    submitted_at       timestamptz,
    settled_at         timestamptz,
    CONSTRAINT refunds_settled_iff_final CHECK ((status = 'PENDING') = (settled_at IS NULL))
);
CREATE INDEX refunds_order_idx ON refunds (order_no, created_at);
CREATE INDEX refunds_unsubmitted_idx ON refunds (created_at) WHERE submitted_at IS NULL AND status = 'PENDING';

CREATE FUNCTION refunds_status_transition_guard() RETURNS trigger AS $$
BEGIN
    IF NEW.status IS DISTINCT FROM OLD.status
       AND NOT (OLD.status = 'PENDING' AND NEW.status IN ('SUCCEEDED', 'FAILED')) THEN
        RAISE EXCEPTION 'refund % may not move from % to %', OLD.refund_no, OLD.status, NEW.status
            USING ERRCODE = 'check_violation', CONSTRAINT = 'refunds_status_transition';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER refunds_status_transition
    BEFORE UPDATE OF status ON refunds
    FOR EACH ROW EXECUTE FUNCTION refunds_status_transition_guard();

-- The ledger: a REFUND row per refund number, at most one.
ALTER TABLE payment_ledger ADD COLUMN refund_no text REFERENCES refunds (refund_no);
ALTER TABLE payment_ledger DROP CONSTRAINT payment_ledger_kind_known;
ALTER TABLE payment_ledger ADD CONSTRAINT payment_ledger_kind_known CHECK (kind IN ('CHARGE', 'REFUND'));
ALTER TABLE payment_ledger ADD CONSTRAINT payment_ledger_refund_no_iff_refund
    CHECK ((kind = 'REFUND') = (refund_no IS NOT NULL));
CREATE UNIQUE INDEX payment_ledger_one_row_per_refund ON payment_ledger (refund_no) WHERE kind = 'REFUND';

-- Refund results arrive on the callback endpoint.
ALTER TABLE payment_callbacks DROP CONSTRAINT payment_callbacks_event_type_check;
ALTER TABLE payment_callbacks ADD CONSTRAINT payment_callbacks_event_type_check CHECK (event_type IN (
    'payment.succeeded', 'payment.failed', 'refund.succeeded', 'refund.failed'));

ALTER TABLE anomalies DROP CONSTRAINT anomalies_kind_check;
ALTER TABLE anomalies ADD CONSTRAINT anomalies_kind_check CHECK (kind IN (
    'AMOUNT_MISMATCH', 'SUCCESS_AFTER_FAILED', 'SECOND_SUCCESS_FOR_PAID_ORDER',
    'FAILURE_AFTER_PAID', 'CALLBACK_CONFLICT', 'INSUFFICIENT_FUNDS', 'LATE_SUCCESS',
    'UNSOLICITED_PAYMENT', 'PAYMENT_REFERENCE_MISMATCH', 'STUCK_PAYMENT', 'REFUND_RESULT_CONFLICT'));
