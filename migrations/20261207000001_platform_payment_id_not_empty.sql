-- A platform's payment id is never empty (issue 39). WeChat Pay answers a query
-- of an unpaid order without `transaction_id`, and the backend recorded that
-- absence as '' on the attempt: the real TRANSACTION.SUCCESS then named
-- "another payment" than '', was refused as PAYMENT_REFERENCE_MISMATCH and
-- refunded automatically. The backend now carries an absent id as NULL
-- (api_types::PlatformPaymentId cannot hold ''), and these CHECKs keep '' out
-- of every column that stores a platform's payment id.
--
-- An attempt that recorded '' never learned the platform's id: NULL is what it
-- knows, and its order's real success books again (the notification also names
-- our payment in attach / passback_params). Where the old code had already
-- refunded that success automatically, the order has its
-- PAYMENT_REFERENCE_MISMATCH anomaly and its automatic refund: a person settles
-- it (the NOTICE below counts them), since a later query could now book the
-- refunded payment.
DO $$
DECLARE
    refunded integer;
BEGIN
    SELECT count(*) INTO refunded
    FROM payment_attempts p JOIN orders o ON o.order_no = p.order_no
    WHERE p.platform_payment_id = '' AND o.status = 'PENDING'
      AND EXISTS (SELECT 1 FROM refunds r WHERE r.order_no = p.order_no AND r.requested_by = 'automatic');
    IF refunded > 0 THEN
        RAISE NOTICE '% PENDING order(s) had an empty platform payment id and an automatic refund: review their PAYMENT_REFERENCE_MISMATCH anomalies', refunded;
    END IF;
END $$;
UPDATE payment_attempts SET platform_payment_id = NULL WHERE platform_payment_id = '';
ALTER TABLE payment_attempts ADD CONSTRAINT payment_attempts_platform_payment_id_not_empty
    CHECK (platform_payment_id <> '');

-- The ledger and the callback record are append-only (the app may only INSERT,
-- scripts/db-roles.sql) and hold history that cannot be rewritten: their CHECKs
-- hold for every row written from now on, and are validated where no old ''
-- is left (always, on a new database). The same goes for refunds, whose
-- platform id is copied from the charge.
ALTER TABLE payment_ledger ADD CONSTRAINT payment_ledger_payment_id_not_empty
    CHECK (payment_id <> '') NOT VALID;
ALTER TABLE payment_callbacks ADD CONSTRAINT payment_callbacks_payment_id_not_empty
    CHECK (payment_id <> '') NOT VALID;
ALTER TABLE refunds ADD CONSTRAINT refunds_platform_payment_id_not_empty
    CHECK (platform_payment_id <> '') NOT VALID;
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM payment_ledger WHERE payment_id = '') THEN
        ALTER TABLE payment_ledger VALIDATE CONSTRAINT payment_ledger_payment_id_not_empty;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM payment_callbacks WHERE payment_id = '') THEN
        ALTER TABLE payment_callbacks VALIDATE CONSTRAINT payment_callbacks_payment_id_not_empty;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM refunds WHERE platform_payment_id = '') THEN
        ALTER TABLE refunds VALIDATE CONSTRAINT refunds_platform_payment_id_not_empty;
    END IF;
END $$;
