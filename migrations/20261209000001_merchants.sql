-- Merchants as first-class users (issue 42): each merchant has its own API
-- keys (stored as keyed hashes, never in a form that authenticates), owns its
-- orders, and has its own account in the books.
--
-- The shop itself is the first merchant: it owns every order shoppers place
-- from the catalogue and every order made before merchants existed, and
-- `MERCHANT_API_KEY` (when set) is registered at start as one of its keys, so
-- a deployment with one merchant keeps working unchanged.
CREATE TABLE merchants (
    merchant_id    uuid PRIMARY KEY,
    name           text NOT NULL CONSTRAINT merchants_name_length CHECK (char_length(name) BETWEEN 1 AND 100),
    -- Where the payment page may send a shopper back to: origins only
    -- (`https://shop.example`), checked by the backend when an order names a URL.
    return_origins text[] NOT NULL DEFAULT '{}',
    created_at     timestamptz NOT NULL DEFAULT now()
);
INSERT INTO merchants (merchant_id, name) VALUES ('00000000-0000-0000-0000-000000000001', 'The shop');

-- A merchant's API keys. The key itself is shown once, at creation; kept here
-- is its HMAC-SHA256 under the server's MERCHANT_KEY_SECRET (docs/SECURITY.md
-- says why a fast keyed hash is right for a 256-bit random key) and a short
-- visible prefix for people to tell keys apart.
CREATE TABLE merchant_keys (
    prefix       text PRIMARY KEY CONSTRAINT merchant_keys_prefix_shape CHECK (prefix ~ '^(mk|env)_[0-9a-z]{8}$'),
    merchant_id  uuid NOT NULL REFERENCES merchants (merchant_id),
    key_hash     bytea NOT NULL CONSTRAINT merchant_keys_hash_once UNIQUE
                 CONSTRAINT merchant_keys_hash_length CHECK (length(key_hash) = 32),
    -- `admin`: made by POST /api/admin/merchants[/{id}/keys]; `env`: MERCHANT_API_KEY.
    source       text NOT NULL CONSTRAINT merchant_keys_source_known CHECK (source IN ('admin', 'env')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    -- Set when a newer key replaced it: valid until then (rotation without downtime).
    expires_at   timestamptz,
    -- Set when revoked: refused from then on.
    revoked_at   timestamptz,
    -- Kept to the minute, so a busy key does not write its row on every request.
    last_used_at timestamptz
);
CREATE INDEX merchant_keys_merchant_idx ON merchant_keys (merchant_id, created_at);

-- Every order belongs to a merchant; every order so far is the shop's, and
-- so is one placed without naming its merchant.
ALTER TABLE orders ADD COLUMN merchant_id uuid NOT NULL
    DEFAULT '00000000-0000-0000-0000-000000000001' REFERENCES merchants (merchant_id);
-- The merchant's own id for the order, so it can find ours by its own.
ALTER TABLE orders ADD COLUMN merchant_reference text
    CONSTRAINT orders_merchant_reference_length CHECK (char_length(merchant_reference) BETWEEN 1 AND 64);
ALTER TABLE orders ADD CONSTRAINT orders_merchant_reference_once UNIQUE (merchant_id, merchant_reference);
-- A merchant's orders, newest first (its list and its cursor).
CREATE INDEX orders_merchant_created_idx ON orders (merchant_id, created_at DESC, order_no DESC);

-- Each merchant's account in the books is named by its id. What the books
-- held for the one merchant before (`MERCHANT` `default`) is the shop's: it
-- moves there in one transfer per currency, so the entries stay as they were
-- and the shop's balance carries on.
ALTER TABLE transfers DROP CONSTRAINT transfers_kind_known;
ALTER TABLE transfers ADD CONSTRAINT transfers_kind_known
    CHECK (kind IN ('OPENING', 'HOLD', 'CHARGE', 'VOID', 'REFUND', 'UNBOOKED', 'GIVEN_BACK', 'MOVED'));
INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency, kind)
SELECT 'moved:' || b.ledger_account_id, b.ledger_account_id,
       ledger_account('MERCHANT', '00000000-0000-0000-0000-000000000001', b.currency),
       b.balance_cents, b.currency, 'MOVED'
FROM ledger_balances b
WHERE b.kind = 'MERCHANT' AND b.owner = 'default' AND b.balance_cents > 0;
