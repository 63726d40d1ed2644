-- docsync hub schema, step 5: erasures and forget. Released steps are never edited: a change is
-- a new file.
--
-- Devices learn at their sync round what the hub let go of, so that none lists a version whose
-- content is gone, nor keeps a document that `docsync forget` removed: docsync.erasures lists,
-- per account and by record id only (never a path or content), each record whose content
-- retention released and each record forgotten, read with a cursor as records are.
--
-- Devices still hold no UPDATE or DELETE on records or blobs. A device forgets through
-- docsync.forget_records, which deletes only records of the caller's account (whatever ids it
-- is given), the parent links they made, and the blobs of the account that no remaining record
-- names; it cannot reach another account's rows, and it lists what it removed. Forgetting a
-- document is a person's explicit act on their own library (`docsync forget`, confirmed on a
-- terminal), so it is not bounded by retention as pruning is.

CREATE TABLE docsync.erasures (
  seq bigserial PRIMARY KEY,
  account name NOT NULL,
  id bytea NOT NULL,
  forgotten boolean NOT NULL
);
CREATE INDEX erasures_account_seq ON docsync.erasures (account, seq);
ALTER TABLE docsync.erasures ENABLE ROW LEVEL SECURITY;
ALTER TABLE docsync.erasures FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON docsync.erasures
  USING (account = docsync.current_account()) WITH CHECK (account = docsync.current_account());

-- Up to `lim` erasures of the caller's account after `after`, in seq order. Why seq order is
-- commit order within an account: every writer of erasures takes the account's head lock
-- (docsync.lock_head) before it takes a seq, and holds it until it commits.
CREATE FUNCTION docsync.erasures_after(after bigint, lim integer)
RETURNS TABLE (seq bigint, id bytea, forgotten boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog
AS $$
  SELECT e.seq, e.id, e.forgotten FROM docsync.erasures AS e
  WHERE e.account = docsync.current_account() AND e.seq > after
  ORDER BY e.seq LIMIT lim
$$;

-- Step 4's pruning, unchanged in what it releases, now listing each record released.
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
  candidate bytea;
  gone_upload uuid;
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
  FOR candidate IN SELECT DISTINCT named.hash FROM unnest(candidates) AS named (hash) LOOP
    CONTINUE WHEN EXISTS (
      SELECT 1 FROM docsync.records AS r
      WHERE r.account = mine AND r.blobs @> ARRAY[candidate]);
    gone_upload := NULL;
    DELETE FROM docsync.blobs AS b WHERE b.account = mine AND b.hash = candidate
      RETURNING b.upload INTO gone_upload;
    IF gone_upload IS NOT NULL THEN
      DELETE FROM docsync.uploads AS u WHERE u.id = gone_upload AND u.account = mine;
    END IF;
  END LOOP;
  RETURN removed;
END
$$;

-- Deletes those of `targets` that are records of the caller's account, the parent links they
-- made, and the account's blobs (with their uploads and chunks) that no remaining record names,
-- and lists each record deleted; returns how many.
CREATE FUNCTION docsync.forget_records(targets bytea[]) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  mine name := docsync.current_account();
  doomed record;
  candidates bytea[] := '{}';
  candidate bytea;
  gone_upload uuid;
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
  FOR candidate IN SELECT DISTINCT named.hash FROM unnest(candidates) AS named (hash) LOOP
    CONTINUE WHEN EXISTS (
      SELECT 1 FROM docsync.records AS r
      WHERE r.account = mine AND r.blobs @> ARRAY[candidate]);
    gone_upload := NULL;
    DELETE FROM docsync.blobs AS b WHERE b.account = mine AND b.hash = candidate
      RETURNING b.upload INTO gone_upload;
    IF gone_upload IS NOT NULL THEN
      DELETE FROM docsync.uploads AS u WHERE u.id = gone_upload AND u.account = mine;
    END IF;
    DELETE FROM docsync.wanted AS w WHERE w.account = mine AND w.hash = candidate;
  END LOOP;
  RETURN removed;
END
$$;
