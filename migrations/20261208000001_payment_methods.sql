-- Two payment methods (issue 41). `wallet`: the shopper's stored-value account
-- pays, as every payment did until now: pay holds the amount, the platform's
-- success deducts it once. `platform`: WeChat Pay, Alipay, the remote platform
-- or the sandbox's simulated one takes the money from the shopper's own account:
-- nothing is held, no balance is needed, and the success deducts nothing.
--
-- The method belongs to the order's one payment attempt (UNIQUE order_no), so
-- it is fixed once the attempt exists. Every attempt made before this change
-- held and deducted the wallet: they are 'wallet'.
ALTER TABLE payment_attempts ADD COLUMN method text NOT NULL DEFAULT 'wallet'
    CONSTRAINT payment_attempts_method_known CHECK (method IN ('wallet', 'platform'));
-- Every attempt names its method from now on: the default is only for the rows above.
ALTER TABLE payment_attempts ALTER COLUMN method DROP DEFAULT;
