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
fuse_mode_before=""
fuse_conf_backup=""

ensure_test_user() {
  if ! id -u "$1" >/dev/null 2>&1; then
    useradd --create-home --user-group --shell /bin/bash --comment "docsync tests" "$1"
  fi
  local home
  home=$(getent passwd "$1" | cut -d: -f6)
  [[ -d $home ]] || install -d -o "$1" -g "$(id -gn "$1")" -m 0750 "$home"
}

setup_test_users() {
  ensure_test_user "$test_user"
  ensure_test_user "$test_other_user"
  export DOCSYNC_TEST_USER=$test_user DOCSYNC_TEST_OTHER_USER=$test_other_user

  # A stock Debian desktop's udev makes /dev/fuse mode 0666; these machines have 0600, and then
  # libfuse 3.14's fusermount3 cannot mount for any ordinary user. Open it as Debian does for the
  # run; restore_fuse_settings puts the old mode back.
  if [[ -z $fuse_mode_before ]]; then
    fuse_mode_before=$(stat -c %a /dev/fuse)
    chmod 0666 /dev/fuse
  fi

  # fusermount3 refuses allow_other to an ordinary user unless /etc/fuse.conf says
  # user_allow_other: the --allow-other test needs it. The file is restored afterwards.
  if [[ -z $fuse_conf_backup ]]; then
    fuse_conf_backup=$(mktemp /tmp/docsync-fuse.conf.XXXXXX)
    if [[ -e /etc/fuse.conf ]]; then
      cp -p /etc/fuse.conf "$fuse_conf_backup"
    else
      echo "absent" >"$fuse_conf_backup.absent"
    fi
    if ! grep -qx 'user_allow_other' /etc/fuse.conf 2>/dev/null; then
      printf '\n# Added by docsync Tools/test for its --allow-other test; removed after it.\nuser_allow_other\n' \
        >>/etc/fuse.conf
    fi
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
  if [[ -n $fuse_conf_backup ]]; then
    if [[ -e $fuse_conf_backup.absent ]]; then
      rm -f /etc/fuse.conf "$fuse_conf_backup.absent"
    else
      cp -p "$fuse_conf_backup" /etc/fuse.conf
    fi
    rm -f "$fuse_conf_backup"
    fuse_conf_backup=""
  fi
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
