INSERT INTO callback_deliveries (callback_id, order_no, event_type, outcome, http_status)
SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::int2[])
