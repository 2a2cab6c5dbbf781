-- The way back to the merchant's shop (issue 42): where the payment page sends
-- the shopper once the order is final (`return_url`, with `order_no` and the
-- status appended) or when they give up (`cancel_url`). The backend accepts
-- only URLs whose origin is one of the merchant's `return_origins`
-- (checkout_rules::return_url); the page can reach no other URL.
ALTER TABLE orders ADD COLUMN return_url text
    CONSTRAINT orders_return_url_length CHECK (char_length(return_url) BETWEEN 1 AND 2048);
ALTER TABLE orders ADD COLUMN cancel_url text
    CONSTRAINT orders_cancel_url_length CHECK (char_length(cancel_url) BETWEEN 1 AND 2048);
