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
WHERE p.payment_id = h.payment_id AND p.submitted_at IS NULL
  AND set_config('synchronous_commit', 'off', true) IS NOT NULL
