-- Step 11: an append holds the account's head lock for one statement on the server, not across
-- the device's round trips.
--
-- Seq order must be commit order (step 1, before_record_insert), so every append of an account
-- takes the account's head row, and holds it until it commits. Until now a device took it with
-- docsync.lock_head() at the start of its transaction and kept it across four more round trips
-- (the known ids, the stored blobs, the stored objects, the insert) and the COMMIT: with fifty
-- devices on one account each append waited 458 ms for the lock on average (docs/speed.md,
-- "Many devices on one PostgreSQL hub"), and across a network a round trip of 50 ms would hold
-- it 250 ms an append. A device now makes those checks first, outside any transaction, then
-- calls the function below in a transaction of its own and commits: the lock is held for the
-- call and the COMMIT's round trip. (Not a call that commits by itself: the client library
-- reports such a statement done before its implicit commit, so a server stopped in between
-- lost an append its device had been told was made.)
--
-- Under the lock the function looks again at which ids are stored, since another device may
-- have appended one of them since the device looked: the same id with the same payload is
-- left as it is, with another payload refused (SQLSTATE DS001, the id in hex as the detail).
-- Each statement of a PL/pgSQL function in READ COMMITTED sees what committed before it began,
-- so the look after the lock sees every append that held it before.
--
-- SECURITY INVOKER: the device's own row-level security and grants apply to every row, and
-- before_record_insert still checks each one (account, size, every blob or object named).
CREATE FUNCTION docsync.append_records(ids bytea[], payloads bytea[], joined bytea[])
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
  mine name := docsync.current_account();
  forged bytea;
  added bigint;
BEGIN
  IF mine IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF cardinality(ids) IS DISTINCT FROM cardinality(payloads)
    OR cardinality(ids) IS DISTINCT FROM cardinality(joined)
  THEN
    RAISE EXCEPTION 'ids, payloads and blobs of different lengths' USING ERRCODE = 'data_exception';
  END IF;
  PERFORM docsync.lock_head();
  SELECT r.id INTO forged
    FROM unnest(ids, payloads) AS t (i, p)
    JOIN docsync.records AS r ON r.account = mine AND r.id = t.i
    WHERE r.payload <> t.p
    LIMIT 1;
  IF forged IS NOT NULL THEN
    RAISE EXCEPTION 'a record already in the hub with a different payload'
      USING ERRCODE = 'DS001', DETAIL = encode(forged, 'hex');
  END IF;
  -- Rows go in in the batch's order, which is the order their seqs are given in; each
  -- record's hashes travel joined (a bytea[][] must be rectangular) and are cut apart here.
  INSERT INTO docsync.records (id, payload, blobs)
  SELECT t.i, t.p, ARRAY(
      SELECT substring(t.b FROM k * 32 + 1 FOR 32)
      FROM generate_series(0, octet_length(t.b) / 32 - 1) AS k ORDER BY k)
  FROM unnest(ids, payloads, joined) WITH ORDINALITY AS t (i, p, b, n)
  WHERE NOT EXISTS (SELECT 1 FROM docsync.records AS r WHERE r.account = mine AND r.id = t.i)
  ORDER BY t.n;
  GET DIAGNOSTICS added = ROW_COUNT;
  RETURN added;
END
$$;
