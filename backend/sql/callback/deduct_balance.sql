UPDATE accounts SET balance_cents = balance_cents - $2
WHERE account_id = $1 AND balance_cents >= $2
