-- docsync hub schema, step 9: content objects, the chunks and manifest nodes of content cut by
-- content (see docs/content-layer.md). Released steps are never edited: a change is a new file.
--
-- An object is small (a framed chunk of at most 256 KiB), so it is one row. The hub cannot
-- check an object's id (a device may key it), so it keeps its own SHA-256 of the stored bytes
-- ("check") to find its own damage, and a device's report drops a copy only when that check
-- fails. refs are the ids a node names, so that the objects records reach are known without
-- reading content. touched: the last put or presence check; an object no record reaches stays
-- a day after it, so that an upload whose record is not committed yet survives a prune.
-- Devices read their account's rows; only the functions below write.
CREATE TABLE docsync.objects (
  account name NOT NULL DEFAULT docsync.current_account(),
  id bytea NOT NULL,
  data bytea NOT NULL,
  "check" bytea NOT NULL,
  refs bytea[],
  touched timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account, id)
);
ALTER TABLE docsync.objects ENABLE ROW LEVEL SECURITY;
ALTER TABLE docsync.objects FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON docsync.objects
  USING (account = docsync.current_account()) WITH CHECK (account = docsync.current_account());
GRANT SELECT ON docsync.objects TO PUBLIC;

CREATE TABLE docsync.wanted_objects (
  account name NOT NULL DEFAULT docsync.current_account(),
  id bytea NOT NULL,
  since timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account, id)
);
ALTER TABLE docsync.wanted_objects ENABLE ROW LEVEL SECURITY;
ALTER TABLE docsync.wanted_objects FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON docsync.wanted_objects
  USING (account = docsync.current_account()) WITH CHECK (account = docsync.current_account());
GRANT SELECT ON docsync.wanted_objects TO PUBLIC;

-- The ids among `ids` the caller's account lacks, in the order asked; those it has count as
-- recent from now.
CREATE FUNCTION docsync.missing_objects(ids bytea[]) RETURNS SETOF bytea
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  mine name := docsync.current_account();
BEGIN
  IF mine IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  UPDATE docsync.objects AS o SET touched = now() WHERE o.account = mine AND o.id = ANY(ids);
  RETURN QUERY
    SELECT asked.id FROM unnest(ids) WITH ORDINALITY AS asked (id, position)
    WHERE NOT EXISTS (SELECT 1 FROM docsync.objects AS o WHERE o.account = mine AND o.id = asked.id)
    ORDER BY asked.position;
END
$$;

-- Stores objects in order, each unless present (then touched), all or none. An object's refs
-- (its children's ids, 32 bytes each, end to end in one bytea) must be stored already or come
-- earlier in the call; else 'an object names an absent one: <hex id>'.
CREATE FUNCTION docsync.put_objects(ids bytea[], datas bytea[], refs bytea[]) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  mine name := docsync.current_account();
  i integer;
  children bytea[];
  child bytea;
BEGIN
  IF mine IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
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
    INSERT INTO docsync.objects (account, id, data, "check", refs)
      VALUES (mine, ids[i], datas[i], sha256(datas[i]), children);
    DELETE FROM docsync.wanted_objects AS w WHERE w.account = mine AND w.id = ids[i];
  END LOOP;
END
$$;

-- A device read bytes that fail the object's id: the hub checks its own copy and drops it,
-- listing it as wanted, only when that copy fails the hub's check. True when it was dropped.
CREATE FUNCTION docsync.report_damaged_object(target bytea) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  mine name := docsync.current_account();
BEGIN
  IF mine IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  DELETE FROM docsync.objects AS o
    WHERE o.account = mine AND o.id = target AND sha256(o.data) <> o."check";
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  INSERT INTO docsync.wanted_objects (account, id) VALUES (mine, target) ON CONFLICT DO NOTHING;
  RETURN true;
END
$$;

-- Deletes the caller's objects that no record reaches (through nodes' refs) and that nobody put
-- or found present for a day. Reached only from prune_records and forget_records.
CREATE FUNCTION docsync.sweep_objects() RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
  mine name := docsync.current_account();
BEGIN
  IF mine IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  WITH RECURSIVE reached (id) AS (
    SELECT DISTINCT named.id FROM docsync.records AS r, unnest(r.blobs) AS named (id)
    WHERE r.account = mine
    UNION
    SELECT child.id FROM reached
      JOIN docsync.objects AS o ON o.account = mine AND o.id = reached.id
      CROSS JOIN LATERAL unnest(o.refs) AS child (id)
  )
  DELETE FROM docsync.objects AS o
    WHERE o.account = mine AND o.touched < now() - interval '1 day'
      AND NOT EXISTS (SELECT 1 FROM reached WHERE reached.id = o.id);
END
$$;
REVOKE EXECUTE ON FUNCTION docsync.sweep_objects() FROM PUBLIC;

-- Step 2's record check, which also accepts an object as the content a record names.
CREATE OR REPLACE FUNCTION docsync.before_record_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
SET plan_cache_mode = force_custom_plan
AS $$
BEGIN
  IF NEW.account IS DISTINCT FROM docsync.current_account() THEN
    RAISE EXCEPTION 'a record for another account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF octet_length(NEW.payload) > 65536 OR cardinality(NEW.blobs) > 16 THEN
    RAISE EXCEPTION 'a record larger than a version record can be' USING ERRCODE = 'check_violation';
  END IF;
  IF EXISTS (
    SELECT 1 FROM unnest(NEW.blobs) AS named (hash)
    WHERE octet_length(named.hash) <> 32 OR (
      NOT EXISTS (
        SELECT 1 FROM docsync.blobs AS b WHERE b.account = NEW.account AND b.hash = named.hash)
      AND NOT EXISTS (
        SELECT 1 FROM docsync.objects AS o WHERE o.account = NEW.account AND o.id = named.hash)))
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

-- Step 6's pruning, which then sweeps the objects no record reaches any more.
CREATE OR REPLACE FUNCTION docsync.prune_records(targets bytea[]) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  mine name := docsync.current_account();
  policy text;
  minimum_age bigint;
  now_ms bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  doomed record;
  candidates bytea[] := '{}';
  removed bigint := 0;
BEGIN
  IF mine IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  PERFORM docsync.lock_head();
  SELECT s.value INTO policy FROM docsync.settings AS s
    WHERE s.account = mine AND s.key = 'retention';
  IF policy IS NULL OR policy = 'staggered' THEN
    minimum_age := 30000;
  ELSE
    minimum_age := substring(policy FROM 6)::bigint;
  END IF;
  FOR doomed IN
    SELECT r.seq, r.id, r.blobs, (docsync.record_facts(r.payload)).modified_ms AS modified_ms
    FROM docsync.records AS r
    WHERE r.account = mine AND r.id = ANY(targets)
    ORDER BY r.seq
  LOOP
    CONTINUE WHEN cardinality(doomed.blobs) = 0;
    CONTINUE WHEN doomed.modified_ms IS NULL OR doomed.modified_ms > now_ms - minimum_age;
    CONTINUE WHEN NOT EXISTS (
      SELECT 1 FROM docsync.record_parents AS p WHERE p.account = mine AND p.parent = doomed.id);
    UPDATE docsync.records AS r SET blobs = '{}' WHERE r.account = mine AND r.seq = doomed.seq;
    INSERT INTO docsync.erasures (account, id, forgotten) VALUES (mine, doomed.id, false);
    candidates := candidates || doomed.blobs;
    removed := removed + 1;
  END LOOP;
  PERFORM docsync.drop_unnamed_blobs(candidates);
  PERFORM docsync.sweep_objects();
  RETURN removed;
END
$$;

-- Step 6's forgetting, which then sweeps the objects no record reaches any more.
CREATE OR REPLACE FUNCTION docsync.forget_records(targets bytea[]) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  mine name := docsync.current_account();
  doomed record;
  candidates bytea[] := '{}';
  removed bigint := 0;
BEGIN
  IF mine IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  PERFORM docsync.lock_head();
  FOR doomed IN
    SELECT r.seq, r.id, r.blobs FROM docsync.records AS r
    WHERE r.account = mine AND r.id = ANY(targets)
    ORDER BY r.seq
  LOOP
    DELETE FROM docsync.records AS r WHERE r.account = mine AND r.seq = doomed.seq;
    DELETE FROM docsync.record_parents AS p WHERE p.account = mine AND p.child = doomed.id;
    INSERT INTO docsync.erasures (account, id, forgotten) VALUES (mine, doomed.id, true);
    candidates := candidates || doomed.blobs;
    removed := removed + 1;
  END LOOP;
  PERFORM docsync.drop_unnamed_blobs(candidates);
  PERFORM docsync.sweep_objects();
  RETURN removed;
END
$$;
