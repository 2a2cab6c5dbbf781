-- The exactly-once core. Every guarantee below is a constraint, so it holds
-- whatever the application code, Redis or the network does.

-- Shoppers' accounts. balance_cents can never go negative: the charge
-- transaction's guarded UPDATE and this CHECK both enforce it.
CREATE TABLE accounts (
    account_id            uuid PRIMARY KEY,
    balance_cents         bigint NOT NULL CONSTRAINT accounts_balance_not_negative CHECK (balance_cents >= 0),
    -- Kept so that "opening - current = sum of charges" can be checked at any time.
    opening_balance_cents bigint NOT NULL CONSTRAINT accounts_opening_not_negative CHECK (opening_balance_cents >= 0),
    currency              text   NOT NULL CONSTRAINT accounts_currency_iso CHECK (currency ~ '^[A-Z]{3}$'),
    created_at            timestamptz NOT NULL DEFAULT now()
);

-- Orders and their state machine: PENDING -> PAID or PENDING -> FAILED only
-- (see shared/src/status.rs). The application moves them with conditional
-- updates (... WHERE status = 'PENDING'); the trigger below refuses anything else.
CREATE TABLE orders (
    order_no       text PRIMARY KEY,
    account_id     uuid NOT NULL REFERENCES accounts (account_id),
    amount_cents   bigint NOT NULL CONSTRAINT orders_amount_positive CHECK (amount_cents > 0),
    currency       text NOT NULL CONSTRAINT orders_currency_iso CHECK (currency ~ '^[A-Z]{3}$'),
    status         text NOT NULL DEFAULT 'PENDING'
                   CONSTRAINT orders_status_known CHECK (status IN ('PENDING', 'PAID', 'FAILED')),
    failure_reason text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    paid_at        timestamptz,
    CONSTRAINT orders_paid_at_iff_paid CHECK ((status = 'PAID') = (paid_at IS NOT NULL)),
    CONSTRAINT orders_reason_iff_failed CHECK ((status = 'FAILED') = (failure_reason IS NOT NULL))
);
CREATE INDEX orders_account_idx ON orders (account_id, created_at DESC);

-- The database's copy of the state machine: a last line of defence against a
-- bad UPDATE written by hand or by a future bug.
CREATE FUNCTION orders_status_transition_guard() RETURNS trigger AS $$
BEGIN
    IF NEW.status IS DISTINCT FROM OLD.status
       AND NOT (OLD.status = 'PENDING' AND NEW.status IN ('PAID', 'FAILED')) THEN
        RAISE EXCEPTION 'order % may not move from % to %', OLD.order_no, OLD.status, NEW.status
            USING ERRCODE = 'check_violation', CONSTRAINT = 'orders_status_transition';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER orders_status_transition
    BEFORE UPDATE OF status ON orders
    FOR EACH ROW EXECUTE FUNCTION orders_status_transition_guard();

-- One row per request token the API handed out; lets a person (and the page's
-- tests) see how many tokens a page load asked for. Not part of any guarantee.
CREATE TABLE request_tokens_issued (
    request_token uuid PRIMARY KEY,
    order_no      text NOT NULL REFERENCES orders (order_no),
    issued_at     timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL
);
CREATE INDEX request_tokens_issued_order_idx ON request_tokens_issued (order_no);

-- The database floor for "Pay now": one attempt per request token (a replayed
-- token finds its answer here even when Redis lost everything) and one attempt
-- per order (a second page with a second token joins the first attempt).
CREATE TABLE payment_attempts (
    payment_id      uuid PRIMARY KEY,
    request_token   uuid NOT NULL CONSTRAINT payment_attempts_request_token_key UNIQUE,
    order_no        text NOT NULL REFERENCES orders (order_no)
                    CONSTRAINT payment_attempts_order_no_key UNIQUE,
    amount_cents    bigint NOT NULL CHECK (amount_cents > 0),
    currency        text NOT NULL,
    -- The answer the winner got, replayed byte for byte to every later use of the token.
    response_status smallint NOT NULL,
    response_body   jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    -- Set once the payment platform accepted the payment; NULL rows are re-sent
    -- by the dispatcher after a crash (the platform call is idempotent by request token).
    submitted_at    timestamptz
);
CREATE INDEX payment_attempts_unsubmitted_idx ON payment_attempts (created_at) WHERE submitted_at IS NULL;

-- Every accepted callback id, once: the idempotency record for callbacks of
-- any type. The body hash tells a true duplicate from a conflicting reuse of an id.
CREATE TABLE payment_callbacks (
    callback_id  text PRIMARY KEY,
    body_sha256  text NOT NULL,
    event_type   text NOT NULL CHECK (event_type IN ('payment.succeeded', 'payment.failed')),
    order_no     text NOT NULL REFERENCES orders (order_no),
    payment_id   text NOT NULL,
    outcome      text NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now()
);

-- The money ledger. The floor for callbacks: a callback id can move money once
-- (UNIQUE callback_id), and an order can be charged once (partial unique index).
CREATE TABLE payment_ledger (
    entry_id     bigserial PRIMARY KEY,
    callback_id  text NOT NULL CONSTRAINT payment_ledger_callback_id_key UNIQUE,
    order_no     text NOT NULL REFERENCES orders (order_no),
    account_id   uuid NOT NULL REFERENCES accounts (account_id),
    amount_cents bigint NOT NULL CHECK (amount_cents > 0),
    currency     text NOT NULL,
    kind         text NOT NULL CONSTRAINT payment_ledger_kind_known CHECK (kind IN ('CHARGE')),
    payment_id   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX payment_ledger_one_charge_per_order ON payment_ledger (order_no) WHERE kind = 'CHARGE';
CREATE INDEX payment_ledger_account_idx ON payment_ledger (account_id, entry_id);

-- Things a person must review. At most one row per (callback, kind), so a
-- platform retrying the same odd callback for a day does not flood the queue.
CREATE TABLE anomalies (
    anomaly_id  bigserial PRIMARY KEY,
    callback_id text NOT NULL,
    order_no    text NOT NULL,
    kind        text NOT NULL CHECK (kind IN (
                    'AMOUNT_MISMATCH', 'SUCCESS_AFTER_FAILED', 'SECOND_SUCCESS_FOR_PAID_ORDER',
                    'FAILURE_AFTER_PAID', 'CALLBACK_CONFLICT', 'INSUFFICIENT_FUNDS')),
    details     jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT anomalies_once_per_callback_and_kind UNIQUE (callback_id, kind)
);

-- Every signed callback delivery we received and what we did with it, so a
-- person can answer "what happened to callback X?" (no foreign keys: a delivery
-- for an unknown order is logged too).
CREATE TABLE callback_deliveries (
    delivery_id bigserial PRIMARY KEY,
    callback_id text NOT NULL,
    order_no    text,
    event_type  text,
    outcome     text NOT NULL,
    http_status smallint NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX callback_deliveries_callback_idx ON callback_deliveries (callback_id, delivery_id);
