-- The order and its account, locked until the transaction ends, with what the
-- charge rule reads: the status, the money (balance, held, and the order's own
-- hold while its wallet payment is in flight) and the attempt's names for its
-- payment and what pays it (a platform payment holds nothing).
SELECT o.order_no, o.account_id, o.amount_cents, o.currency AS "currency: Currency",
       o.status AS "status: OrderStatus", a.balance_cents, a.held_cents,
       CASE WHEN o.status = 'PENDING' AND p.method = 'wallet' THEN o.amount_cents ELSE 0 END AS "hold_cents!",
       o.expires_at, o.refund_reserved_cents, p.payment_id AS "attempt_payment_id?",
       p.platform_payment_id AS "attempt_platform_payment_id?: PlatformPaymentId",
       p.method AS "attempt_method?: PaymentMethod"
FROM orders o JOIN accounts a ON a.account_id = o.account_id
     LEFT JOIN payment_attempts p ON p.order_no = o.order_no
WHERE o.order_no = $1
FOR UPDATE OF o, a
