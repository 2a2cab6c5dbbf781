UPDATE orders SET status = 'PAID', paid_at = now(), updated_at = now()
WHERE order_no = $1 AND status = 'PENDING'
