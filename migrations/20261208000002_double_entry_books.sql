-- Double-entry books (issue 41). Every movement of money is one transfer that
-- debits one ledger account and credits another, of one amount in one
-- currency, under an id that is its idempotency key. The single-entry rows
-- (payment_ledger, accounts.balance_cents) stay beside the books for now and
-- are written in the same transactions; backend/src/invariants.rs holds the
-- two to each other after every test scenario.
--
-- The ledger accounts, and why each exists:
--   WALLET    a shopper's stored value in one currency (what we owe the
--             shopper). Its id is the `accounts` row's own id, and that row
--             keeps its running balance: balance_cents = credits - debits
--             posted, held_cents = debits pending. One shopper's payments
--             touch it, so a row lock per payment costs nothing.
--   MERCHANT  what we owe the merchant whose sale it is ('default' until
--             merchants have accounts of their own).
--   CLEARING  what the payment platform owes us: credited when it takes a
--             shopper's money for us, debited when it gives money back; the
--             platform's daily bill reconciles against it.
--   SUSPENSE  money a platform took that we could not book (a success for a
--             closed order, a second payment): we hold it, it is not ours,
--             and the automatic refund moves it back out.
--   FUNDING   where wallet money comes from: the opening balances (top-ups
--             paid in outside the checkout, the sandbox demo's gift).
-- MERCHANT, CLEARING, SUSPENSE and FUNDING are hot (every payment of a
-- currency touches the same one): no row of theirs is updated per transfer;
-- their balances are read from the transfers (docs/ARCHITECTURE.md).
CREATE TABLE ledger_accounts (
    ledger_account_id uuid PRIMARY KEY,
    kind       text NOT NULL CONSTRAINT ledger_accounts_kind_known
               CHECK (kind IN ('WALLET', 'MERCHANT', 'CLEARING', 'SUSPENSE', 'FUNDING')),
    owner      text NOT NULL,
    currency   text NOT NULL CONSTRAINT ledger_accounts_currency_iso CHECK (currency ~ '^[A-Z]{3}$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT ledger_accounts_once UNIQUE (kind, owner, currency),
    -- What a transfer's two foreign keys point at: an account in the transfer's currency.
    CONSTRAINT ledger_accounts_id_currency UNIQUE (ledger_account_id, currency),
    -- A wallet is its `accounts` row.
    CONSTRAINT ledger_accounts_wallet_is_an_account
        CHECK (kind <> 'WALLET' OR owner = ledger_account_id::text)
);

-- The id of the ledger account `kind` of `owner` in `currency`, opened on first
-- use: a wallet's id is its account's, every other id is derived from its
-- names, so a statement can name the account it posts to without reading it.
CREATE FUNCTION ledger_account(account_kind text, account_owner text, account_currency text) RETURNS uuid AS $$
DECLARE
    id uuid := CASE WHEN account_kind = 'WALLET' THEN account_owner::uuid
                    ELSE md5(account_kind || ':' || account_owner || ':' || account_currency)::uuid END;
BEGIN
    INSERT INTO ledger_accounts (ledger_account_id, kind, owner, currency)
    VALUES (id, account_kind, account_owner, account_currency)
    ON CONFLICT DO NOTHING;
    RETURN id;
END;
$$ LANGUAGE plpgsql;

CREATE TABLE transfers (
    -- The movement's idempotency key: `opening:<account>`, `hold:<payment id>`,
    -- `charge:<callback id>`, `void:<payment id>`, `refund:<refund no>`,
    -- `unbooked:<refund no>`. A second post of one id is impossible.
    transfer_id       text PRIMARY KEY,
    debit_account_id  uuid NOT NULL,
    credit_account_id uuid NOT NULL,
    amount_cents      bigint NOT NULL CONSTRAINT transfers_amount_positive CHECK (amount_cents > 0),
    currency          text NOT NULL,
    kind              text NOT NULL CONSTRAINT transfers_kind_known
                      CHECK (kind IN ('OPENING', 'HOLD', 'CHARGE', 'VOID', 'REFUND', 'UNBOOKED', 'GIVEN_BACK')),
    -- The hold a CHARGE posts or a VOID voids; each hold is resolved at most once.
    pending_id        text CONSTRAINT transfers_pending_id_fkey REFERENCES transfers (transfer_id)
                      CONSTRAINT transfers_hold_resolved_once UNIQUE,
    order_no          text REFERENCES orders (order_no),
    created_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT transfers_two_accounts CHECK (debit_account_id <> credit_account_id),
    -- Both sides in the transfer's currency.
    CONSTRAINT transfers_debit_in_currency FOREIGN KEY (debit_account_id, currency)
        REFERENCES ledger_accounts (ledger_account_id, currency),
    CONSTRAINT transfers_credit_in_currency FOREIGN KEY (credit_account_id, currency)
        REFERENCES ledger_accounts (ledger_account_id, currency),
    -- Only a CHARGE may post a hold, and a VOID always voids one.
    CONSTRAINT transfers_pending_id_kind
        CHECK (pending_id IS NULL OR kind IN ('CHARGE', 'VOID')),
    CONSTRAINT transfers_void_names_its_hold CHECK (kind <> 'VOID' OR pending_id IS NOT NULL)
);
CREATE INDEX transfers_debit_idx ON transfers (debit_account_id) INCLUDE (amount_cents, kind);
CREATE INDEX transfers_credit_idx ON transfers (credit_account_id) INCLUDE (amount_cents, kind);
CREATE INDEX transfers_order_idx ON transfers (order_no);

-- Entries are never changed or removed: a mistake is corrected by another
-- transfer. The serving role may only insert and read them (scripts/db-roles.sql).
CREATE FUNCTION transfers_are_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'transfer % may not be changed or removed', OLD.transfer_id
        USING ERRCODE = 'check_violation', CONSTRAINT = 'transfers_immutable';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER transfers_immutable
    BEFORE UPDATE OR DELETE ON transfers
    FOR EACH ROW EXECUTE FUNCTION transfers_are_immutable();

-- Every account is a wallet, and its opening balance is its first transfer,
-- whoever opens it (the admin API, demo mode, a test's own INSERT).
CREATE FUNCTION accounts_open_their_wallet() RETURNS trigger AS $$
BEGIN
    PERFORM ledger_account('WALLET', NEW.account_id::text, NEW.currency);
    IF NEW.opening_balance_cents > 0 THEN
        INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency, kind)
        VALUES ('opening:' || NEW.account_id, ledger_account('FUNDING', 'checkout', NEW.currency),
                NEW.account_id, NEW.opening_balance_cents, NEW.currency, 'OPENING');
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER accounts_open_wallet
    AFTER INSERT ON accounts
    FOR EACH ROW EXECUTE FUNCTION accounts_open_their_wallet();

-- Today's rows, moved into the books. Every wallet's balance and hold come
-- out as they were: its opening balance, less its charges, plus its refunds;
-- the holds of PENDING orders being paid. Every attempt made before payment
-- methods existed was a wallet payment. A hold already resolved left no
-- balance behind and is not replayed; a charge is a direct debit of the wallet.
INSERT INTO ledger_accounts (ledger_account_id, kind, owner, currency)
SELECT account_id, 'WALLET', account_id::text, currency FROM accounts;
INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency, kind, created_at)
SELECT 'opening:' || a.account_id, ledger_account('FUNDING', 'checkout', a.currency), a.account_id,
       a.opening_balance_cents, a.currency, 'OPENING', a.created_at
FROM accounts a WHERE a.opening_balance_cents > 0;
INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency, kind, order_no, created_at)
SELECT 'hold:' || p.payment_id, o.account_id, ledger_account('MERCHANT', 'default', o.currency),
       o.amount_cents, o.currency, 'HOLD', o.order_no, p.created_at
FROM payment_attempts p JOIN orders o ON o.order_no = p.order_no
WHERE o.status = 'PENDING' AND p.method = 'wallet';
INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency, kind, order_no, created_at)
SELECT 'charge:' || l.callback_id,
       CASE WHEN p.method = 'wallet' THEN l.account_id ELSE ledger_account('CLEARING', 'platform', l.currency) END,
       ledger_account('MERCHANT', 'default', l.currency), l.amount_cents, l.currency, 'CHARGE', l.order_no, l.created_at
FROM payment_ledger l JOIN payment_attempts p ON p.order_no = l.order_no
WHERE l.kind = 'CHARGE';
INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency, kind, order_no, created_at)
SELECT 'refund:' || l.refund_no, ledger_account('MERCHANT', 'default', l.currency),
       CASE WHEN p.method = 'wallet' THEN l.account_id ELSE ledger_account('CLEARING', 'platform', l.currency) END,
       l.amount_cents, l.currency, 'REFUND', l.order_no, l.created_at
FROM payment_ledger l JOIN payment_attempts p ON p.order_no = l.order_no
WHERE l.kind = 'REFUND';
INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency, kind, order_no, created_at)
SELECT 'unbooked:' || r.refund_no, ledger_account('CLEARING', 'platform', r.currency),
       ledger_account('SUSPENSE', 'checkout', r.currency), r.amount_cents, r.currency, 'UNBOOKED', r.order_no, r.created_at
FROM refunds r WHERE r.requested_by = 'automatic';
INSERT INTO transfers (transfer_id, debit_account_id, credit_account_id, amount_cents, currency, kind, order_no, created_at)
SELECT 'refund:' || r.refund_no, ledger_account('SUSPENSE', 'checkout', r.currency),
       ledger_account('CLEARING', 'platform', r.currency), r.amount_cents, r.currency, 'GIVEN_BACK', r.order_no,
       coalesce(r.settled_at, r.created_at)
FROM refunds r WHERE r.requested_by = 'automatic' AND r.status = 'SUCCEEDED';
