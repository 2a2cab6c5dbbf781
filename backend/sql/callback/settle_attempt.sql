UPDATE payment_attempts SET status = $2
WHERE order_no = $1 AND status IN ('CREATED', 'SUBMITTED', 'UNKNOWN')
