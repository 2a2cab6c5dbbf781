-- Payment attempts get their own state machine (api-types/src/attempt.rs):
-- CREATED -> SUBMITTED | UNKNOWN -> SUCCEEDED | FAILED | CLOSED. A hand-over
-- whose answer was lost is UNKNOWN, never FAILED: it is sent again with the
-- same idempotency key until the platform's answer settles it.
ALTER TABLE payment_attempts ADD COLUMN status text NOT NULL DEFAULT 'CREATED'
    CONSTRAINT payment_attempts_status_known
    CHECK (status IN ('CREATED', 'SUBMITTED', 'UNKNOWN', 'SUCCEEDED', 'FAILED', 'CLOSED'));

UPDATE payment_attempts p SET status = CASE
        WHEN o.status = 'PAID' THEN 'SUCCEEDED'
        WHEN o.status = 'FAILED' THEN 'FAILED'
        WHEN p.submitted_at IS NOT NULL THEN 'SUBMITTED'
        ELSE 'CREATED' END
FROM orders o WHERE o.order_no = p.order_no;

-- The database's copy of AttemptStatus::can_transition_to.
CREATE FUNCTION payment_attempts_status_transition_guard() RETURNS trigger AS $$
BEGIN
    IF NEW.status IS DISTINCT FROM OLD.status AND NOT (
           (OLD.status = 'CREATED' AND NEW.status <> 'CREATED')
        OR (OLD.status = 'SUBMITTED' AND NEW.status NOT IN ('CREATED', 'SUBMITTED'))
        OR (OLD.status = 'UNKNOWN' AND NEW.status NOT IN ('CREATED', 'UNKNOWN'))) THEN
        RAISE EXCEPTION 'payment attempt % may not move from % to %', OLD.payment_id, OLD.status, NEW.status
            USING ERRCODE = 'check_violation', CONSTRAINT = 'payment_attempts_status_transition';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER payment_attempts_status_transition
    BEFORE UPDATE OF status ON payment_attempts
    FOR EACH ROW EXECUTE FUNCTION payment_attempts_status_transition_guard();

CREATE INDEX payment_attempts_open_idx ON payment_attempts (created_at)
    WHERE status IN ('CREATED', 'SUBMITTED', 'UNKNOWN');
