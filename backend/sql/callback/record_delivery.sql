INSERT INTO callback_deliveries (callback_id, order_no, event_type, outcome, http_status)
VALUES ($1, $2, $3, $4, $5)
