-- The callback's first statement: a duplicate answered and logged, or the
-- common case charged, all or nothing; anything else writes nothing and goes
-- to the general transaction (backend/src/charge.rs), where
-- checkout_rules::charge::decide rules. Each predicate below names the part of
-- the rule it mirrors; backend/tests/api/one_statement.rs feeds this statement
-- and the general path the same cases and compares every row they write.
WITH seen AS (
    -- The callback id is the notification's idempotency key (UNIQUE in payment_callbacks).
    SELECT body_sha256, outcome FROM payment_callbacks WHERE callback_id = $1
), logged AS (
    -- Same id, same body: a true duplicate, logged and answered here alone.
    INSERT INTO callback_deliveries (callback_id, order_no, event_type, outcome, http_status)
    SELECT $1, $2, $3, 'DUPLICATE', 200 FROM seen WHERE seen.body_sha256 = $4
), target AS (
    SELECT o.order_no, o.account_id, o.merchant_id, o.amount_cents, o.currency, p.method, p.payment_id
    FROM orders o JOIN accounts a ON a.account_id = o.account_id
         -- decide: Reference::NoAttempt never charges, so an attempt must exist.
         JOIN payment_attempts p ON p.order_no = o.order_no
    -- decide: only a payment.succeeded charges; an id seen before is never charged again.
    WHERE o.order_no = $2 AND $3 = 'payment.succeeded' AND NOT EXISTS (SELECT FROM seen)
      -- decide: (PaymentSucceeded, Pending, Matches); the amount check before it
      -- (a mismatch is an anomaly and a 422 in the general path).
      AND o.status = 'PENDING' AND o.amount_cents = $7 AND o.currency = $8
      -- Reference::Matches, first half: no merchant reference, or our payment id exactly
      -- (other spellings are left to LockedOrder::reference in the general path).
      AND ($6::text IS NULL OR p.payment_id::text = $6)
      -- Reference::Matches, second half: the platform's id not recorded yet, or this one.
      AND (p.platform_payment_id IS NULL OR p.platform_payment_id = $5)
      -- Funds::cover: a platform payment always; a wallet's spendable_cents >= amount
      -- in its common form: the order's own hold is in place (a pay holds the amount),
      -- so the account can spend it.
      AND (p.method = 'platform' OR (a.held_cents >= o.amount_cents AND a.balance_cents >= a.held_cents))
    -- The rows the general path locks first, in its order: order, then account.
    FOR UPDATE OF o, a
), claimed AS (
    -- Decision::Charge, carried out: claim the id (a concurrent claim wins, and this writes nothing) ...
    INSERT INTO payment_callbacks (callback_id, body_sha256, event_type, order_no, payment_id, outcome)
    SELECT $1, $4, $3, order_no, $5, 'CHARGED' FROM target
    ON CONFLICT (callback_id) DO NOTHING
    RETURNING order_no
), charged AS (
    -- ... the CHARGE ledger row (at most one per order, by constraint) ...
    INSERT INTO payment_ledger (callback_id, order_no, account_id, amount_cents, currency, kind, payment_id)
    SELECT $1, t.order_no, t.account_id, t.amount_cents, t.currency, 'CHARGE', $5
    FROM target t JOIN claimed c ON c.order_no = t.order_no
    RETURNING order_no, account_id, amount_cents
), transferred AS (
    -- ... the same charge in the books: from the wallet, posting the hold made at
    -- pay, or from the platform's clearing account, to the order's merchant ...
    INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency, kind, pending_id, order_no)
    SELECT 'charge:' || $1,
           CASE WHEN t.method = 'wallet' THEN t.account_id ELSE ledger_account('CLEARING', 'platform', t.currency) END,
           ledger_account('MERCHANT', t.merchant_id::text, t.currency), t.amount_cents, t.currency, 'CHARGE',
           CASE WHEN t.method = 'wallet' THEN 'hold:' || t.payment_id END, t.order_no
    FROM target t JOIN charged c ON c.order_no = t.order_no
    RETURNING transfer_id
), wallet AS (
    -- (the charge of a wallet payment; a platform payment deducts nothing)
    SELECT c.account_id, c.amount_cents FROM charged c JOIN target t ON t.order_no = c.order_no
    WHERE t.method = 'wallet'
), paid AS (
    -- ... PENDING -> PAID, conditional as every status change is ...
    UPDATE orders o SET status = 'PAID', paid_at = now(), updated_at = now()
    FROM charged c WHERE o.order_no = c.order_no AND o.status = 'PENDING'
    RETURNING o.order_no
), deducted AS (
    -- ... for a wallet payment, the balance charged and the hold captured ...
    UPDATE accounts a SET balance_cents = a.balance_cents - w.amount_cents, held_cents = a.held_cents - w.amount_cents
    FROM wallet w WHERE a.account_id = w.account_id
    RETURNING a.account_id
), settled AS (
    -- ... the open attempt settled, learning the platform's id ...
    UPDATE payment_attempts p SET status = 'SUCCEEDED', platform_payment_id = coalesce(p.platform_payment_id, $5)
    FROM charged c WHERE p.order_no = c.order_no AND p.status IN ('CREATED', 'SUBMITTED', 'UNKNOWN')
), delivered AS (
    -- ... and the delivery logged.
    INSERT INTO callback_deliveries (callback_id, order_no, event_type, outcome, http_status)
    SELECT $1, order_no, $3, 'CHARGED', 200 FROM charged
)
SELECT (SELECT body_sha256 FROM seen) AS seen_body_sha256,
       (SELECT outcome FROM seen) AS "seen_outcome: CallbackOutcome",
       -- All or nothing: a ledger row without its status change and deduction fails the statement.
       checkout_assert((SELECT count(*) FROM paid) = (SELECT count(*) FROM charged)
                       AND (SELECT count(*) FROM transferred) = (SELECT count(*) FROM charged)
                       AND (SELECT count(*) FROM deducted) = (SELECT count(*) FROM wallet),
                       'a charged callback left its order or balance unchanged')
       AND EXISTS (SELECT FROM charged) AS "charged!"
