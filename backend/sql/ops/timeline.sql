-- Everything that happened to order $1, oldest first (ties in the order the
-- branches are written): the console's order timeline (backend/src/db/review.rs).
-- Titles carry no amounts: an event whose details have amount_cents and
-- currency gets the amount written in major units after its title, in Rust
-- (review::events), never as minor units beside a currency.
SELECT at AS "at!", kind AS "kind!", title AS "title!", details AS "details!"
FROM (
    SELECT o.created_at AS at, 'order_placed' AS kind, 0 AS seq,
           'order placed' AS title,
           jsonb_build_object('amount_cents', o.amount_cents, 'currency', o.currency,
                              'description', o.description, 'expires_at', o.expires_at) AS details
    FROM orders o WHERE o.order_no = $1
    UNION ALL
    SELECT t.issued_at, 'token_issued', 1, 'request token issued (page loaded)',
           jsonb_build_object('expires_at', t.expires_at)
    FROM request_tokens_issued t WHERE t.order_no = $1
    UNION ALL
    SELECT a.created_at, 'attempt_created', 2,
           format('payment %s created by the winning pay', a.payment_id),
           jsonb_build_object('payment_id', a.payment_id, 'amount_cents', a.amount_cents,
                              'currency', a.currency, 'status_now', a.status)
    FROM payment_attempts a WHERE a.order_no = $1
    UNION ALL
    SELECT a.submitted_at, 'attempt_submitted', 3,
           format('handed to the platform (%s)', coalesce(a.platform_payment_id, 'no platform id yet')),
           jsonb_build_object('payment_id', a.payment_id, 'platform_payment_id', a.platform_payment_id,
                              'status_now', a.status, 'queries_so_far', a.queries,
                              'next_query_at', a.next_query_at)
    FROM payment_attempts a WHERE a.order_no = $1 AND a.submitted_at IS NOT NULL
    UNION ALL
    SELECT d.received_at,
           CASE WHEN d.callback_id LIKE 'query:%' THEN 'query' ELSE 'delivery' END, 4,
           format('%s %s: %s, answered %s',
                  CASE WHEN d.callback_id LIKE 'query:%' THEN 'query answer' ELSE 'delivery of' END,
                  d.callback_id, d.outcome, d.http_status),
           jsonb_build_object('callback_id', d.callback_id, 'event_type', d.event_type,
                              'outcome', d.outcome, 'http_status', d.http_status)
    FROM callback_deliveries d WHERE d.order_no = $1
    UNION ALL
    SELECT l.created_at, 'ledger', 5,
           format('ledger %s', l.kind),
           jsonb_build_object('entry_id', l.entry_id, 'kind', l.kind, 'amount_cents', l.amount_cents,
                              'currency', l.currency, 'callback_id', l.callback_id,
                              'payment_id', l.payment_id, 'refund_no', l.refund_no)
    FROM payment_ledger l WHERE l.order_no = $1
    UNION ALL
    -- The same money in the books: each transfer as its debit/credit pair.
    SELECT t.created_at, 'ledger', 5,
           -- A merchant's account by its merchant's name.
           format('transfer %s: debit %s %s, credit %s %s', t.kind,
                  d.kind, coalesce((SELECT m.name FROM merchants m WHERE d.kind = 'MERCHANT' AND m.merchant_id::text = d.owner), d.owner),
                  c.kind, coalesce((SELECT m.name FROM merchants m WHERE c.kind = 'MERCHANT' AND m.merchant_id::text = c.owner), c.owner)),
           jsonb_build_object('transfer_id', t.transfer_id, 'kind', t.kind, 'amount_cents', t.amount_cents,
                              'currency', t.currency, 'debit', d.kind, 'credit', c.kind,
                              'posts_or_voids', t.pending_id)
    FROM transfers t JOIN ledger_accounts d ON d.ledger_account_id = t.debit_account_id
         JOIN ledger_accounts c ON c.ledger_account_id = t.credit_account_id
    WHERE t.order_no = $1
    UNION ALL
    SELECT r.created_at, 'refund', 6,
           format('refund %s asked for by %s', r.refund_no, r.requested_by),
           jsonb_build_object('refund_no', r.refund_no, 'reason', r.reason, 'requested_by', r.requested_by,
                              'amount_cents', r.amount_cents, 'currency', r.currency)
    FROM refunds r WHERE r.order_no = $1
    UNION ALL
    SELECT r.settled_at, 'refund', 7, format('refund %s %s', r.refund_no, r.status),
           jsonb_build_object('refund_no', r.refund_no, 'status', r.status,
                              'platform_refund_id', r.platform_refund_id, 'failure_reason', r.failure_reason)
    FROM refunds r WHERE r.order_no = $1 AND r.settled_at IS NOT NULL
    UNION ALL
    SELECT n.created_at, 'anomaly', 8, format('anomaly #%s %s', n.anomaly_id, n.kind),
           jsonb_build_object('anomaly_id', n.anomaly_id, 'kind', n.kind, 'callback_id', n.callback_id,
                              'details', n.details)
    FROM anomalies n WHERE n.order_no = $1
    UNION ALL
    SELECT n.resolved_at, 'anomaly', 9, format('anomaly #%s resolved by %s', n.anomaly_id, n.resolved_by),
           jsonb_build_object('anomaly_id', n.anomaly_id, 'note', n.resolution_note)
    FROM anomalies n WHERE n.order_no = $1 AND n.resolved_at IS NOT NULL
    UNION ALL
    SELECT o.paid_at, 'order_final', 10, 'order PAID', jsonb_build_object('status', 'PAID')
    FROM orders o WHERE o.order_no = $1 AND o.paid_at IS NOT NULL
    UNION ALL
    SELECT o.updated_at, 'order_final', 11, format('order %s', o.status),
           jsonb_build_object('status', o.status, 'failure_reason', o.failure_reason)
    FROM orders o WHERE o.order_no = $1 AND o.status IN ('FAILED', 'CLOSED', 'REFUNDED')
) AS events
ORDER BY at, seq
