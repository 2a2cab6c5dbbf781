-- The refund query worker claims the PENDING refund due for a query longest
-- ago, as the payment query worker does (20261205000001). Its old statement
-- computed every PENDING refund's due time and sorted them on each claim, so a
-- claim cost in proportion to the refunds in flight. These two indexes hold the
-- two kinds of due time in order, so a claim reads only the first few due
-- entries of each (backend::db::refunds::claim_due_query): refunds queried
-- before are due at next_query_at; the others a set time (QUERY_AFTER_SECS)
-- after their hand-over, or their creation if never accepted.
CREATE INDEX refunds_next_query_idx ON refunds (next_query_at)
    WHERE status = 'PENDING' AND next_query_at IS NOT NULL;
CREATE INDEX refunds_first_query_idx ON refunds ((coalesce(submitted_at, created_at)))
    WHERE status = 'PENDING' AND next_query_at IS NULL;
