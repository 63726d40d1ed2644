-- Step 14: an object's metadata under 150 bytes, and a sweep whose server memory stays small
-- (issue 39's last hub row; docs/speed.md). Step 12 left 208 bytes an object at a million:
-- the primary key on (account, id) 77, the row's own 83 (tuple header and line pointer 28, a
-- timestamp 8, the account 4, the id 33, the check 9, the data's length 1), each node's refs
-- 36 an object (64 ids of 32 bytes in an array, each element with its own 4-byte length),
-- records 8.
--
-- - An object is found by its key, the first 8 bytes of its id as a bigint: the index holds
--   that number alone (20 bytes an entry with its line pointer, where the primary key held 52),
--   and the row keeps the other 24 bytes of the id. A lookup compares the whole id.
-- - A node's refs are its children's keys (8 bytes each, not 36), which is what the sweep walks
--   by. Two objects of one account whose ids share their first 8 bytes (about one chance in
--   10^7 for a hundred million objects; ids are hashes) are one key to the sweep: it keeps or
--   frees them together, and frees one only when no record reaches the other either, or when a
--   released record reached the other and nothing else does.
-- - The hub's check is the same 8 bytes of SHA-256, kept as a bigint so that it aligns with
--   the key and the timestamp without padding.
-- - No unique index keeps one row an object: put_objects holds the account's lock (a
--   transaction-scoped advisory lock) while it looks for an object and inserts it, so two
--   devices of one account that put the same object at once store it once.
-- - Devices read objects through docsync.read_objects and docsync.present_objects, which
--   filter by docsync.current_account_number(); they may no longer select from the table
--   (row-level security stays, for the functions and against a grant made by mistake). The
--   step says so in its row of docsync.migrations (devices_from, step 13), so that a docsync
--   that does not know this step refuses in one line rather than failing on its first read.
-- - The sweep is one statement whose joins are by key: what the released records reached,
--   then what every remaining record and every recent node reaches, then a join of the
--   candidates (freed or old) against it. Step 12 tested each row against an array of freed
--   ids under an OR; with the freed ids as a table, that OR made a subquery per row (see
--   docs/speed.md).
--
UPDATE docsync.migrations SET devices_from = 14 WHERE version = 14;

-- The table is copied, not altered in place, so that the rows are written in the new layout and
-- the index built packed; every object is kept.

-- The key of an id, and of a check: its first 8 bytes as a big-endian bigint (int8send gives
-- them back). IMMUTABLE and plain SQL, so that a query inlines it.
CREATE FUNCTION docsync.object_key(id bytea) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
  SELECT ('x' || encode(substring(id FROM 1 FOR 8), 'hex'))::bit(64)::bigint
$$;

ALTER TABLE docsync.objects NO FORCE ROW LEVEL SECURITY;
ALTER TABLE docsync.objects RENAME TO objects_step_13;

-- Fixed-width columns first, widest first, so that the row has no padding.
CREATE TABLE docsync.objects (
  key bigint NOT NULL,
  touched timestamptz NOT NULL DEFAULT now(),
  "check" bigint NOT NULL,
  account integer NOT NULL DEFAULT docsync.current_account_number(),
  rest bytea NOT NULL,
  data bytea NOT NULL,
  refs bigint[]
);
ALTER TABLE docsync.objects ALTER COLUMN data SET STORAGE MAIN,
  ALTER COLUMN refs SET STORAGE MAIN;
INSERT INTO docsync.objects (key, touched, "check", account, rest, data, refs)
  SELECT docsync.object_key(o.id), o.touched, docsync.object_key(o."check"), o.account,
    substring(o.id FROM 9), o.data,
    (SELECT array_agg(docsync.object_key(c.id) ORDER BY c.n)
      FROM unnest(o.refs) WITH ORDINALITY AS c (id, n))
  FROM docsync.objects_step_13 AS o
  ORDER BY 1;
DROP TABLE docsync.objects_step_13;
CREATE INDEX objects_key ON docsync.objects (key);
ALTER TABLE docsync.objects ENABLE ROW LEVEL SECURITY;
ALTER TABLE docsync.objects FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON docsync.objects
  USING (account = docsync.current_account_number())
  WITH CHECK (account = docsync.current_account_number());

-- The caller's objects among `ids`: id, data and the hub's check (8 bytes).
CREATE FUNCTION docsync.read_objects(ids bytea[])
RETURNS TABLE (id bytea, data bytea, "check" bytea)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
  mine integer;
BEGIN
  IF docsync.current_account() IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  mine := docsync.current_account_number();
  RETURN QUERY
    SELECT int8send(o.key) || o.rest, o.data, int8send(o."check")
    FROM unnest(ids) AS asked (id)
    JOIN docsync.objects AS o
      ON o.account = mine AND o.key = docsync.object_key(asked.id)
        AND o.rest = substring(asked.id FROM 9);
END
$$;

-- The caller's objects among `ids`, without touching them: the ids.
CREATE FUNCTION docsync.present_objects(ids bytea[]) RETURNS SETOF bytea
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  mine integer;
BEGIN
  IF docsync.current_account() IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  mine := docsync.current_account_number();
  RETURN QUERY
    SELECT asked.id FROM unnest(ids) AS asked (id)
    WHERE EXISTS (
      SELECT 1 FROM docsync.objects AS o
      WHERE o.account = mine AND o.key = docsync.object_key(asked.id)
        AND o.rest = substring(asked.id FROM 9));
END
$$;

-- Step 12's, by key.
CREATE OR REPLACE FUNCTION docsync.missing_objects(ids bytea[]) RETURNS SETOF bytea
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  mine integer;
BEGIN
  IF docsync.current_account() IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  mine := docsync.current_account_number();
  UPDATE docsync.objects AS o SET touched = now()
    FROM unnest(ids) AS asked (id)
    WHERE o.account = mine AND o.key = docsync.object_key(asked.id)
      AND o.rest = substring(asked.id FROM 9);
  RETURN QUERY
    SELECT asked.id FROM unnest(ids) WITH ORDINALITY AS asked (id, position)
    WHERE NOT EXISTS (
      SELECT 1 FROM docsync.objects AS o
      WHERE o.account = mine AND o.key = docsync.object_key(asked.id)
        AND o.rest = substring(asked.id FROM 9))
    ORDER BY asked.position;
END
$$;

-- Step 12's, by key, with the children's keys as refs, under the account's lock.
CREATE OR REPLACE FUNCTION docsync.put_objects(ids bytea[], datas bytea[], refs bytea[])
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  mine integer;
  i integer;
  k integer;
  children bigint[];
  child bytea;
BEGIN
  mine := docsync.own_account_number();
  IF cardinality(ids) <> cardinality(datas) OR cardinality(ids) <> cardinality(refs) THEN
    RAISE EXCEPTION 'objects, data and references do not match' USING ERRCODE = 'check_violation';
  END IF;
  -- 1868720755 spells "objs". Held to the end of the transaction, so that another put of the
  -- account's sees this one's rows once it may look.
  PERFORM pg_advisory_xact_lock(1868720755, mine);
  FOR i IN 1 .. coalesce(cardinality(ids), 0) LOOP
    IF octet_length(ids[i]) <> 32 OR octet_length(datas[i]) > 524288
      OR octet_length(refs[i]) % 32 <> 0 OR octet_length(refs[i]) > 32 * 1024
    THEN
      RAISE EXCEPTION 'a malformed object' USING ERRCODE = 'check_violation';
    END IF;
    UPDATE docsync.objects AS o SET touched = now()
      WHERE o.account = mine AND o.key = docsync.object_key(ids[i])
        AND o.rest = substring(ids[i] FROM 9);
    CONTINUE WHEN FOUND;
    children := NULL;
    FOR k IN 0 .. octet_length(refs[i]) / 32 - 1 LOOP
      child := substring(refs[i] FROM k * 32 + 1 FOR 32);
      IF NOT EXISTS (
        SELECT 1 FROM docsync.objects AS o
        WHERE o.account = mine AND o.key = docsync.object_key(child)
          AND o.rest = substring(child FROM 9))
      THEN
        RAISE EXCEPTION 'an object names an absent one: %', encode(child, 'hex')
          USING ERRCODE = 'foreign_key_violation';
      END IF;
      children := array_append(children, docsync.object_key(child));
    END LOOP;
    INSERT INTO docsync.objects (key, "check", account, rest, data, refs)
      VALUES (docsync.object_key(ids[i]), docsync.object_key(sha256(datas[i])), mine,
        substring(ids[i] FROM 9), datas[i], children);
    DELETE FROM docsync.wanted_objects AS w WHERE w.account = mine AND w.id = ids[i];
  END LOOP;
END
$$;

-- Step 12's, by key.
CREATE OR REPLACE FUNCTION docsync.report_damaged_object(target bytea) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  mine integer;
BEGIN
  IF docsync.current_account() IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  mine := docsync.current_account_number();
  DELETE FROM docsync.objects AS o
    WHERE o.account = mine AND o.key = docsync.object_key(target)
      AND o.rest = substring(target FROM 9)
      AND docsync.object_key(sha256(o.data)) <> o."check";
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  INSERT INTO docsync.wanted_objects (account, id) VALUES (mine, target) ON CONFLICT DO NOTHING;
  RETURN true;
END
$$;

-- Step 12's sweep as one statement over keys. An object goes when it is a candidate (below a
-- released record, or untouched for a day) and nothing reaches it: no remaining record, and no
-- recent node that is not itself below a released record (an upload whose record is not
-- committed yet). The candidates are joined, not tested under an OR: with a table of freed
-- ids, `touched < cutoff OR id IN (SELECT ...)` is a subquery that PostgreSQL hashes only when
-- it expects the hash to fit in work_mem; else it scans the table again for every row that
-- the first test lets through, which every recent object is. Without JIT: compiling this
-- plan took about 26 MB of the backend's memory (a sweep of 250,000 of 500,000 objects: 134
-- MiB with it, 108 without) and saved no time.
CREATE OR REPLACE FUNCTION docsync.sweep_objects(released bytea[]) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
SET jit = off
AS $$
DECLARE
  mine name := docsync.current_account();
  number integer;
  cutoff timestamptz := now() - interval '1 day';
BEGIN
  IF mine IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  number := docsync.current_account_number();
  WITH RECURSIVE below (key) AS (
    SELECT docsync.object_key(r.id) FROM unnest(released) AS r (id)
    UNION
    SELECT child.key FROM below
      JOIN docsync.objects AS o ON o.account = number AND o.key = below.key
      CROSS JOIN LATERAL unnest(o.refs) AS child (key)
  ),
  reached (key) AS (
    (SELECT docsync.object_key(named.id) FROM docsync.records AS r, unnest(r.blobs) AS named (id)
      WHERE r.account = mine
    UNION
    SELECT o.key FROM docsync.objects AS o
      WHERE o.account = number AND o.refs IS NOT NULL AND o.touched >= cutoff
        AND NOT EXISTS (SELECT 1 FROM below WHERE below.key = o.key))
    UNION
    SELECT child.key FROM reached
      JOIN docsync.objects AS o ON o.account = number AND o.key = reached.key
      CROSS JOIN LATERAL unnest(o.refs) AS child (key)
  ),
  doomed (key, freed) AS (
    SELECT below.key, true FROM below
    UNION ALL
    SELECT o.key, false FROM docsync.objects AS o WHERE o.account = number AND o.touched < cutoff
  )
  DELETE FROM docsync.objects AS o
    USING doomed
    WHERE o.account = number AND o.key = doomed.key
      -- Tested on the row as well: a row a device touched (missing_objects found it present)
      -- while this ran is read again before it is deleted, and stays.
      AND (doomed.freed OR o.touched < cutoff)
      AND NOT EXISTS (SELECT 1 FROM reached WHERE reached.key = doomed.key);
END
$$;

-- Step 12's record check, by key.
CREATE OR REPLACE FUNCTION docsync.before_record_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
  number integer;
BEGIN
  IF NEW.account IS DISTINCT FROM docsync.current_account() THEN
    RAISE EXCEPTION 'a record for another account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF octet_length(NEW.payload) > 65536 OR cardinality(NEW.blobs) > 16 THEN
    RAISE EXCEPTION 'a record larger than a version record can be' USING ERRCODE = 'check_violation';
  END IF;
  SELECT n.number INTO number FROM docsync.account_numbers AS n WHERE n.account = NEW.account;
  IF EXISTS (
    SELECT 1 FROM unnest(NEW.blobs) AS named (hash)
    WHERE octet_length(named.hash) <> 32 OR (
      NOT EXISTS (
        SELECT 1 FROM docsync.blobs AS b WHERE b.account = NEW.account AND b.hash = named.hash)
      AND NOT EXISTS (
        SELECT 1 FROM docsync.objects AS o
        WHERE o.account = number AND o.key = docsync.object_key(named.hash)
          AND o.rest = substring(named.hash FROM 9))))
  THEN
    RAISE EXCEPTION 'a record names a blob the hub does not have'
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  INSERT INTO docsync.heads AS h (account, seq) VALUES (NEW.account, 1)
    ON CONFLICT (account) DO UPDATE SET seq = h.seq + 1
    RETURNING h.seq INTO NEW.seq;
  PERFORM pg_notify(docsync.notify_channel(), '');
  RETURN NEW;
END
$$;
