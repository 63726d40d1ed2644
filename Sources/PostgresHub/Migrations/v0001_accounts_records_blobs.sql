-- docsync hub schema, step 1. Released steps are never edited: a change is a new file.
-- The runner (PostgresHub.migrate, Tools/postgres-account) has created the schema docsync and
-- docsync.migrations, holds the migration advisory lock, and records this step when it commits.

-- The account of the connected role: the one NOLOGIN role named docsync_account_* that the
-- current role is a member of. Row-level security compares every row's account with it, so a
-- device role sees and writes only its own account's rows whatever SQL it sends. NULL (no
-- account) matches nothing.
CREATE FUNCTION docsync.current_account() RETURNS name
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
  SELECT rolname FROM pg_roles
  WHERE rolname LIKE 'docsync\_account\_%' AND NOT rolcanlogin
    AND pg_has_role(current_user, oid, 'MEMBER')
  ORDER BY rolname
  LIMIT 1
$$;

-- One row per account: the last seq given out. See before_record_insert.
CREATE TABLE docsync.heads (
  account name PRIMARY KEY DEFAULT docsync.current_account(),
  seq bigint NOT NULL
);

CREATE TABLE docsync.records (
  account name NOT NULL DEFAULT docsync.current_account(),
  seq bigint NOT NULL,
  id bytea NOT NULL,
  payload bytea NOT NULL,
  blobs bytea[] NOT NULL,
  PRIMARY KEY (account, seq),
  UNIQUE (account, id)
);

-- A blob goes up in chunks, each in its own statement, under an upload; it exists once a row in
-- blobs names the upload. Blobs belong to an account: another account cannot even learn that a
-- hash is stored.
CREATE TABLE docsync.uploads (
  id uuid PRIMARY KEY,
  account name NOT NULL DEFAULT docsync.current_account(),
  hash bytea NOT NULL,
  started timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE docsync.chunks (
  account name NOT NULL DEFAULT docsync.current_account(),
  upload uuid NOT NULL REFERENCES docsync.uploads (id) ON DELETE CASCADE,
  index integer NOT NULL,
  hash bytea NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (upload, index)
);
CREATE TABLE docsync.blobs (
  account name NOT NULL DEFAULT docsync.current_account(),
  hash bytea NOT NULL,
  size bigint NOT NULL,
  upload uuid NOT NULL REFERENCES docsync.uploads (id),
  PRIMARY KEY (account, hash)
);

-- Every record insert, whoever sends it, takes its seq from the account's head row. The upsert
-- locks that row until the inserting transaction ends, so a transaction holding seq N commits or
-- aborts before any other can take N + 1: seq order is commit order, and a reader paging by
-- "seq > cursor" never passes a record that becomes visible later. The same trigger refuses a
-- record naming an absent blob and wakes the account's listeners at commit.
CREATE FUNCTION docsync.before_record_insert() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
  IF EXISTS (
    SELECT 1 FROM unnest(NEW.blobs) AS named (hash)
    WHERE NOT EXISTS (
      SELECT 1 FROM docsync.blobs AS b WHERE b.account = NEW.account AND b.hash = named.hash))
  THEN
    RAISE EXCEPTION 'a record names a blob the hub does not have'
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  INSERT INTO docsync.heads AS h (account, seq) VALUES (NEW.account, 1)
    ON CONFLICT (account) DO UPDATE SET seq = h.seq + 1
    RETURNING h.seq INTO NEW.seq;
  PERFORM pg_notify(NEW.account, '');
  RETURN NEW;
END
$$;
CREATE TRIGGER assign_seq BEFORE INSERT ON docsync.records
  FOR EACH ROW EXECUTE FUNCTION docsync.before_record_insert();

ALTER TABLE docsync.heads ENABLE ROW LEVEL SECURITY;
ALTER TABLE docsync.records ENABLE ROW LEVEL SECURITY;
ALTER TABLE docsync.uploads ENABLE ROW LEVEL SECURITY;
ALTER TABLE docsync.chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE docsync.blobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE docsync.heads FORCE ROW LEVEL SECURITY;
ALTER TABLE docsync.records FORCE ROW LEVEL SECURITY;
ALTER TABLE docsync.uploads FORCE ROW LEVEL SECURITY;
ALTER TABLE docsync.chunks FORCE ROW LEVEL SECURITY;
ALTER TABLE docsync.blobs FORCE ROW LEVEL SECURITY;

CREATE POLICY own_account ON docsync.heads
  USING (account = docsync.current_account()) WITH CHECK (account = docsync.current_account());
CREATE POLICY own_account ON docsync.records
  USING (account = docsync.current_account()) WITH CHECK (account = docsync.current_account());
CREATE POLICY own_account ON docsync.uploads
  USING (account = docsync.current_account()) WITH CHECK (account = docsync.current_account());
CREATE POLICY own_account ON docsync.chunks
  USING (account = docsync.current_account()) WITH CHECK (account = docsync.current_account());
CREATE POLICY own_account ON docsync.blobs
  USING (account = docsync.current_account()) WITH CHECK (account = docsync.current_account());

-- Granted to PUBLIC because the policies, not the grants, separate accounts: a role in no
-- account matches no row. Records and blobs are append-only: no UPDATE or DELETE for anyone.
GRANT USAGE ON SCHEMA docsync TO PUBLIC;
GRANT SELECT ON docsync.migrations TO PUBLIC;
GRANT SELECT, INSERT, UPDATE ON docsync.heads TO PUBLIC;
GRANT SELECT, INSERT ON docsync.records, docsync.blobs TO PUBLIC;
GRANT SELECT, INSERT, DELETE ON docsync.uploads, docsync.chunks TO PUBLIC;
