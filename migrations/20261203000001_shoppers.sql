-- Shoppers, ownership, a server-side catalogue and idempotency keys for placing
-- orders. Every order placed from now on belongs to a shopper; the API only ever
-- shows, tokenises or pays a shopper's own orders.

-- People who pay. Emails are unique whatever their case; the password is an
-- argon2id PHC string (never the password).
CREATE TABLE shoppers (
    shopper_id    uuid PRIMARY KEY,
    email         text NOT NULL CONSTRAINT shoppers_email_shape CHECK (email ~ '^[^@\s]+@[^@\s]+$' AND length(email) <= 254),
    password_hash text NOT NULL CONSTRAINT shoppers_password_is_argon2id CHECK (password_hash LIKE '$argon2id$%'),
    -- Made by demo mode, with a public password: nobody can sign in as one
    -- unless the backend runs in demo mode.
    demo          boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX shoppers_email_key ON shoppers (lower(email));

-- One account per shopper and currency. Accounts opened before shoppers existed
-- have no shopper and can no longer be charged through the API.
ALTER TABLE accounts ADD COLUMN shopper_id uuid REFERENCES shoppers (shopper_id);
CREATE UNIQUE INDEX accounts_one_per_shopper_and_currency ON accounts (shopper_id, currency)
    WHERE shopper_id IS NOT NULL;

-- The catalogue: prices are the server's, never the client's.
CREATE TABLE products (
    sku         text PRIMARY KEY CONSTRAINT products_sku_shape CHECK (sku ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    name        text NOT NULL CONSTRAINT products_name_length CHECK (length(name) BETWEEN 1 AND 200),
    price_cents bigint NOT NULL CONSTRAINT products_price_positive CHECK (price_cents > 0),
    currency    text NOT NULL CONSTRAINT products_currency_iso CHECK (currency ~ '^[A-Z]{3}$'),
    -- Seeded by demo mode; removed when the backend starts without it.
    demo        boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Who owns an order and what it is for. The owner is the account's shopper,
-- copied here so ownership is one indexed comparison.
ALTER TABLE orders
    ADD COLUMN shopper_id  uuid REFERENCES shoppers (shopper_id),
    ADD COLUMN description text CONSTRAINT orders_description_length CHECK (length(description) <= 500);
CREATE INDEX orders_shopper_idx ON orders (shopper_id, created_at DESC);

-- Idempotency keys of order placement (draft-ietf-httpapi-idempotency-key-header):
-- per caller (a shopper, or the merchant API), the request's fingerprint and the
-- answer it got, replayed to every retry with the same key and body. Written in
-- the same transaction as the order, so a key never outlives or precedes its order.
CREATE TABLE idempotency_keys (
    scope               text NOT NULL,
    idempotency_key     text NOT NULL CONSTRAINT idempotency_keys_key_length CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    request_fingerprint text NOT NULL,
    response_status     smallint NOT NULL,
    response_body       jsonb NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, idempotency_key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
