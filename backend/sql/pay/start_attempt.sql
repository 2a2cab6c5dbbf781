-- Pay's common case in one statement: the attempt inserted and, for a wallet
-- payment ($8 = 'wallet'), the amount held, all or nothing, when every check of pay's general transaction
-- (backend::pay::start_attempt_in_tx) would pass; otherwise nothing is written
-- and the general transaction says why. backend/tests/api/pay_one_statement.rs
-- feeds both the same cases and compares what they write.
WITH target AS (
    SELECT o.order_no, o.account_id, o.merchant_id, o.amount_cents, o.currency
    FROM orders o JOIN accounts a ON a.account_id = o.account_id
    -- pay::ensure_payable: PENDING and not past its expiry.
    WHERE o.order_no = $3 AND o.status = 'PENDING' AND o.expires_at > $7
      -- The order as the token was issued for it (else TOKEN_INVALID: "the order changed").
      AND o.amount_cents = $4 AND o.currency = $5
      -- No attempt yet (else the submit joins the one a concurrent submit made).
      AND NOT EXISTS (SELECT FROM payment_attempts p WHERE p.order_no = o.order_no)
      -- A wallet payment: available money covers the amount (else INSUFFICIENT_FUNDS):
      -- what is held for the shopper's other payments in flight cannot be promised
      -- again. A platform payment needs no money of ours.
      AND ($8 = 'platform' OR a.balance_cents - a.held_cents >= o.amount_cents)
    -- The rows the general path locks: order, then account.
    FOR UPDATE OF o, a
), attempt AS (
    -- UNIQUE request token and UNIQUE order: a token used before inserts nothing here,
    -- and the general path's insert names the constraint.
    INSERT INTO payment_attempts (payment_id, request_token, order_no, amount_cents, currency, method, response_status, response_body)
    SELECT $1, $2, order_no, amount_cents, currency, $8, 202, $6 FROM target
    ON CONFLICT DO NOTHING
    RETURNING payment_id, request_token, order_no, amount_cents, currency, method, response_status, response_body, submitted_at
), held AS (
    -- The hold, with a wallet attempt: the pay that wins holds the money.
    UPDATE accounts a SET held_cents = a.held_cents + t.amount_cents
    FROM target t JOIN attempt n ON n.order_no = t.order_no
    WHERE a.account_id = t.account_id AND n.method = 'wallet'
    RETURNING a.account_id
), booked AS (
    -- ... and the same hold in the books: pending, from the wallet to the order's merchant.
    INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency, kind, order_no)
    SELECT 'hold:' || n.payment_id, t.account_id, ledger_account('MERCHANT', t.merchant_id::text, t.currency),
           t.amount_cents, t.currency, 'HOLD', t.order_no
    FROM target t JOIN attempt n ON n.order_no = t.order_no
    WHERE n.method = 'wallet'
    RETURNING transfer_id
)
SELECT payment_id AS "payment_id!", request_token AS "request_token!", order_no AS "order_no!",
       amount_cents AS "amount_cents!", currency AS "currency!: Currency", method AS "method!: PaymentMethod",
       response_status AS "response_status!",
       response_body AS "response_body!", submitted_at
FROM attempt
WHERE checkout_assert((SELECT count(*) FROM held) = (SELECT count(*) FROM attempt WHERE method = 'wallet')
                      AND (SELECT count(*) FROM booked) = (SELECT count(*) FROM held),
                      'a new wallet payment attempt left its hold unmade')
