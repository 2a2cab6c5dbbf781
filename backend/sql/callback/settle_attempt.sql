UPDATE payment_attempts SET status = $2, platform_payment_id = coalesce(platform_payment_id, $3)
WHERE order_no = $1 AND status IN ('CREATED', 'SUBMITTED', 'UNKNOWN')
