WITH seen AS (
    SELECT body_sha256, outcome FROM payment_callbacks WHERE callback_id = $1
), logged AS (
    INSERT INTO callback_deliveries (callback_id, order_no, event_type, outcome, http_status)
    SELECT $1, $2, $3, 'DUPLICATE', 200 FROM seen WHERE seen.body_sha256 = $4
), target AS (
    SELECT o.order_no, o.account_id, o.amount_cents, o.currency
    FROM orders o JOIN accounts a ON a.account_id = o.account_id
         JOIN payment_attempts p ON p.order_no = o.order_no
    WHERE o.order_no = $2 AND $3 = 'payment.succeeded' AND NOT EXISTS (SELECT FROM seen)
      AND o.status = 'PENDING' AND o.amount_cents = $7 AND o.currency = $8
      AND ($6::text IS NULL OR p.payment_id::text = $6)
      AND (p.platform_payment_id IS NULL OR p.platform_payment_id = $5)
      AND a.held_cents >= o.amount_cents AND a.balance_cents >= a.held_cents
    FOR UPDATE OF o, a
), claimed AS (
    INSERT INTO payment_callbacks (callback_id, body_sha256, event_type, order_no, payment_id, outcome)
    SELECT $1, $4, $3, order_no, $5, 'CHARGED' FROM target
    ON CONFLICT (callback_id) DO NOTHING
    RETURNING order_no
), charged AS (
    INSERT INTO payment_ledger (callback_id, order_no, account_id, amount_cents, currency, kind, payment_id)
    SELECT $1, t.order_no, t.account_id, t.amount_cents, t.currency, 'CHARGE', $5
    FROM target t JOIN claimed c ON c.order_no = t.order_no
    RETURNING order_no, account_id, amount_cents
), paid AS (
    UPDATE orders o SET status = 'PAID', paid_at = now(), updated_at = now()
    FROM charged c WHERE o.order_no = c.order_no AND o.status = 'PENDING'
    RETURNING o.order_no
), deducted AS (
    UPDATE accounts a SET balance_cents = a.balance_cents - c.amount_cents, held_cents = a.held_cents - c.amount_cents
    FROM charged c WHERE a.account_id = c.account_id
    RETURNING a.account_id
), settled AS (
    UPDATE payment_attempts p SET status = 'SUCCEEDED', platform_payment_id = coalesce(p.platform_payment_id, $5)
    FROM charged c WHERE p.order_no = c.order_no AND p.status IN ('CREATED', 'SUBMITTED', 'UNKNOWN')
), delivered AS (
    INSERT INTO callback_deliveries (callback_id, order_no, event_type, outcome, http_status)
    SELECT $1, order_no, $3, 'CHARGED', 200 FROM charged
)
SELECT (SELECT body_sha256 FROM seen) AS seen_body_sha256,
       (SELECT outcome FROM seen) AS "seen_outcome: CallbackOutcome",
       checkout_assert((SELECT count(*) FROM paid) = (SELECT count(*) FROM charged)
                       AND (SELECT count(*) FROM deducted) = (SELECT count(*) FROM charged),
                       'a charged callback left its order or balance unchanged')
       AND EXISTS (SELECT FROM charged) AS "charged!"
