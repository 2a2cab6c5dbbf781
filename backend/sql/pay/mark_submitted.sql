-- Hand-overs the platform accepted. Committed asynchronously (synchronous_commit
-- off for this transaction only, set inside the statement): a record lost to a
-- crash of the database server leaves the attempt unsubmitted, and the
-- dispatcher hands it over again with the same idempotency key.
UPDATE payment_attempts p
SET submitted_at = now(),
    status = CASE WHEN p.status IN ('CREATED', 'UNKNOWN') THEN 'SUBMITTED' ELSE p.status END,
    platform_payment_id = coalesce(p.platform_payment_id, h.platform_payment_id),
    qr_code = coalesce(p.qr_code, h.qr_code)
FROM UNNEST($1::uuid[], $2::text[], $3::text[]) AS h (payment_id, platform_payment_id, qr_code)
-- "(submitted_at IS NULL) IS TRUE" is "submitted_at IS NULL" in a form the
-- planner does not match to payment_attempts_unsubmitted_idx: with it, each
-- batch read that whole partial index, whose entries for rows handed over
-- since the last VACUUM are dead but still there (a hand-over is not a HOT
-- update), instead of one primary-key probe per payment.
WHERE p.payment_id = h.payment_id AND (p.submitted_at IS NULL) IS TRUE
  AND set_config('synchronous_commit', 'off', true) IS NOT NULL
