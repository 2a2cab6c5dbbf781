-- Least-privilege PostgreSQL roles for the checkout (docs/SECURITY.md, "Database roles"):
--
--   owner (default checkout_owner)  owns the database, its schemas and tables; runs
--                                   the migrations (DATABASE_MIGRATION_URL).
--   app   (default checkout_app)    what the backend serves with (DATABASE_URL):
--                                   LOGIN, not a superuser, no CREATE on the database
--                                   or any schema, only the row privileges below.
--
-- Run it as a superuser (or a role that may create roles and databases) against
-- any database of the cluster; it creates the database when missing and then
-- connects to it:
--
--   psql "postgres://postgres@db-host:5432/postgres" -f scripts/db-roles.sql \
--        -v dbname=checkout -v owner=checkout_owner -v app=checkout_app \
--        -v owner_password="$OWNER_PASSWORD" -v app_password="$APP_PASSWORD"
--
-- Every variable is optional: dbname, owner and app default to the names above; a
-- password left out leaves that role's password as it is (a role made without
-- one can only log in where pg_hba.conf needs no password). Passwords are sent
-- as ALTER ROLE ... PASSWORD; keep log_statement off 'all'/'ddl' while it runs.
--
-- Safe to run any number of times. Run it again after EVERY migration: privileges
-- are granted table by table from the list below, so a table a migration adds
-- gets nothing until it is listed here and this script runs (the backend refuses
-- to start while its role may not read a table). Default privileges are used for
-- sequences only: a new table never silently gets UPDATE or DELETE.
--
-- The order for a new database: this script, `backend migrate` with
-- DATABASE_MIGRATION_URL (the owner), this script again.

\set ON_ERROR_STOP on
\if :{?dbname}
\else
\set dbname checkout
\endif
\if :{?owner}
\else
\set owner checkout_owner
\endif
\if :{?app}
\else
\set app checkout_app
\endif

-- ---- Roles (cluster-wide) ----------------------------------------------------

SELECT format('CREATE ROLE %I', :'owner')
WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = :'owner') \gexec
SELECT format('CREATE ROLE %I', :'app')
WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = :'app') \gexec

ALTER ROLE :"owner" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
ALTER ROLE :"app" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT;

\if :{?owner_password}
ALTER ROLE :"owner" WITH PASSWORD :'owner_password';
\endif
\if :{?app_password}
ALTER ROLE :"app" WITH PASSWORD :'app_password';
\endif

-- ---- The database ------------------------------------------------------------

SELECT format('CREATE DATABASE %I OWNER %I', :'dbname', :'owner')
WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_database WHERE datname = :'dbname') \gexec
ALTER DATABASE :"dbname" OWNER TO :"owner";
-- Nobody but the owner may create schemas or temporary tables, and only the two
-- roles (and superusers) may connect.
REVOKE ALL ON DATABASE :"dbname" FROM PUBLIC;
REVOKE ALL ON DATABASE :"dbname" FROM :"app";
GRANT CONNECT ON DATABASE :"dbname" TO :"app";

\connect :"dbname"

-- psql variables do not reach into the DO blocks below: hand them over as settings.
BEGIN;
SELECT set_config('checkout_roles.owner', :'owner', true) AS owner,
       set_config('checkout_roles.app', :'app', true) AS app \gset handed_over_

ALTER SCHEMA public OWNER TO :"owner";
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
REVOKE ALL ON SCHEMA public FROM :"app";
GRANT USAGE ON SCHEMA public TO :"app";

-- Sequences only hand out numbers: a bigserial a migration adds is usable as
-- soon as its table is granted. Tables get no default privileges (and any an
-- earlier version of this script set are taken back).
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public GRANT USAGE ON SEQUENCES TO :"app";
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public REVOKE ALL ON TABLES FROM :"app";
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" REVOKE ALL ON TABLES FROM :"app";

DO $roles$
DECLARE
    owner_role text := current_setting('checkout_roles.owner');
    app_role   text := current_setting('checkout_roles.app');
    item       record;
    missing    text[] := '{}';
BEGIN
    -- A database migrated before these roles existed (by the superuser, say):
    -- its tables and views, their sequences and indexes, and its functions move to the owner.
    FOR item IN
        SELECT c.oid::regclass AS name
        FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname IN ('public', 'tower_sessions') AND c.relkind IN ('r', 'p', 'v')
          AND c.relowner <> owner_role::regrole
          AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                          WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
    LOOP
        RAISE NOTICE 'handing % to %', item.name, owner_role;
        EXECUTE format('ALTER TABLE %s OWNER TO %I', item.name, owner_role);
    END LOOP;
    FOR item IN
        SELECT p.oid::regprocedure AS name
        FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname IN ('public', 'tower_sessions') AND p.proowner <> owner_role::regrole
          AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                          WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
    LOOP
        RAISE NOTICE 'handing % to %', item.name, owner_role;
        EXECUTE format('ALTER ROUTINE %s OWNER TO %I', item.name, owner_role);
    END LOOP;

    -- The session store's schema (made by the first migration run).
    IF EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = 'tower_sessions') THEN
        EXECUTE format('ALTER SCHEMA tower_sessions OWNER TO %I', owner_role);
        EXECUTE format('REVOKE ALL ON SCHEMA tower_sessions FROM %I', app_role);
        EXECUTE format('GRANT USAGE ON SCHEMA tower_sessions TO %I', app_role);
        EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA tower_sessions FROM %I', app_role);
    END IF;

    -- Start from nothing, so a privilege taken off the list is taken from the role.
    -- (Revoking a table privilege revokes it on every column too.)
    EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA public FROM %I', app_role);
    EXECUTE format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM %I', app_role);
    EXECUTE format('GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO %I', app_role);

    -- What the backend does to each table (backend/src/db/*.rs, backend/sql/callback/*.sql,
    -- backend/src/invariants.rs). Append-only records: SELECT, INSERT. Rows the
    -- backend changes: UPDATE only on the columns it changes, so the app can never
    -- rewrite an amount, an owner or an opening balance. DELETE only where rows go.
    FOR item IN
        SELECT * FROM (VALUES
            ('public', 'accounts',              'SELECT, INSERT, UPDATE (balance_cents, held_cents)'),
            ('public', 'orders',                'SELECT, INSERT, UPDATE (status, failure_reason, paid_at, updated_at, refund_reserved_cents, refunded_cents)'),
            ('public', 'refunds',               'SELECT, INSERT, UPDATE (status, platform_refund_id, submitted_at, settled_at, queries, next_query_at, failure_reason)'),
            ('public', 'payment_attempts',      'SELECT, INSERT, UPDATE (submitted_at, status, platform_payment_id, queries, next_query_at, qr_code)'),
            ('public', 'products',              'SELECT, INSERT, UPDATE, DELETE'),
            ('public', 'shoppers',              'SELECT, INSERT'),
            ('public', 'request_tokens_issued', 'SELECT, INSERT'),
            ('public', 'idempotency_keys',      'SELECT, INSERT'),
            ('public', 'payment_callbacks',     'SELECT, INSERT'),
            ('public', 'payment_ledger',        'SELECT, INSERT'),
            -- The double-entry books: entries are never changed or removed (a trigger
            -- refuses it too); ledger accounts are opened on first use.
            ('public', 'transfers',             'SELECT, INSERT'),
            ('public', 'ledger_accounts',       'SELECT, INSERT'),
            -- A view: each account's balance read from its entries.
            ('public', 'ledger_balances',       'SELECT'),
            -- Merchants: made by the operator, never removed; a key's hash and owner
            -- never change, only when it ends, is revoked, and was last used.
            ('public', 'merchants',             'SELECT, INSERT'),
            ('public', 'merchant_keys',         'SELECT, INSERT, UPDATE (expires_at, revoked_at, last_used_at)'),
            ('public', 'callback_deliveries',   'SELECT, INSERT'),
            ('public', 'anomalies',             'SELECT, INSERT, UPDATE (resolved_at, resolved_by, resolution_note)'),
            ('public', 'reconciliation_items',  'SELECT, INSERT'),
            ('public', 'reconciliation_runs',   'SELECT, INSERT'),
            -- The backend checks at start that the schema is current.
            ('public', '_sqlx_migrations',      'SELECT'),
            -- Sessions are written at every request and deleted at sign-out and expiry.
            ('tower_sessions', 'session',       'SELECT, INSERT, UPDATE, DELETE')
        ) AS policy (schema_name, table_name, privileges)
    LOOP
        IF to_regclass(format('%I.%I', item.schema_name, item.table_name)) IS NULL THEN
            missing := missing || format('%I.%I', item.schema_name, item.table_name);
        ELSE
            EXECUTE format('GRANT %s ON %I.%I TO %I',
                item.privileges, item.schema_name, item.table_name, app_role);
        END IF;
    END LOOP;
    IF missing <> '{}' THEN
        RAISE NOTICE 'not there yet (a database not migrated yet?): %; run this script again after migrating',
            array_to_string(missing, ', ');
    END IF;

    FOR item IN
        SELECT format('%I.%I', n.nspname, c.relname) AS name
        FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname IN ('public', 'tower_sessions') AND c.relkind IN ('r', 'p', 'v')
          AND NOT has_table_privilege(app_role, c.oid, 'SELECT')
    LOOP
        RAISE WARNING '% is not listed in scripts/db-roles.sql: % may not use it (the backend will refuse to start)',
            item.name, app_role;
    END LOOP;

    -- What the app role must never be able to do, whatever memberships it was given elsewhere.
    IF EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = app_role
               AND (rolsuper OR rolcreatedb OR rolcreaterole OR rolbypassrls OR rolreplication)) THEN
        RAISE EXCEPTION 'role % has cluster-wide privileges it must not have', app_role;
    END IF;
    IF pg_has_role(app_role, owner_role, 'MEMBER') THEN
        RAISE EXCEPTION 'role % is a member of %: it would own the schema', app_role, owner_role;
    END IF;
    IF has_database_privilege(app_role, current_database(), 'CREATE, TEMPORARY') THEN
        RAISE EXCEPTION 'role % may create schemas or temporary tables in %', app_role, current_database();
    END IF;
    IF has_schema_privilege(app_role, 'public', 'CREATE') THEN
        RAISE EXCEPTION 'role % may create objects in schema public', app_role;
    END IF;
END
$roles$;

COMMIT;
