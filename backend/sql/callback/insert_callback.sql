INSERT INTO payment_callbacks (callback_id, body_sha256, event_type, order_no, payment_id, outcome)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (callback_id) DO NOTHING
