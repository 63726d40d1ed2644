# Sourced by Tools/test and Tools/bench (bash, run as root): start_postgres and stop_postgres.
#
# A private PostgreSQL cluster for the PostgresHub tests: a temporary folder, a free loopback
# port, TLS with a CA made here, fsync off (nothing in it outlives the run). initdb refuses root,
# so the cluster runs as the postgres user that Debian's package creates.
pg_bin=/usr/lib/postgresql/15/bin
pg_dir=""
stop_postgres() {
  [[ -n $pg_dir ]] || return 0
  runuser -u postgres -- "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$pg_dir"
  pg_dir=""
}
start_postgres() {
  pg_dir=$(mktemp -d /tmp/docsync-postgres.XXXXXX)
  chown postgres: "$pg_dir"
  # The tests that run as an ordinary user (Tools/test-users.sh) verify the server against
  # ca.crt: they may reach that one file by name; the keys and the data stay private.
  chmod 0711 "$pg_dir"
  local password port
  password=$(openssl rand -hex 16)
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  (
    cd "$pg_dir"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=docsync test CA" \
      -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
      -keyout server.key -out server.csr 2>/dev/null
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
      -extfile <(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost') -out server.crt 2>/dev/null
    chown postgres: server.key server.crt && chmod 600 server.key ca.key
    chmod 644 ca.crt
    (umask 077 && printf '%s\n' "$password" >pwfile) && chown postgres: pwfile
  )
  runuser -u postgres -- "$pg_bin/initdb" -D "$pg_dir/data" -U docsync_admin \
    --pwfile="$pg_dir/pwfile" -A scram-sha-256 >/dev/null
  runuser -u postgres -- "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/log" -w -t 60 \
    -o "-k $pg_dir -p $port -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off -c ssl=on -c ssl_cert_file=$pg_dir/server.crt -c ssl_key_file=$pg_dir/server.key" \
    start >/dev/null
  export DOCSYNC_TEST_POSTGRES="postgres://docsync_admin:$password@127.0.0.1:$port/postgres"
  export DOCSYNC_TEST_POSTGRES_CA="$pg_dir/ca.crt"
}
