-- docsync hub schema, step 3: a damaged blob is repaired by the devices, without a person.
-- Released steps are never edited: a change is a new file.
--
-- Blobs stay append-only for devices (no UPDATE or DELETE grant). A device that fetched bytes
-- failing their hash reports it with report_damaged_blob(); the hub checks its own copy and,
-- only when that copy is damaged, drops it and lists the hash in docsync.wanted. Each device
-- looks at docsync.wanted at every sync round and puts the blob again if it holds verified
-- content; a replacement is accepted only when its bytes hash to the key (before_blob_insert).

-- Hashes the account's devices are asked to put again: dropped as damaged, or named by a record
-- and missing. Devices read their account's rows; only the functions below write.
CREATE TABLE docsync.wanted (
  account name NOT NULL DEFAULT docsync.current_account(),
  hash bytea NOT NULL,
  since timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account, hash)
);
ALTER TABLE docsync.wanted ENABLE ROW LEVEL SECURITY;
ALTER TABLE docsync.wanted FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON docsync.wanted
  USING (account = docsync.current_account()) WITH CHECK (account = docsync.current_account());
GRANT SELECT ON docsync.wanted TO PUBLIC;

-- Whether the chunks of an upload fail to make the blob `key` of `size` bytes: a chunk whose
-- data does not match the hash it was stored with, a gap in the chunk indexes, or sizes that do
-- not add up; and, for a blob small enough to assemble in memory (64 MiB), its SHA-256 itself.
-- A larger blob is judged by its chunks, each checked against its own SHA-256: PostgreSQL has no
-- incremental SHA-256, and a bytea cannot exceed 1 GiB. A good blob passes either way.
CREATE FUNCTION docsync.blob_is_damaged(target uuid, size bigint, key bytea) RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
  pieces bigint;
  total numeric;
  last integer;
  intact boolean;
  whole bytea;
BEGIN
  SELECT count(*), coalesce(sum(octet_length(c.data)), 0), max(c.index),
         coalesce(bool_and(sha256(c.data) = c.hash), true)
    INTO pieces, total, last, intact
    FROM docsync.chunks AS c WHERE c.upload = target;
  IF NOT intact OR total <> size OR pieces <> coalesce(last + 1, 0) THEN
    RETURN true;
  END IF;
  IF size <= 67108864 THEN
    SELECT coalesce(string_agg(c.data, ''::bytea ORDER BY c.index), ''::bytea) INTO whole
      FROM docsync.chunks AS c WHERE c.upload = target;
    RETURN sha256(whole) <> key;
  END IF;
  RETURN false;
END
$$;
REVOKE EXECUTE ON FUNCTION docsync.blob_is_damaged(uuid, bigint, bytea) FROM PUBLIC;

-- Called by a device whose fetch of `target` failed its check, or found it missing. Checks the
-- hub's own copy: a damaged one is dropped (with its chunks) and the hash listed as wanted; a
-- good one is left alone, so no device can destroy a good blob. A missing blob that a record of
-- the account names is listed as wanted too. Returns 'intact', 'wanted' or 'unknown' (no such
-- blob, and no record names it).
CREATE FUNCTION docsync.report_damaged_blob(target bytea) RETURNS text
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

-- As in step 2, and: a blob the hub wants (a replacement for a damaged one) must prove its
-- bytes before it is named, since the last one's were bad; naming it ends the want.
CREATE OR REPLACE FUNCTION docsync.before_blob_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
BEGIN
  IF octet_length(NEW.hash) <> 32 OR NEW.size < 0 THEN
    RAISE EXCEPTION 'a blob with a malformed hash or size' USING ERRCODE = 'check_violation';
  END IF;
  IF NOT EXISTS (
    SELECT 1 FROM docsync.uploads AS u
    WHERE u.id = NEW.upload AND u.account = NEW.account AND u.account = docsync.current_account())
    OR EXISTS (SELECT 1 FROM docsync.blobs AS b WHERE b.upload = NEW.upload)
  THEN
    RAISE EXCEPTION 'a blob must name an unfinished upload of its account'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF EXISTS (
    SELECT 1 FROM docsync.wanted AS w WHERE w.account = NEW.account AND w.hash = NEW.hash)
  THEN
    IF docsync.blob_is_damaged(NEW.upload, NEW.size, NEW.hash) THEN
      RAISE EXCEPTION 'a replacement blob whose bytes do not hash to its key'
        USING ERRCODE = 'data_corrupted';
    END IF;
    DELETE FROM docsync.wanted AS w WHERE w.account = NEW.account AND w.hash = NEW.hash;
  END IF;
  RETURN NEW;
END
$$;
