-- The active query asks about refunds without a result, as it does payments:
-- how often it asked, and when to ask next (NULL: QUERY_AFTER_SECS after the hand-over).
ALTER TABLE refunds ADD COLUMN queries integer NOT NULL DEFAULT 0
    CONSTRAINT refunds_queries_not_negative CHECK (queries >= 0);
ALTER TABLE refunds ADD COLUMN next_query_at timestamptz;
CREATE INDEX refunds_pending_idx ON refunds (created_at) WHERE status = 'PENDING';
