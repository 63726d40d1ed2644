-- docsync hub schema, step 6: a released blob is not wanted back. Released steps are never
-- edited: a change is a new file.
--
-- Step 5's pruning left a released blob in docsync.wanted when the hub had asked for it back
-- (its copy was damaged): a device still holding the content would then put it again, as a blob
-- that no record names and no later prune looks at, space the hub never gives back. Forgetting
-- already cleared the list. Both now drop the blobs no record names through one function, which
-- clears the list too.
--
-- docsync.drop_unnamed_blobs runs with its caller's rights (it is not SECURITY DEFINER) and no
-- device may execute it: it is reached only from prune_records and forget_records, inside
-- which the caller is the functions' owner. It acts on the account of the session's device.

CREATE FUNCTION docsync.drop_unnamed_blobs(candidates bytea[]) RETURNS void
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
END
$$;

REVOKE EXECUTE ON FUNCTION docsync.drop_unnamed_blobs(bytea[]) FROM PUBLIC;

-- Step 5's pruning, unchanged in what it releases; the blobs go through drop_unnamed_blobs.
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
  RETURN removed;
END
$$;

-- Step 5's forgetting, unchanged; the blobs go through drop_unnamed_blobs.
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
  RETURN removed;
END
$$;
