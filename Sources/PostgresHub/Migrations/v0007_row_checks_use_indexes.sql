-- docsync hub schema, step 7: the checks that run for every row a device inserts look rows up
-- by index, whatever the size of the tables when a connection first ran them. Released steps
-- are never edited: a change is a new file.
--
-- The chunk and blob triggers of step 2 ask, for every row, whether a blob already names the
-- row's upload; discard_upload and sweep_uploads ask the same. Without an index each question
-- read the whole blobs table, every account's. And PL/pgSQL keeps a statement's generic plan
-- for the life of a connection: planned while the tables were nearly empty, the record
-- trigger's "every named blob is stored" kept scanning all of docsync.blobs (a hash anti-join)
-- long after it held thousands of rows. A push of 10,000 small files spent 10 s of the server's
-- time in the first and 7-27 s in the second (pg_stat_statements,
-- Tools/bench-small-files-postgres.sh), growing with the hub: a push was quadratic in the
-- library's size. Each trigger now plans its statements with the values at hand, a few
-- microseconds a row. Nothing else changes: no body, grant or policy.
CREATE INDEX blobs_upload ON docsync.blobs (upload);

ALTER FUNCTION docsync.before_record_insert() SET plan_cache_mode = force_custom_plan;
ALTER FUNCTION docsync.before_blob_insert() SET plan_cache_mode = force_custom_plan;
ALTER FUNCTION docsync.before_chunk_insert() SET plan_cache_mode = force_custom_plan;
