-- Step 10: prune and forget give back at once the space of the objects only their records
-- reached, as they do for blobs (step 9 kept every unreached object for a day). An object that
-- a recent node names stays, so that an upload whose nodes are in but whose record is not yet
-- still finds its chunks.

CREATE FUNCTION docsync.sweep_objects(released bytea[]) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
  mine name := docsync.current_account();
  freed bytea[];
BEGIN
  IF mine IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  -- What only the released records may have reached: their roots and everything below.
  WITH RECURSIVE below (id) AS (
    SELECT r.id FROM unnest(released) AS r (id)
    UNION
    SELECT child.id FROM below
      JOIN docsync.objects AS o ON o.account = mine AND o.id = below.id
      CROSS JOIN LATERAL unnest(o.refs) AS child (id)
  )
  SELECT coalesce(array_agg(below.id), '{}') INTO freed FROM below;
  WITH RECURSIVE reached (id) AS (
    (SELECT named.id FROM docsync.records AS r, unnest(r.blobs) AS named (id)
      WHERE r.account = mine
    UNION
    SELECT o.id FROM docsync.objects AS o
      WHERE o.account = mine AND o.refs IS NOT NULL
        AND o.touched >= now() - interval '1 day' AND NOT o.id = ANY(freed))
    UNION
    SELECT child.id FROM reached
      JOIN docsync.objects AS o ON o.account = mine AND o.id = reached.id
      CROSS JOIN LATERAL unnest(o.refs) AS child (id)
  )
  DELETE FROM docsync.objects AS o
    WHERE o.account = mine
      AND (o.touched < now() - interval '1 day' OR o.id = ANY(freed))
      AND NOT EXISTS (SELECT 1 FROM reached WHERE reached.id = o.id);
END
$$;
REVOKE EXECUTE ON FUNCTION docsync.sweep_objects(bytea[]) FROM PUBLIC;

-- Step 6's pruning, which sweeps what its records let go.
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
  PERFORM docsync.sweep_objects(candidates);
  RETURN removed;
END
$$;

-- Step 6's forgetting, which sweeps what its records let go.
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
  PERFORM docsync.sweep_objects(candidates);
  RETURN removed;
END
$$;

DROP FUNCTION docsync.sweep_objects();
