UPDATE accounts SET balance_cents = balance_cents - $2, held_cents = held_cents - $3
WHERE account_id = $1 AND held_cents >= $3 AND balance_cents - $2 >= held_cents - $3
