-- Platform connectors (issue: WeChat Pay and Alipay): a platform that is paid
-- by scanning a QR code answers the hand-over with the payment link to show
-- (WeChat Pay's `code_url`, Alipay's `qr_code`). Kept with the attempt so every
-- reload of the page shows the same code; NULL for platforms without one.
ALTER TABLE payment_attempts ADD COLUMN qr_code text
    CONSTRAINT payment_attempts_qr_code_length CHECK (length(qr_code) BETWEEN 1 AND 2048);

-- A signed notification naming another merchant or app than ours (WeChat Pay
-- `mchid`/`appid`, Alipay `app_id`): refused, and put in front of a person,
-- since only a misconfigured platform account or a leaked key can produce one.
ALTER TABLE anomalies DROP CONSTRAINT anomalies_kind_check;
ALTER TABLE anomalies ADD CONSTRAINT anomalies_kind_check CHECK (kind IN (
    'AMOUNT_MISMATCH', 'SUCCESS_AFTER_FAILED', 'SECOND_SUCCESS_FOR_PAID_ORDER',
    'FAILURE_AFTER_PAID', 'CALLBACK_CONFLICT', 'INSUFFICIENT_FUNDS', 'LATE_SUCCESS',
    'UNSOLICITED_PAYMENT', 'PAYMENT_REFERENCE_MISMATCH', 'STUCK_PAYMENT', 'REFUND_RESULT_CONFLICT',
    'REFUND_FAILED', 'MERCHANT_MISMATCH'));
