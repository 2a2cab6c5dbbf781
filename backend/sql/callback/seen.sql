WITH seen AS (
    SELECT callback_id, body_sha256, outcome FROM payment_callbacks WHERE callback_id = $1
), logged AS (
    INSERT INTO callback_deliveries (callback_id, order_no, event_type, outcome, http_status)
    SELECT $1, $2, $3, 'DUPLICATE', 200 FROM seen WHERE seen.body_sha256 = $4
)
SELECT callback_id, body_sha256, outcome AS "outcome: CallbackOutcome" FROM seen
