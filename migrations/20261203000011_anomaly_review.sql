-- Operations (issue: metrics, an operator console, reconciliation): an anomaly
-- is resolved by a person with a note; who and when are kept, and nothing is
-- ever deleted. The database holds the rules, whatever the code does:
-- - the three resolution columns are set together, once;
-- - a resolved anomaly cannot be changed again, and no anomaly can be deleted;
-- - only the resolution columns may change at all (what was found stays as found).
ALTER TABLE anomalies
    ADD COLUMN resolved_at timestamptz,
    ADD COLUMN resolved_by text CONSTRAINT anomalies_resolved_by_length CHECK (length(resolved_by) BETWEEN 1 AND 64),
    ADD COLUMN resolution_note text CONSTRAINT anomalies_resolution_note_length CHECK (length(resolution_note) BETWEEN 1 AND 2000),
    ADD CONSTRAINT anomalies_resolution_complete CHECK (
        (resolved_at IS NULL) = (resolved_by IS NULL) AND (resolved_at IS NULL) = (resolution_note IS NULL));

CREATE INDEX anomalies_open_idx ON anomalies (anomaly_id) WHERE resolved_at IS NULL;
CREATE INDEX anomalies_order_idx ON anomalies (order_no);

CREATE FUNCTION anomalies_review_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'anomaly % cannot be deleted: resolve it with a note', OLD.anomaly_id
            USING ERRCODE = 'check_violation';
    END IF;
    IF OLD.resolved_at IS NOT NULL THEN
        RAISE EXCEPTION 'anomaly % was resolved at % by %: it cannot change again',
            OLD.anomaly_id, OLD.resolved_at, OLD.resolved_by
            USING ERRCODE = 'check_violation';
    END IF;
    IF (NEW.anomaly_id, NEW.callback_id, NEW.order_no, NEW.kind, NEW.details, NEW.created_at)
        IS DISTINCT FROM (OLD.anomaly_id, OLD.callback_id, OLD.order_no, OLD.kind, OLD.details, OLD.created_at) THEN
        RAISE EXCEPTION 'anomaly %: only its resolution can be written', OLD.anomaly_id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER anomalies_review_only
    BEFORE UPDATE OR DELETE ON anomalies
    FOR EACH ROW EXECUTE FUNCTION anomalies_review_only();

-- The console's last-hour picture reads deliveries and attempts by time.
CREATE INDEX callback_deliveries_received_idx ON callback_deliveries (received_at);
CREATE INDEX payment_attempts_created_idx ON payment_attempts (created_at);
