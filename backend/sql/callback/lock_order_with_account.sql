SELECT o.order_no, o.account_id, o.amount_cents, o.currency, o.status, a.balance_cents
FROM orders o JOIN accounts a ON a.account_id = o.account_id
WHERE o.order_no = $1
FOR UPDATE
