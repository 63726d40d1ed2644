-- Step 15: blobs' chunked twins (docs/content-layer.md, "Upgrade"). A record made before chunks
-- (or a merge) names only its content's SHA-256, and records never change; `docsync hub init`
-- cuts each blob a record names into the chunk and node objects a device would make of the
-- same bytes, puts them through the devices' own object functions, and then, in one
-- transaction under the account's head lock, records the twin and drops the blob. Devices ask
-- docsync.blob_roots for the roots of content whose record names none, and fetch it as chunks.
--
-- - The administrator's process converts, never a device. To do it through the same functions
--   and policies as a device of the account (put_objects' checks, row-level security), it acts
--   as one account per transaction: docsync.current_account() honours the transaction-local
--   setting docsync.acting_account, but only in a session of the schema's owner (or a
--   superuser), whom no policy could stop anyway. A device that sets it changes nothing.
-- - A twin lives while a record names its blob: prune and forget drop it with the last one, and
--   the sweep marks from twins' roots as from records' roots. A blob put again after its
--   conversion (a merge's content, an old path) is harmless: the next conversion drops it.
-- - Devices read twins only through docsync.blob_roots, which filters by their account; the
--   table is keyed like step 14's objects, by the account's number.
-- - A docsync that does not know twins would find a converted blob missing and ask every
--   device to put it again: devices_from.
UPDATE docsync.migrations SET devices_from = 15 WHERE version = 15;

CREATE OR REPLACE FUNCTION docsync.current_account() RETURNS name
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
  SELECT coalesce(
    (SELECT r.rolname FROM pg_roles AS r
      WHERE r.rolname = nullif(current_setting('docsync.acting_account', true), '')
        AND r.rolname LIKE 'docsync\_account\_%' AND NOT r.rolcanlogin
        AND pg_has_role(session_user,
          (SELECT n.nspowner FROM pg_namespace AS n WHERE n.nspname = 'docsync'), 'MEMBER')),
    (SELECT r.rolname FROM pg_roles AS r
      WHERE r.rolname LIKE 'docsync\_account\_%' AND NOT r.rolcanlogin
        AND pg_has_role(session_user, r.oid, 'MEMBER')
      ORDER BY r.rolname
      LIMIT 1))
$$;

-- hash: a blob's SHA-256 that a record names; root: its twin's root object id (what the sweep
-- marks from); reference: DocumentModel's ContentRoot as ContentModel encodes it (format,
-- height, id, size), what devices are told.
CREATE TABLE docsync.blob_twins (
  account integer NOT NULL DEFAULT docsync.current_account_number(),
  hash bytea NOT NULL,
  root bytea NOT NULL,
  reference bytea NOT NULL,
  PRIMARY KEY (account, hash)
);
ALTER TABLE docsync.blob_twins ENABLE ROW LEVEL SECURITY;
ALTER TABLE docsync.blob_twins FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON docsync.blob_twins
  USING (account = docsync.current_account_number())
  WITH CHECK (account = docsync.current_account_number());
REVOKE ALL ON docsync.blob_twins FROM PUBLIC;

-- The caller's twins among `hashes`: each hash and its reference.
CREATE FUNCTION docsync.blob_roots(hashes bytea[])
RETURNS TABLE (hash bytea, reference bytea)
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
    SELECT t.hash, t.reference FROM unnest(hashes) AS asked (hash)
    JOIN docsync.blob_twins AS t ON t.account = mine AND t.hash = asked.hash;
END
$$;

-- The administrator's conversion: blobs of the acting account that a record names, in the order
-- of their hashes after `after`, with the twin a blob already has (put again since).
CREATE FUNCTION docsync.twin_candidates(after bytea, max integer)
RETURNS TABLE (hash bytea, size bigint, upload uuid, reference bytea)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
  mine name := docsync.current_account();
BEGIN
  IF mine IS NULL THEN
    RAISE EXCEPTION 'no acting account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN QUERY
    SELECT b.hash, b.size, b.upload, t.reference
    FROM docsync.blobs AS b
    LEFT JOIN docsync.blob_twins AS t
      ON t.account = docsync.current_account_number() AND t.hash = b.hash
    WHERE b.account = mine AND b.hash > after
      AND EXISTS (
        SELECT 1 FROM docsync.records AS r WHERE r.account = mine AND b.hash = ANY (r.blobs))
    ORDER BY b.hash
    LIMIT max;
END
$$;
REVOKE EXECUTE ON FUNCTION docsync.twin_candidates(bytea, integer) FROM PUBLIC;

-- Exchanges the blob `target`, as read (its upload), for its twin, whose root object must be
-- there (a hub that has a node has everything under it); false, changing nothing, when the
-- blob changed meanwhile (pruned, damaged and put again) or no record names it any more.
-- Under the account's head lock, as prune and forget run.
CREATE FUNCTION docsync.install_twin(target bytea, read_upload uuid, root bytea, reference bytea)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
  mine name := docsync.current_account();
  number integer := docsync.current_account_number();
BEGIN
  IF mine IS NULL OR number IS NULL THEN
    RAISE EXCEPTION 'no acting account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  PERFORM docsync.lock_head();
  IF NOT EXISTS (
      SELECT 1 FROM docsync.blobs AS b
      WHERE b.account = mine AND b.hash = target AND b.upload = read_upload)
    OR NOT EXISTS (
      SELECT 1 FROM docsync.records AS r WHERE r.account = mine AND target = ANY (r.blobs))
    OR NOT EXISTS (
      SELECT 1 FROM docsync.objects AS o
      WHERE o.account = number AND o.key = docsync.object_key(root)
        AND o.rest = substring(root FROM 9))
  THEN
    RETURN false;
  END IF;
  INSERT INTO docsync.blob_twins (account, hash, root, reference)
    VALUES (number, target, root, reference) ON CONFLICT DO NOTHING;
  DELETE FROM docsync.blobs AS b WHERE b.account = mine AND b.hash = target;
  DELETE FROM docsync.uploads AS u WHERE u.account = mine AND u.id = read_upload;
  RETURN true;
END
$$;
REVOKE EXECUTE ON FUNCTION docsync.install_twin(bytea, uuid, bytea, bytea) FROM PUBLIC;

-- The twins among `candidates` that no record names any more go; returns their roots, for the
-- sweep to free at once. Called by prune and forget, holding the head lock.
CREATE FUNCTION docsync.drop_unnamed_twins(candidates bytea[]) RETURNS bytea[]
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
  mine name := docsync.current_account();
  number integer := docsync.current_account_number();
  roots bytea[];
BEGIN
  IF mine IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  WITH gone AS (
    DELETE FROM docsync.blob_twins AS t
    WHERE t.account = number AND t.hash = ANY (candidates)
      AND NOT EXISTS (
        SELECT 1 FROM docsync.records AS r WHERE r.account = mine AND t.hash = ANY (r.blobs))
    RETURNING t.root)
  SELECT coalesce(array_agg(gone.root), '{}') INTO roots FROM gone;
  RETURN roots;
END
$$;
REVOKE EXECUTE ON FUNCTION docsync.drop_unnamed_twins(bytea[]) FROM PUBLIC;

-- Step 14's sweep, with the twins' roots reached as the records' roots are.
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
    SELECT docsync.object_key(t.root) FROM docsync.blob_twins AS t WHERE t.account = number
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
      AND (doomed.freed OR o.touched < cutoff)
      AND NOT EXISTS (SELECT 1 FROM reached WHERE reached.key = doomed.key);
END
$$;

-- Step 10's pruning, which also drops the twins its records let go and frees their objects.
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
  PERFORM docsync.sweep_objects(candidates || docsync.drop_unnamed_twins(candidates));
  RETURN removed;
END
$$;

-- Step 10's forgetting, likewise.
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
  PERFORM docsync.sweep_objects(candidates || docsync.drop_unnamed_twins(candidates));
  RETURN removed;
END
$$;

-- Step 14's record check: a record may name a converted blob.
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
          AND o.rest = substring(named.hash FROM 9))
      AND NOT EXISTS (
        SELECT 1 FROM docsync.blob_twins AS t WHERE t.account = number AND t.hash = named.hash)))
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

-- Step 3's report: a converted blob is whole as its twin, nothing to ask devices for.
CREATE OR REPLACE FUNCTION docsync.report_damaged_blob(target bytea) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  mine name := docsync.current_account();
  stored record;
BEGIN
  IF mine IS NULL OR octet_length(target) <> 32 THEN
    RETURN 'unknown';
  END IF;
  SELECT b.upload, b.size INTO stored FROM docsync.blobs AS b
    WHERE b.account = mine AND b.hash = target FOR UPDATE;
  IF FOUND THEN
    IF NOT docsync.blob_is_damaged(stored.upload, stored.size, target) THEN
      RETURN 'intact';
    END IF;
    DELETE FROM docsync.blobs AS b WHERE b.account = mine AND b.hash = target;
    DELETE FROM docsync.uploads AS u WHERE u.id = stored.upload;
  ELSIF EXISTS (
    SELECT 1 FROM docsync.blob_twins AS t
    WHERE t.account = docsync.current_account_number() AND t.hash = target)
  THEN
    RETURN 'intact';
  ELSIF NOT EXISTS (SELECT 1 FROM docsync.wanted AS w WHERE w.account = mine AND w.hash = target)
    AND NOT EXISTS (
      SELECT 1 FROM docsync.records AS r WHERE r.account = mine AND target = ANY (r.blobs))
  THEN
    RETURN 'unknown';
  END IF;
  INSERT INTO docsync.wanted (account, hash) VALUES (mine, target) ON CONFLICT DO NOTHING;
  RETURN 'wanted';
END
$$;
