INSERT INTO payment_ledger (callback_id, order_no, account_id, amount_cents, currency, kind, payment_id)
VALUES ($1, $2, $3, $4, $5, 'CHARGE', $6)
ON CONFLICT DO NOTHING
