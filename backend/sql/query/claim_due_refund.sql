WITH due AS (
    (SELECT refund_no, next_query_at AS due_at FROM refunds
     WHERE status = 'PENDING' AND next_query_at IS NOT NULL AND next_query_at <= now()
     ORDER BY next_query_at LIMIT $2)
    UNION ALL
    (SELECT refund_no, coalesce(submitted_at, created_at) + make_interval(secs => $1) FROM refunds
     WHERE status = 'PENDING' AND next_query_at IS NULL
       AND coalesce(submitted_at, created_at) <= now() - make_interval(secs => $1)
     ORDER BY coalesce(submitted_at, created_at) LIMIT $2)
)
SELECT r.refund_no, r.order_no, r.platform_payment_id AS "platform_payment_id: PlatformPaymentId"
FROM due JOIN refunds r ON r.refund_no = due.refund_no
     JOIN orders o ON o.order_no = r.order_no
WHERE r.status = 'PENDING'
ORDER BY due.due_at
LIMIT 1
FOR UPDATE OF o SKIP LOCKED
