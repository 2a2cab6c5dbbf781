-- Every ledger account's balance, read from its entries: the one definition
-- the invariants, the metrics and the operator console share. No account row
-- keeps a running balance but a wallet's (`accounts`, held equal to this view
-- by the invariants), so the hot accounts (a merchant, a platform's clearing,
-- suspense, funding) are never updated per payment.
--
--   debits_posted, credits_posted  every entry but holds and voids
--   debits_pending                 the holds not yet posted or voided
--   balance_cents                  credits_posted - debits_posted: what the
--                                  checkout owes the owner (negative for
--                                  clearing and funding, which owe us)
--   available_cents                balance_cents - debits_pending: what a
--                                  wallet may still spend
--
-- Each figure is read per account through the debit and credit indexes
-- (their INCLUDE columns answer it without the table), so asking for one
-- account reads that account's entries only.
CREATE VIEW ledger_balances AS
SELECT a.ledger_account_id, a.kind, a.owner, a.currency,
       debits.posted AS debits_posted, credits.posted AS credits_posted,
       debits.pending AS debits_pending,
       credits.posted - debits.posted AS balance_cents,
       credits.posted - debits.posted - debits.pending AS available_cents
FROM ledger_accounts a
CROSS JOIN LATERAL (
    SELECT coalesce(sum(t.amount_cents) FILTER (WHERE t.kind NOT IN ('HOLD', 'VOID')), 0)::bigint AS posted,
           coalesce((SELECT sum(h.amount_cents) FROM transfers h
                     WHERE h.debit_account_id = a.ledger_account_id AND h.kind = 'HOLD'
                       AND NOT EXISTS (SELECT FROM transfers r WHERE r.pending_id = h.transfer_id)), 0)::bigint AS pending
    FROM transfers t WHERE t.debit_account_id = a.ledger_account_id
) debits
CROSS JOIN LATERAL (
    SELECT coalesce(sum(t.amount_cents) FILTER (WHERE t.kind NOT IN ('HOLD', 'VOID')), 0)::bigint AS posted
    FROM transfers t WHERE t.credit_account_id = a.ledger_account_id
) credits;
