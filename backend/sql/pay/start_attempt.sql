WITH target AS (
    SELECT o.order_no, o.account_id, o.amount_cents, o.currency
    FROM orders o JOIN accounts a ON a.account_id = o.account_id
    WHERE o.order_no = $3 AND o.status = 'PENDING' AND o.expires_at > $7
      AND o.amount_cents = $4 AND o.currency = $5
      AND NOT EXISTS (SELECT FROM payment_attempts p WHERE p.order_no = o.order_no)
      AND a.balance_cents - a.held_cents >= o.amount_cents
    FOR UPDATE OF o, a
), attempt AS (
    INSERT INTO payment_attempts (payment_id, request_token, order_no, amount_cents, currency, response_status, response_body)
    SELECT $1, $2, order_no, amount_cents, currency, 202, $6 FROM target
    ON CONFLICT DO NOTHING
    RETURNING payment_id, request_token, order_no, amount_cents, currency, response_status, response_body, submitted_at
), held AS (
    UPDATE accounts a SET held_cents = a.held_cents + t.amount_cents
    FROM target t JOIN attempt n ON n.order_no = t.order_no
    WHERE a.account_id = t.account_id
    RETURNING a.account_id
)
SELECT payment_id AS "payment_id!", request_token AS "request_token!", order_no AS "order_no!",
       amount_cents AS "amount_cents!", currency AS "currency!: Currency", response_status AS "response_status!",
       response_body AS "response_body!", submitted_at
FROM attempt
WHERE checkout_assert((SELECT count(*) FROM held) = (SELECT count(*) FROM attempt),
                      'a new payment attempt left its hold unmade')
