-- The common callback (a new success for a PENDING order whose attempt it names,
-- with the order's hold in place) is applied by one statement of data-modifying
-- CTEs (backend/sql/callback/charge_in_one.sql) instead of a transaction of
-- seven. Its rows can only all be written or none: this check fails the whole
-- statement, and with it every CTE's write, when one of the writes that must
-- follow the ledger row did not happen.
CREATE FUNCTION checkout_assert(ok boolean, what text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION 'invariant broken under lock: %', what USING ERRCODE = 'P0001';
    END IF;
    RETURN true;
END
$$;
