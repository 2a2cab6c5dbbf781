-- The deliveries of duplicates: an audit log, not money. Its transaction commits
-- asynchronously (synchronous_commit off for this transaction only, set inside
-- the statement so it costs no round trip): the rows are committed and visible
-- before the duplicates are answered, and reach the disk with the next WAL
-- flush (at most 3 x wal_writer_delay later); only a crash of the database
-- server (PostgreSQL or its machine) in between could lose them. Charges never
-- commit this way.
INSERT INTO callback_deliveries (callback_id, order_no, event_type, outcome, http_status)
SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::int2[])
WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL
