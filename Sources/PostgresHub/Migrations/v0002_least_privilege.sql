-- docsync hub schema, step 2: a device may do what the protocol needs and nothing more.
-- Released steps are never edited: a change is a new file.
--
-- Step 1 granted UPDATE on heads and DELETE on uploads and chunks to PUBLIC, so one device of
-- an account (buggy or stolen) could reset the account's seq, so that every later append
-- failed, or delete stored chunks for good. From here on a device appends records, uploads
-- chunks and names finished blobs with INSERT, reads with SELECT, and does everything else
-- through the SECURITY DEFINER functions below, each of which checks what it touches.
--
-- The functions run as the role that applied this step (often a superuser, which row-level
-- security does not restrict), so each one names the caller's account explicitly. Inside them
-- current_user is that owner; session_user is still the device's login role, so the account
-- is now found from session_user. SET ROLE cannot change session_user, and a device role can
-- SET ROLE only to roles it is a member of anyway.

CREATE OR REPLACE FUNCTION docsync.current_account() RETURNS name
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
  SELECT rolname FROM pg_roles
  WHERE rolname LIKE 'docsync\_account\_%' AND NOT rolcanlogin
    AND pg_has_role(session_user, oid, 'MEMBER')
  ORDER BY rolname
  LIMIT 1
$$;

REVOKE INSERT, UPDATE ON docsync.heads FROM PUBLIC;
REVOKE DELETE ON docsync.uploads, docsync.chunks FROM PUBLIC;

-- The channel an account's devices LISTEN on: random, readable only by the account's devices
-- (row-level security), so another role cannot learn when the account writes. Step 1 notified
-- on the account role's name, which anyone can read in pg_roles.
CREATE TABLE docsync.channels (
  account name PRIMARY KEY,
  channel text NOT NULL
);
ALTER TABLE docsync.channels ENABLE ROW LEVEL SECURITY;
ALTER TABLE docsync.channels FORCE ROW LEVEL SECURITY;
CREATE POLICY own_account ON docsync.channels
  USING (account = docsync.current_account()) WITH CHECK (account = docsync.current_account());

-- The caller's channel, made on first use. NULL when the caller belongs to no account.
CREATE FUNCTION docsync.notify_channel() RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
  mine name := docsync.current_account();
  found text;
BEGIN
  IF mine IS NULL THEN
    RETURN NULL;
  END IF;
  INSERT INTO docsync.channels (account, channel)
    VALUES (mine, 'docsync_' || replace(gen_random_uuid()::text, '-', ''))
    ON CONFLICT (account) DO NOTHING;
  SELECT c.channel INTO found FROM docsync.channels AS c WHERE c.account = mine;
  RETURN found;
END
$$;

-- Locks the caller's head row until the transaction ends and returns its seq, so that an
-- append checks for known ids and inserts as one step with respect to the account's other
-- writers. Fails (NOT NULL) for a role in no account.
CREATE FUNCTION docsync.lock_head() RETURNS bigint
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
  INSERT INTO docsync.heads AS h (account, seq) VALUES (docsync.current_account(), 0)
    ON CONFLICT (account) DO UPDATE SET seq = h.seq
    RETURNING h.seq
$$;

-- As in step 1 (see there for why seq order is commit order), but running as the owner so that
-- devices need no rights on heads, and notifying on the account's secret channel.
CREATE OR REPLACE FUNCTION docsync.before_record_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
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
    WHERE octet_length(named.hash) <> 32 OR NOT EXISTS (
      SELECT 1 FROM docsync.blobs AS b WHERE b.account = NEW.account AND b.hash = named.hash))
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

-- A chunk belongs to an unfinished upload of the inserting account, and its data hashes to the
-- hash it is stored with: nobody can add to, or damage, a blob that is already named.
CREATE FUNCTION docsync.before_chunk_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM docsync.uploads AS u
    WHERE u.id = NEW.upload AND u.account = docsync.current_account()
      AND u.account = NEW.account)
  THEN
    RAISE EXCEPTION 'a chunk for an upload of another account' USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF EXISTS (SELECT 1 FROM docsync.blobs AS b WHERE b.upload = NEW.upload) THEN
    RAISE EXCEPTION 'a chunk for a finished upload' USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF sha256(NEW.data) <> NEW.hash THEN
    RAISE EXCEPTION 'a chunk whose data does not match its hash' USING ERRCODE = 'data_corrupted';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER check_chunk BEFORE INSERT ON docsync.chunks
  FOR EACH ROW EXECUTE FUNCTION docsync.before_chunk_insert();

-- A blob names an upload of its own account that no other blob names.
CREATE FUNCTION docsync.before_blob_insert() RETURNS trigger
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
  RETURN NEW;
END
$$;
CREATE TRIGGER check_blob BEFORE INSERT ON docsync.blobs
  FOR EACH ROW EXECUTE FUNCTION docsync.before_blob_insert();

-- Deletes one upload of the caller's account that no blob names (a transfer that failed, or a
-- blob another device finished first), with its chunks. A finished upload is never deleted.
CREATE FUNCTION docsync.discard_upload(target uuid) RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
  DELETE FROM docsync.uploads AS u
  WHERE u.id = target AND u.account = docsync.current_account()
    AND NOT EXISTS (SELECT 1 FROM docsync.blobs AS b WHERE b.upload = u.id)
$$;

-- Deletes the caller's account's uploads that no blob names and that started more than a day
-- ago: transfers abandoned by a device that lost its connection. Devices call it before each
-- upload. Returns how many went.
CREATE FUNCTION docsync.sweep_uploads() RETURNS bigint
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog
AS $$
  WITH gone AS (
    DELETE FROM docsync.uploads AS u
    WHERE u.account = docsync.current_account() AND u.started < now() - interval '1 day'
      AND NOT EXISTS (SELECT 1 FROM docsync.blobs AS b WHERE b.upload = u.id)
    RETURNING 1)
  SELECT count(*) FROM gone
$$;

-- Functions are executable by PUBLIC, as PostgreSQL makes them: each one acts only on the
-- caller's account, and a role in no account has none. docsync.channels has no grants: devices
-- reach it only through notify_channel().
