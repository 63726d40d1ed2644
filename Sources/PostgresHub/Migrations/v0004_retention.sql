-- docsync hub schema, step 4: retention. Released steps are never edited: a change is a new
-- file. (Step 3 is blob repair, from another change.)
--
-- Devices let go of the content of the earlier versions that the library's retention releases
-- (DocumentModel's RetentionPolicy). Records stay: they are small, and they carry the ancestry
-- every device needs to tell heads apart. Devices still have no UPDATE or DELETE on records or
-- blobs. A device prunes through docsync.prune_records, which acts only where retention allows,
-- whatever ids it is given: on records of the caller's account that another record names as a
-- parent (never a head, so never a current or conflict version) and that are older than the
-- smallest age at which the account's retention lets a superseded version go (keep N: N;
-- staggered: 30 s, its finest interval; which one of several close versions staggered keeps
-- is the devices' choice, made the same way on every device). Such a record stops naming its
-- blobs, and the blobs no record names any more go, with their uploads and chunks.

-- The parents and the modification time (wall-clock milliseconds) of a version record, read
-- from its canonical encoding (DocumentModel's CanonicalEncoding): a length-prefixed magic, the
-- kind, the path (a count, then length-prefixed components), the parents (a count, then 32
-- bytes each), the content (file: hash, size, executable bit; symlink: hash, size), then the
-- time. Big-endian integers. NULLs for bytes that are not a version record.
CREATE FUNCTION docsync.record_facts(payload bytea, OUT parents bytea[], OUT modified_ms bigint)
LANGUAGE plpgsql IMMUTABLE STRICT
SET search_path = pg_catalog
AS $$
DECLARE
  pos integer := 0;
  count integer;
  kind integer;
  value bigint;
  i integer;
BEGIN
  -- Big-endian unsigned integer of `width` bytes at `pos`, as a loop over get_byte.
  value := 0;
  FOR i IN 0..3 LOOP value := value * 256 + get_byte(payload, pos + i); END LOOP;
  pos := pos + 4 + value::integer;
  kind := get_byte(payload, pos);
  pos := pos + 1;
  value := 0;
  FOR i IN 0..3 LOOP value := value * 256 + get_byte(payload, pos + i); END LOOP;
  pos := pos + 4;
  FOR count IN 1..value LOOP
    value := 0;
    FOR i IN 0..3 LOOP value := value * 256 + get_byte(payload, pos + i); END LOOP;
    pos := pos + 4 + value::integer;
  END LOOP;
  value := 0;
  FOR i IN 0..3 LOOP value := value * 256 + get_byte(payload, pos + i); END LOOP;
  pos := pos + 4;
  parents := '{}';
  FOR count IN 1..value LOOP
    parents := parents || substring(payload FROM pos + 1 FOR 32);
    pos := pos + 32;
  END LOOP;
  IF kind = 1 THEN
    pos := pos + 41;
  ELSIF kind = 3 THEN
    pos := pos + 40;
  END IF;
  modified_ms := 0;
  FOR i IN 0..7 LOOP modified_ms := modified_ms * 256 + get_byte(payload, pos + i); END LOOP;
EXCEPTION WHEN others THEN
  parents := NULL;
  modified_ms := NULL;
END
$$;

-- Which record names which as a parent, per account: filled from each record's own bytes as it
-- is inserted, so that "superseded" is the hub's fact, not a device's claim.
CREATE TABLE docsync.record_parents (
  account name NOT NULL,
  parent bytea NOT NULL,
  child bytea NOT NULL,
  PRIMARY KEY (account, parent, child)
);
ALTER TABLE docsync.record_parents ENABLE ROW LEVEL SECURITY;
ALTER TABLE docsync.record_parents FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON docsync.record_parents
  USING (account = docsync.current_account()) WITH CHECK (account = docsync.current_account());

INSERT INTO docsync.record_parents (account, parent, child)
  SELECT r.account, named.parent, r.id
  FROM docsync.records AS r,
    unnest((docsync.record_facts(r.payload)).parents) AS named (parent)
  ON CONFLICT DO NOTHING;

CREATE FUNCTION docsync.after_record_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
BEGIN
  INSERT INTO docsync.record_parents (account, parent, child)
    SELECT NEW.account, named.parent, NEW.id
    FROM unnest((docsync.record_facts(NEW.payload)).parents) AS named (parent)
    ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;
CREATE TRIGGER note_parents AFTER INSERT ON docsync.records
  FOR EACH ROW EXECUTE FUNCTION docsync.after_record_insert();

-- Finding whether a remaining record still names a blob, without reading every record.
CREATE INDEX records_blobs ON docsync.records USING gin (blobs);

-- Library-wide settings, one row per account and key; `retention` holds
-- RetentionPolicy.serialized. Read and written through the functions below only.
CREATE TABLE docsync.settings (
  account name NOT NULL,
  key text NOT NULL,
  value text NOT NULL,
  PRIMARY KEY (account, key)
);
ALTER TABLE docsync.settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE docsync.settings FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON docsync.settings
  USING (account = docsync.current_account()) WITH CHECK (account = docsync.current_account());

-- The caller's account's retention; NULL when none was set (the default, staggered).
CREATE FUNCTION docsync.retention() RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog
AS $$
  SELECT s.value FROM docsync.settings AS s
  WHERE s.account = docsync.current_account() AND s.key = 'retention'
$$;

CREATE FUNCTION docsync.set_retention(policy text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  mine name := docsync.current_account();
BEGIN
  IF mine IS NULL THEN
    RAISE EXCEPTION 'a role in no account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF policy !~ '^(staggered|keep [0-9]{1,15})$' THEN
    RAISE EXCEPTION 'a malformed retention setting' USING ERRCODE = 'check_violation';
  END IF;
  INSERT INTO docsync.settings AS s (account, key, value) VALUES (mine, 'retention', policy)
    ON CONFLICT (account, key) DO UPDATE SET value = EXCLUDED.value;
END
$$;

-- Releases the content of those of `targets` that retention lets go (see the top of this file)
-- and deletes the blobs no record names any more; returns how many records it released.
CREATE FUNCTION docsync.prune_records(targets bytea[]) RETURNS bigint
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
  LOOP
    CONTINUE WHEN cardinality(doomed.blobs) = 0;
    CONTINUE WHEN doomed.modified_ms IS NULL OR doomed.modified_ms > now_ms - minimum_age;
    CONTINUE WHEN NOT EXISTS (
      SELECT 1 FROM docsync.record_parents AS p WHERE p.account = mine AND p.parent = doomed.id);
    UPDATE docsync.records AS r SET blobs = '{}' WHERE r.account = mine AND r.seq = doomed.seq;
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
