-- The query worker claims the open attempt due for a query longest ago, once a
-- second and up to 200 times in a row while a backlog lasts. It used to filter
-- every open attempt (and sort those due) on each claim, which costs in
-- proportion to the attempts in flight, not to the few that are due: with
-- 100,000 open attempts a claim took 40-200 ms of database CPU. These two
-- indexes hold the two kinds of due time in order, so a claim reads only the
-- first few due entries of each (backend::db::attempts::claim_due_query):
-- attempts queried before are due at next_query_at; the others are due a set
-- time (QUERY_AFTER_SECS) after their hand-over, or their creation if never
-- handed over.
CREATE INDEX payment_attempts_next_query_idx ON payment_attempts (next_query_at)
    WHERE status IN ('CREATED', 'SUBMITTED', 'UNKNOWN') AND next_query_at IS NOT NULL;
CREATE INDEX payment_attempts_first_query_idx ON payment_attempts ((coalesce(submitted_at, created_at)))
    WHERE status IN ('CREATED', 'SUBMITTED', 'UNKNOWN') AND next_query_at IS NULL;
