SELECT o.order_no, o.account_id, o.amount_cents, o.currency, o.status, a.balance_cents, a.held_cents,
       CASE WHEN o.status = 'PENDING' AND EXISTS (SELECT 1 FROM payment_attempts p WHERE p.order_no = o.order_no)
            THEN o.amount_cents ELSE 0 END AS hold_cents,
       o.expires_at
FROM orders o JOIN accounts a ON a.account_id = o.account_id
WHERE o.order_no = $1
FOR UPDATE OF o, a
