-- Step 12: an object's row and index entry take about half the bytes (issue 39's row "hub
-- metadata per unique chunk ≤ 150 B"; docs/speed.md). Each row of step 9's objects carried its
-- account as a `name` (64 bytes, in the row and again in the primary key's index), a 32-byte
-- SHA-256 check and alignment padding: 363 bytes of metadata an object.
--
-- - An account is a small number in objects and wanted_objects (docsync.account_numbers, made
--   on an account's first put). Row-level security compares it with the caller's number, which
--   docsync.current_account_number() finds from docsync.current_account() as before; devices
--   still read only their account's rows and still write none.
-- - The hub's own check is the first 8 bytes of the SHA-256 of the stored bytes: it finds the
--   hub's own damage (a device's report drops a copy only when it fails), and needs no 32.
--   Existing rows keep the first 8 bytes of their check, which is the same test. A device
--   compares as many bytes as the check has, so it reads hubs before and after this step.
-- - Fixed-width columns first, so that the row has no padding.
-- - A node's data and refs (about 4.4 KB for 64 children) stay in its row (STORAGE MAIN) rather
--   than in TOAST, whose chunk rows and index cost about 1.2 KB more a node; a row up to a page
--   still fits, and a larger chunk still goes to TOAST.
--
-- The tables are copied, not altered in place, so that the rows are written in the new layout
-- and the indexes built packed; every object and wanted object is kept.

CREATE TABLE docsync.account_numbers (
  number integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account name NOT NULL UNIQUE
);

-- The caller's account number, NULL when the caller is in no account or its account has not
-- stored an object yet (then it has no rows to see). SECURITY DEFINER: devices may not read
-- account_numbers, which names every account.
CREATE FUNCTION docsync.current_account_number() RETURNS integer
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog
AS $$
  SELECT n.number FROM docsync.account_numbers AS n WHERE n.account = docsync.current_account()
$$;

-- The caller's account number, made on first use. Only the functions below call it.
CREATE FUNCTION docsync.own_account_number() RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  mine name := docsync.current_account();
  found integer;
BEGIN
  IF mine IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  SELECT n.number INTO found FROM docsync.account_numbers AS n WHERE n.account = mine;
  IF found IS NULL THEN
    INSERT INTO docsync.account_numbers (account) VALUES (mine) ON CONFLICT (account) DO NOTHING;
    SELECT n.number INTO found FROM docsync.account_numbers AS n WHERE n.account = mine;
  END IF;
  RETURN found;
END
$$;
REVOKE EXECUTE ON FUNCTION docsync.own_account_number() FROM PUBLIC;

-- The owner reads every row of the old tables to copy them.
ALTER TABLE docsync.objects NO FORCE ROW LEVEL SECURITY;
ALTER TABLE docsync.wanted_objects NO FORCE ROW LEVEL SECURITY;
ALTER TABLE docsync.objects RENAME TO objects_step_11;
ALTER TABLE docsync.wanted_objects RENAME TO wanted_objects_step_11;

INSERT INTO docsync.account_numbers (account)
  SELECT o.account FROM docsync.objects_step_11 AS o
  UNION
  SELECT w.account FROM docsync.wanted_objects_step_11 AS w
  ORDER BY 1;

CREATE TABLE docsync.objects (
  touched timestamptz NOT NULL DEFAULT now(),
  account integer NOT NULL DEFAULT docsync.current_account_number(),
  id bytea NOT NULL,
  "check" bytea NOT NULL,
  data bytea NOT NULL,
  refs bytea[]
);
ALTER TABLE docsync.objects ALTER COLUMN data SET STORAGE MAIN,
  ALTER COLUMN refs SET STORAGE MAIN;
INSERT INTO docsync.objects (touched, account, id, "check", data, refs)
  SELECT o.touched, n.number, o.id, substring(o."check" FROM 1 FOR 8), o.data, o.refs
  FROM docsync.objects_step_11 AS o JOIN docsync.account_numbers AS n ON n.account = o.account
  ORDER BY n.number, o.id;
DROP TABLE docsync.objects_step_11;
ALTER TABLE docsync.objects ADD PRIMARY KEY (account, id);
ALTER TABLE docsync.objects ENABLE ROW LEVEL SECURITY;
ALTER TABLE docsync.objects FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON docsync.objects
  USING (account = docsync.current_account_number())
  WITH CHECK (account = docsync.current_account_number());
GRANT SELECT ON docsync.objects TO PUBLIC;

CREATE TABLE docsync.wanted_objects (
  since timestamptz NOT NULL DEFAULT now(),
  account integer NOT NULL DEFAULT docsync.current_account_number(),
  id bytea NOT NULL
);
INSERT INTO docsync.wanted_objects (since, account, id)
  SELECT w.since, n.number, w.id
  FROM docsync.wanted_objects_step_11 AS w
  JOIN docsync.account_numbers AS n ON n.account = w.account
  ORDER BY n.number, w.id;
DROP TABLE docsync.wanted_objects_step_11;
ALTER TABLE docsync.wanted_objects ADD PRIMARY KEY (account, id);
ALTER TABLE docsync.wanted_objects ENABLE ROW LEVEL SECURITY;
ALTER TABLE docsync.wanted_objects FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON docsync.wanted_objects
  USING (account = docsync.current_account_number())
  WITH CHECK (account = docsync.current_account_number());
GRANT SELECT ON docsync.wanted_objects TO PUBLIC;

-- Step 9's, by account number.
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
  UPDATE docsync.objects AS o SET touched = now() WHERE o.account = mine AND o.id = ANY(ids);
  RETURN QUERY
    SELECT asked.id FROM unnest(ids) WITH ORDINALITY AS asked (id, position)
    WHERE NOT EXISTS (SELECT 1 FROM docsync.objects AS o WHERE o.account = mine AND o.id = asked.id)
    ORDER BY asked.position;
END
$$;

-- Step 9's, by account number and with the 8-byte check.
CREATE OR REPLACE FUNCTION docsync.put_objects(ids bytea[], datas bytea[], refs bytea[])
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  mine integer;
  i integer;
  children bytea[];
  child bytea;
BEGIN
  mine := docsync.own_account_number();
  IF cardinality(ids) <> cardinality(datas) OR cardinality(ids) <> cardinality(refs) THEN
    RAISE EXCEPTION 'objects, data and references do not match' USING ERRCODE = 'check_violation';
  END IF;
  FOR i IN 1 .. coalesce(cardinality(ids), 0) LOOP
    IF octet_length(ids[i]) <> 32 OR octet_length(datas[i]) > 524288
      OR octet_length(refs[i]) % 32 <> 0 OR octet_length(refs[i]) > 32 * 1024
    THEN
      RAISE EXCEPTION 'a malformed object' USING ERRCODE = 'check_violation';
    END IF;
    UPDATE docsync.objects AS o SET touched = now() WHERE o.account = mine AND o.id = ids[i];
    CONTINUE WHEN FOUND;
    children := NULL;
    IF octet_length(refs[i]) > 0 THEN
      SELECT array_agg(substring(refs[i] FROM k * 32 + 1 FOR 32) ORDER BY k) INTO children
        FROM generate_series(0, octet_length(refs[i]) / 32 - 1) AS k;
      FOREACH child IN ARRAY children LOOP
        IF NOT EXISTS (SELECT 1 FROM docsync.objects AS o WHERE o.account = mine AND o.id = child)
        THEN
          RAISE EXCEPTION 'an object names an absent one: %', encode(child, 'hex')
            USING ERRCODE = 'foreign_key_violation';
        END IF;
      END LOOP;
    END IF;
    INSERT INTO docsync.objects (account, id, "check", data, refs)
      VALUES (mine, ids[i], substring(sha256(datas[i]) FROM 1 FOR 8), datas[i], children);
    DELETE FROM docsync.wanted_objects AS w WHERE w.account = mine AND w.id = ids[i];
  END LOOP;
END
$$;

-- Step 9's, by account number; a check of either length (this step cuts them all to 8 bytes)
-- is compared with as many bytes of the SHA-256.
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
    WHERE o.account = mine AND o.id = target
      AND substring(sha256(o.data) FROM 1 FOR octet_length(o."check")) <> o."check";
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  INSERT INTO docsync.wanted_objects (account, id) VALUES (mine, target) ON CONFLICT DO NOTHING;
  RETURN true;
END
$$;

-- Step 10's sweep, by account number.
CREATE OR REPLACE FUNCTION docsync.sweep_objects(released bytea[]) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
  mine name := docsync.current_account();
  number integer;
  freed bytea[];
BEGIN
  IF mine IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  number := docsync.current_account_number();
  -- What only the released records may have reached: their roots and everything below.
  WITH RECURSIVE below (id) AS (
    SELECT r.id FROM unnest(released) AS r (id)
    UNION
    SELECT child.id FROM below
      JOIN docsync.objects AS o ON o.account = number AND o.id = below.id
      CROSS JOIN LATERAL unnest(o.refs) AS child (id)
  )
  SELECT coalesce(array_agg(below.id), '{}') INTO freed FROM below;
  WITH RECURSIVE reached (id) AS (
    (SELECT named.id FROM docsync.records AS r, unnest(r.blobs) AS named (id)
      WHERE r.account = mine
    UNION
    SELECT o.id FROM docsync.objects AS o
      WHERE o.account = number AND o.refs IS NOT NULL
        AND o.touched >= now() - interval '1 day' AND NOT o.id = ANY(freed))
    UNION
    SELECT child.id FROM reached
      JOIN docsync.objects AS o ON o.account = number AND o.id = reached.id
      CROSS JOIN LATERAL unnest(o.refs) AS child (id)
  )
  DELETE FROM docsync.objects AS o
    WHERE o.account = number
      AND (o.touched < now() - interval '1 day' OR o.id = ANY(freed))
      AND NOT EXISTS (SELECT 1 FROM reached WHERE reached.id = o.id);
END
$$;

-- Step 9's record check, which looks for a named object by the account's number.
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
        SELECT 1 FROM docsync.objects AS o WHERE o.account = number AND o.id = named.hash)))
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

-- Step 6's blob dropper, which looked for each released hash in every record of the account
-- (a scan of records for each one): a prune that released 7,813 nodes of a million chunks spent
-- about 27 s there, for hashes that are objects, not blobs. Now only hashes that are blobs or
-- wanted blobs are looked for, in one pass over the account's records.
CREATE OR REPLACE FUNCTION docsync.drop_unnamed_blobs(candidates bytea[]) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
  mine name := docsync.current_account();
  candidate bytea;
  gone_upload uuid;
BEGIN
  IF mine IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  FOR candidate IN
    SELECT c.hash FROM (
      SELECT DISTINCT named.hash FROM unnest(candidates) AS named (hash)
      WHERE EXISTS (
          SELECT 1 FROM docsync.blobs AS b WHERE b.account = mine AND b.hash = named.hash)
        OR EXISTS (
          SELECT 1 FROM docsync.wanted AS w WHERE w.account = mine AND w.hash = named.hash)
      OFFSET 0) AS c
    WHERE NOT EXISTS (
      SELECT 1 FROM docsync.records AS r CROSS JOIN LATERAL unnest(r.blobs) AS kept (hash)
      WHERE r.account = mine AND kept.hash = c.hash)
  LOOP
    gone_upload := NULL;
    DELETE FROM docsync.blobs AS b WHERE b.account = mine AND b.hash = candidate
      RETURNING b.upload INTO gone_upload;
    IF gone_upload IS NOT NULL THEN
      DELETE FROM docsync.uploads AS u WHERE u.id = gone_upload AND u.account = mine;
    END IF;
    DELETE FROM docsync.wanted AS w WHERE w.account = mine AND w.hash = candidate;
  END LOOP;
END
$$;
