# Sourced by Tools/test and Tools/bench (bash, run as root): the ordinary accounts that the
# mount tests and the bench run docsync as, and the FUSE settings such accounts need.
#
# People mount their documents as themselves, never as root, and root skips every permission
# check that `default_permissions` makes the kernel apply. So the mount and end-to-end tests run
# as `docsync-user`, and the `--allow-other` test reaches that user's mount as `docsync-other`.
#
#   setup_test_users     creates both accounts (idempotent), opens /dev/fuse to them and allows
#                        allow_other; exports DOCSYNC_TEST_USER and DOCSYNC_TEST_OTHER_USER
#   restore_fuse_settings  puts /dev/fuse's mode and /etc/fuse.conf back as they were
#   as_test_user CMD...  runs CMD as docsync-user, with its home, in the current folder

readonly test_user=docsync-user
readonly test_other_user=docsync-other
readonly fuse_conf_marker="# docsync tests: user_allow_other for the run, removed after it"
fuse_mode_before=""
fuse_conf_added=""

ensure_test_user() {
  if ! id -u "$1" >/dev/null 2>&1; then
    useradd --create-home --user-group --shell /bin/bash --comment "docsync tests" "$1"
  fi
  local home
  home=$(getent passwd "$1" | cut -d: -f6)
  [[ -d $home ]] || install -d -o "$1" -g "$(id -gn "$1")" -m 0750 "$home"
}

# Each setting is put back only by the run that changed it, and only what it changed: a run
# that finds them already in place (another run's, or the machine's own) leaves them be.
setup_test_users() {
  ensure_test_user "$test_user"
  ensure_test_user "$test_other_user"
  export DOCSYNC_TEST_USER=$test_user DOCSYNC_TEST_OTHER_USER=$test_other_user

  # A stock Debian desktop's udev makes /dev/fuse mode 0666; these machines have 0600, and then
  # libfuse 3.14's fusermount3 cannot mount for any ordinary user. Open it as Debian does for the
  # run; restore_fuse_settings puts the old mode back.
  local mode
  mode=$(stat -c %a /dev/fuse)
  if [[ $mode != 666 && -z $fuse_mode_before ]]; then
    fuse_mode_before=$mode
    chmod 0666 /dev/fuse
  fi

  # fusermount3 refuses allow_other to an ordinary user unless /etc/fuse.conf says
  # user_allow_other: the --allow-other test needs it. restore_fuse_settings takes it out.
  if ! grep -qx 'user_allow_other' /etc/fuse.conf 2>/dev/null; then
    [[ -e /etc/fuse.conf ]] && fuse_conf_added=line || fuse_conf_added=file
    printf '%s\nuser_allow_other\n' "$fuse_conf_marker" >>/etc/fuse.conf
  fi

  # Every test run (root's and the user's) makes its folders here, as in /tmp.
  local root=${DOCSYNC_TESTS_ROOT:-/var/tmp/docsync-tests}
  install -d -m 1777 "$root"
  chmod 1777 "$root"
}

restore_fuse_settings() {
  if [[ -n $fuse_mode_before ]]; then
    chmod "$fuse_mode_before" /dev/fuse || true
    fuse_mode_before=""
  fi
  case $fuse_conf_added in
    line) sed -i "\%^$fuse_conf_marker\$%,+1d" /etc/fuse.conf ;;
    file) rm -f /etc/fuse.conf ;;
  esac
  fuse_conf_added=""
}

# Folders on the way to the build that the test user may not enter, with their modes before.
search_opened=()

# Gives o+x to each folder from / down to $1 that the test user cannot enter.
open_search_path() {
  local folder="" part
  local -a parts
  IFS=/ read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    [[ -n $part ]] || continue
    folder+="/$part"
    if ! as_test_user test -x "$folder"; then
      search_opened+=("$(stat -c %a "$folder") $folder")
      chmod o+x "$folder"
    fi
  done
}

restore_search_permissions() {
  local entry
  for entry in "${search_opened[@]}"; do chmod "${entry%% *}" "${entry#* }" || true; done
  search_opened=()
}

# runuser keeps the environment but for HOME, SHELL, USER and LOGNAME (set to the user's), so
# the cluster's variables and DOCSYNC_BIN reach the tests; TMPDIR would point at root's.
as_test_user() {
  runuser -u "$test_user" -- env -u TMPDIR "$@"
}
