-- Orders expire: an order nobody paid within ORDER_TTL_SECS is CLOSED, a new
-- final state (PENDING -> CLOSED), so it can never be paid days later. A
-- success that arrives for a CLOSED order charges nothing and is flagged
-- LATE_SUCCESS for a person (refunds will turn it into an automatic refund).
ALTER TABLE orders DROP CONSTRAINT orders_status_known;
ALTER TABLE orders ADD CONSTRAINT orders_status_known CHECK (status IN ('PENDING', 'PAID', 'FAILED', 'CLOSED'));

ALTER TABLE orders ADD COLUMN expires_at timestamptz;
UPDATE orders SET expires_at = created_at + interval '30 minutes';
ALTER TABLE orders ALTER COLUMN expires_at SET NOT NULL;
CREATE INDEX orders_expiring_idx ON orders (expires_at) WHERE status = 'PENDING';

-- The database's copy of OrderStatus::can_transition_to, now with CLOSED.
CREATE OR REPLACE FUNCTION orders_status_transition_guard() RETURNS trigger AS $$
BEGIN
    IF NEW.status IS DISTINCT FROM OLD.status
       AND NOT (OLD.status = 'PENDING' AND NEW.status IN ('PAID', 'FAILED', 'CLOSED')) THEN
        RAISE EXCEPTION 'order % may not move from % to %', OLD.order_no, OLD.status, NEW.status
            USING ERRCODE = 'check_violation', CONSTRAINT = 'orders_status_transition';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

ALTER TABLE anomalies DROP CONSTRAINT anomalies_kind_check;
ALTER TABLE anomalies ADD CONSTRAINT anomalies_kind_check CHECK (kind IN (
    'AMOUNT_MISMATCH', 'SUCCESS_AFTER_FAILED', 'SECOND_SUCCESS_FOR_PAID_ORDER',
    'FAILURE_AFTER_PAID', 'CALLBACK_CONFLICT', 'INSUFFICIENT_FUNDS', 'LATE_SUCCESS'));
