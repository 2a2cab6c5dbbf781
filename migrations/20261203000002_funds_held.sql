-- Funds held at pay: the winning pay transaction holds the order's amount on
-- the account, so money a payment is taking cannot be promised twice.
-- available = balance - held. A success captures the hold (balance and hold
-- both drop by the amount, with the ledger row); a failure releases it.
ALTER TABLE accounts ADD COLUMN held_cents bigint NOT NULL DEFAULT 0
    CONSTRAINT accounts_held_not_negative CHECK (held_cents >= 0);

-- What is held today: every PENDING order that has a payment attempt.
UPDATE accounts a SET held_cents = h.held
FROM (SELECT o.account_id, sum(o.amount_cents)::bigint AS held
      FROM orders o JOIN payment_attempts p ON p.order_no = o.order_no
      WHERE o.status = 'PENDING'
      GROUP BY o.account_id) h
WHERE h.account_id = a.account_id;

ALTER TABLE accounts ADD CONSTRAINT accounts_held_within_balance CHECK (held_cents <= balance_cents);
