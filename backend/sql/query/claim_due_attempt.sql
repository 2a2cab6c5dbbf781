WITH due AS (
    (SELECT payment_id, next_query_at AS due_at FROM payment_attempts
     WHERE status IN ('CREATED', 'SUBMITTED', 'UNKNOWN')
       AND next_query_at IS NOT NULL AND next_query_at <= now()
     ORDER BY next_query_at LIMIT $2)
    UNION ALL
    (SELECT payment_id, coalesce(submitted_at, created_at) + make_interval(secs => $1) FROM payment_attempts
     WHERE status IN ('CREATED', 'SUBMITTED', 'UNKNOWN') AND next_query_at IS NULL
       AND coalesce(submitted_at, created_at) <= now() - make_interval(secs => $1)
     ORDER BY coalesce(submitted_at, created_at) LIMIT $2)
)
SELECT o.order_no, p.payment_id, p.platform_payment_id AS "platform_payment_id: PlatformPaymentId",
       p.status AS "status: AttemptStatus", o.account_id,
       CASE WHEN p.method = 'wallet' THEN o.amount_cents ELSE 0 END AS "hold_cents!"
FROM due JOIN payment_attempts p ON p.payment_id = due.payment_id
     JOIN orders o ON o.order_no = p.order_no
WHERE p.status IN ('CREATED', 'SUBMITTED', 'UNKNOWN') AND o.status = 'PENDING'
ORDER BY due.due_at
LIMIT 1
FOR UPDATE OF o SKIP LOCKED
