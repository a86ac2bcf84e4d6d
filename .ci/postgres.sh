# shellcheck shell=bash
# PostgreSQL for the tests. Sourced by .ci/run (bash, as root, `set -euo pipefail`); usable by hand:
#
#   source .ci/postgres.sh && install_pgvector && start_postgres
#
# install_pgvector  makes the pgvector extension available to the server (idempotent; a warning,
#                   not a failure, when it cannot).
# start_postgres    starts a throwaway cluster as user postgres on 127.0.0.1 and a free port, with
#                   password (scram-sha-256) authentication, creates the databases `mnemo_test`
#                   and `mnemo_vector` (with `CREATE EXTENSION vector` when available), exports
#                     MNEMO_TEST_PG_URL        postgres://postgres:<password>@127.0.0.1:<port>/mnemo_test
#                     MNEMO_TEST_PGVECTOR_URL  the same for mnemo_vector; only when pgvector works
#                   and stops the server and removes its directory on EXIT (chained to any trap).
#
# The server is the highest PostgreSQL major installed from Debian's packages; when none is,
# `postgresql` is installed with apt. Nothing here names a package mirror: pgvector's source is
# fetched from the mirror the machine's own apt configuration already uses.

# The Debian release whose source package of pgvector is built when the machine's own release has
# no binary package for the installed server.
MNEMO_PGVECTOR_SOURCE_SUITE="${MNEMO_PGVECTOR_SOURCE_SUITE:-trixie}"

_pg_say() { printf 'postgres.sh: %s\n' "$*"; }
_pg_warn() { printf 'postgres.sh: WARNING: %s\n' "$*" >&2; }
_pg_now_ms() { date +%s%3N; }
_pg_secs_since() { local t=$(($(_pg_now_ms) - $1)); printf '%d.%d' $((t / 1000)) $((t % 1000 / 100)); }

# Highest installed PostgreSQL major with a server (initdb); empty when there is none.
_pg_major() {
  local d m best=''
  for d in /usr/lib/postgresql/*/bin/initdb; do
    [ -x "$d" ] || continue
    m="${d#/usr/lib/postgresql/}"
    m="${m%%/*}"
    case "$m" in '' | *[!0-9]*) continue ;; esac
    if [ -z "$best" ] || [ "$m" -gt "$best" ]; then best="$m"; fi
  done
  printf '%s' "$best"
}

_PG_APT_UPDATED=''
_pg_apt_update() {
  [ -n "$_PG_APT_UPDATED" ] && return 0
  DEBIAN_FRONTEND=noninteractive apt-get -q update || return 1
  _PG_APT_UPDATED=1
}

_pg_apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    -o DPkg::Lock::Timeout=300 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "$@" </dev/null
}

# Whether apt has an installable version of a package.
_pg_apt_has() {
  LC_ALL=C apt-cache policy "$1" 2>/dev/null | grep -E '^ +Candidate: [^(]' >/dev/null
}

# Makes sure the server binaries exist (installs Debian's `postgresql` when they do not).
_pg_ensure_server() {
  [ -n "$(_pg_major)" ] && return 0
  _pg_say "no PostgreSQL server installed: installing Debian's postgresql package"
  _pg_apt_update || return 1
  _pg_apt_install postgresql || return 1
  [ -n "$(_pg_major)" ] || { _pg_warn "postgresql installed, but no /usr/lib/postgresql/*/bin/initdb"; return 1; }
}

_pg_sharedir() {
  local pgc="/usr/lib/postgresql/$1/bin/pg_config"
  if [ -x "$pgc" ]; then "$pgc" --sharedir; else printf '/usr/share/postgresql/%s' "$1"; fi
}

_pg_has_vector() { [ -f "$(_pg_sharedir "$1")/extension/vector.control" ]; }

# The URI of the machine's own Debian archive, from its apt configuration (deb822 *.sources and
# one-line *.list files): the first entry whose suite is the release's codename, else the first
# entry with a plain suite (no -security/-updates/-backports).
_pg_debian_mirror() {
  local codename='' found='' f pass
  # shellcheck disable=SC1091
  codename="$(. /etc/os-release 2>/dev/null && printf '%s' "${VERSION_CODENAME:-}")" || codename=''
  for pass in codename plain; do
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] || continue
      found+="$(awk -v cn="$codename" -v pass="$pass" '
        function want(s) { return pass == "codename" ? (cn != "" && s == cn) : (s !~ /[-\/]/) }
        function flush(   n, i, s, u) {
          if (uris != "" && tolower(en) != "no" && (" " types " ") ~ / deb(-src)? /) {
            n = split(suites, s, /[ \t]+/)
            for (i = 1; i <= n; i++) if (want(s[i])) { split(uris, u, /[ \t]+/); print u[1]; break }
          }
          uris = types = suites = en = ""
        }
        /^[ \t]*#/ { next }
        /^[ \t]*$/ { flush(); next }
        /^[A-Za-z-]+:/ {
          key = tolower($1); sub(/:$/, "", key); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
          if (key == "types") types = val; else if (key == "uris") uris = val
          else if (key == "suites") suites = val; else if (key == "enabled") en = val
        }
        END { flush() }' "$f" 2>/dev/null)"$'\n'
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -f "$f" ] || continue
      found+="$(awk -v cn="$codename" -v pass="$pass" '
        function want(s) { return pass == "codename" ? (cn != "" && s == cn) : (s !~ /[-\/]/) }
        $1 == "deb" || $1 == "deb-src" {
          i = 2
          if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
          if (want($(i + 1))) print $i
        }' "$f" 2>/dev/null)"$'\n'
    done
  done
  local line
  while IFS= read -r line; do
    case "$line" in '' | cdrom:*) continue ;; esac
    printf '%s' "${line%/}"
    return 0
  done <<<"$found"
  return 1
}

# Builds and installs pgvector from Debian's source package for $MNEMO_PGVECTOR_SOURCE_SUITE,
# against postgresql-server-dev-<major>. apt runs with a temporary source list and lists folder of
# its own, so the machine's apt configuration and package lists are left as they were.
_pgvector_from_source() {
  local major="$1" mirror work status=0
  mirror="$(_pg_debian_mirror)" || { _pg_warn "found no Debian archive in the machine's apt sources"; return 1; }
  work="$(mktemp -d /tmp/mnemo-pgvector.XXXXXXXX)" || return 1
  _pgvector_build_in "$major" "$mirror" "$work" || status=$?
  rm -rf "$work"
  return "$status"
}

_pgvector_build_in() {
  local major="$1" mirror="$2" work="$3" keyring='' src
  local -a apt_opts
  [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] &&
    keyring='[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] '
  mkdir -p "$work/parts" "$work/lists/partial" "$work/src" || return 1
  printf 'deb-src %s%s %s main\n' "$keyring" "$mirror" "$MNEMO_PGVECTOR_SOURCE_SUITE" >"$work/sources.list"
  apt_opts=(
    -o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/parts"
    -o "Dir::State::Lists=$work/lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
    -o APT::Sandbox::User=root
  )
  _pg_say "pgvector: fetching the source package from Debian $MNEMO_PGVECTOR_SOURCE_SUITE (the machine's own mirror)"
  apt-get -q "${apt_opts[@]}" update || return 1
  (cd "$work/src" && apt-get -q "${apt_opts[@]}" source --download-only pgvector) || return 1

  # Headers of the installed server's own version when the archive still has it (no upgrade of the
  # server then); else the current ones, which upgrades the server to the same point release.
  local ver
  ver="$(dpkg-query -W -f='${Version}' "postgresql-$major" 2>/dev/null)" || ver=''
  { [ -n "$ver" ] && _pg_apt_install "postgresql-server-dev-$major=$ver"; } ||
    _pg_apt_install "postgresql-server-dev-$major" || return 1
  if ! command -v make >/dev/null || ! command -v cc >/dev/null || ! command -v dpkg-source >/dev/null; then
    _pg_apt_install build-essential dpkg-dev || return 1
  fi
  # --no-check: apt has already checked the files against the signed Sources index.
  (cd "$work/src" && dpkg-source --no-check -x ./*.dsc pgvector) || return 1
  src="$work/src/pgvector"
  # OPTFLAGS= : no -march=native (Debian's own build does the same), so the result runs on any x86-64.
  make -C "$src" -j"$(nproc)" PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" OPTFLAGS= || return 1
  make -C "$src" install PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" OPTFLAGS= || return 1
  _pg_has_vector "$major"
}

# Distribution's default PostgreSQL major (what `postgresql` depends on), e.g. 17 on Debian 13.
_pg_default_major() {
  LC_ALL=C apt-cache depends --important postgresql 2>/dev/null |
    sed -n 's/^ *Depends: postgresql-\([0-9][0-9]*\)$/\1/p' | sed -n 1p
}

# Makes pgvector available to the server start_postgres will use. Returns 0 even when it cannot
# (with a warning): the tests then run without MNEMO_TEST_PGVECTOR_URL.
install_pgvector() {
  local major t0 log how='' dflt
  _pg_ensure_server || { _pg_warn "no PostgreSQL server: pgvector not installed"; return 0; }
  major="$(_pg_major)"
  if _pg_has_vector "$major"; then
    _pg_say "pgvector: already installed for PostgreSQL $major"
    return 0
  fi
  t0="$(_pg_now_ms)"
  log="$(mktemp /tmp/mnemo-pgvector-log.XXXXXXXX)"
  {
    _pg_apt_update || true
    if _pg_apt_has "postgresql-$major-pgvector" && _pg_apt_install "postgresql-$major-pgvector" &&
      _pg_has_vector "$major"; then
      how="Debian package postgresql-$major-pgvector"
    elif _pgvector_from_source "$major"; then
      how="built from Debian $MNEMO_PGVECTOR_SOURCE_SUITE's source package"
    else
      # E.g. Debian 13 with a PostgreSQL 15 server but no postgresql-server-dev-15: use the
      # distribution's newer server, which has a binary pgvector; start_postgres takes the highest.
      dflt="$(_pg_default_major)" || dflt=''
      if [ -n "$dflt" ] && [ "$dflt" -gt "$major" ] && _pg_apt_has "postgresql-$dflt-pgvector" &&
        _pg_apt_install "postgresql-$dflt" "postgresql-$dflt-pgvector" && _pg_has_vector "$dflt" &&
        [ "$(_pg_major)" = "$dflt" ]; then
        how="Debian packages postgresql-$dflt and postgresql-$dflt-pgvector (server $major had no way)"
        major="$dflt"
      fi
    fi
  } >"$log" 2>&1 </dev/null
  if [ -n "$how" ]; then
    _pg_say "pgvector: installed for PostgreSQL $major in $(_pg_secs_since "$t0") s ($how)"
    rm -f "$log"
  else
    _pg_warn "pgvector could not be installed for PostgreSQL $major ($(_pg_secs_since "$t0") s); the tests run without MNEMO_TEST_PGVECTOR_URL. Last lines of $log:"
    tail -n 25 "$log" | sed 's/^/    /' >&2
  fi
  return 0
}

# A free TCP port on 127.0.0.1 (the kernel's choice for port 0).
_pg_free_port() {
  node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})" 2>/dev/null ||
    python3 -c "import socket;s=socket.socket();s.bind(('127.0.0.1',0));print(s.getsockname()[1]);s.close()"
}

# Stops the cluster in directory $1 (server binaries in $2) and removes the directory. Silent: it
# runs in the EXIT trap, after .ci/run has printed its summary line.
_pg_stop_dir() {
  local dir="$1" bin="$2" pid=''
  [ -n "$dir" ] && [ -d "$dir" ] || return 0
  if [ -f "$dir/data/postmaster.pid" ]; then
    runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" stop -m fast -w -t 30 >/dev/null 2>&1 || {
      pid="$(sed -n 1p "$dir/data/postmaster.pid" 2>/dev/null || true)"
      [ -n "$pid" ] && kill -KILL "$pid" >/dev/null 2>&1 || true
    }
  fi
  rm -rf "$dir" >/dev/null 2>&1 || true
}

# psql over TCP with the password: BIN PORT PASSWORD [psql arguments...]
_pg_psql() {
  local bin="$1" port="$2" pw="$3"
  shift 3
  PGPASSWORD="$pw" PGCONNECT_TIMEOUT=10 "$bin/psql" -X -q -v ON_ERROR_STOP=1 \
    -h 127.0.0.1 -p "$port" -U postgres "$@"
}

_PG_DIR=''
_PG_BIN=''
_pg_on_exit() {
  _pg_stop_dir "$_PG_DIR" "$_PG_BIN" || true
  _PG_DIR=''
}

# Clusters left by an earlier run that was killed before its EXIT trap ran (its shell is gone).
_pg_reap_stale() {
  local d owner
  for d in /tmp/mnemo-pg.*; do
    [ -d "$d" ] && [ -f "$d/owner" ] || continue
    owner="$(sed -n 1p "$d/owner" 2>/dev/null || true)"
    [ -n "$owner" ] && kill -0 "$owner" 2>/dev/null && continue
    _pg_stop_dir "$d" "$(sed -n 2p "$d/owner" 2>/dev/null || true)"
  done
}

start_postgres() {
  local major bin dir pw port t0 attempt started='' vec_note prev
  if [ -n "$_PG_DIR" ]; then
    _pg_say "already started in this shell"
    return 0
  fi
  t0="$(_pg_now_ms)"
  _pg_ensure_server || { _pg_warn "could not install the PostgreSQL server"; return 1; }
  major="$(_pg_major)"
  bin="/usr/lib/postgresql/$major/bin"
  _pg_reap_stale

  dir="$(mktemp -d /tmp/mnemo-pg.XXXXXXXX)" || return 1
  _PG_DIR="$dir"
  _PG_BIN="$bin"
  # Chain with whatever EXIT trap is already set.
  prev="$(trap -p EXIT)"
  prev="${prev#trap -- }"
  prev="${prev% EXIT}"
  if [ -n "$prev" ]; then
    eval "prev=$prev"
    trap "_pg_on_exit; $prev" EXIT
  else
    trap _pg_on_exit EXIT
  fi
  printf '%s\n%s\n' "$$" "$bin" >"$dir/owner"
  chmod 755 "$dir"
  chown postgres: "$dir" || return 1

  pw="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  (umask 077 && printf '%s\n' "$pw" >"$dir/pwfile") && chown postgres: "$dir/pwfile" || return 1
  if ! runuser -u postgres -- "$bin/initdb" -D "$dir/data" -U postgres --pwfile="$dir/pwfile" \
    --auth-host=scram-sha-256 --auth-local=peer -E UTF8 --locale=C.UTF-8 --no-instructions \
    >"$dir/initdb.log" 2>&1; then
    _pg_warn "initdb failed:"
    sed 's/^/    /' "$dir/initdb.log" >&2
    return 1
  fi
  rm -f "$dir/pwfile"
  # Loopback only; the socket in the throwaway folder; fsync stays on (durability is tested).
  cat >>"$dir/data/postgresql.conf" <<EOF

# --- mnemo tests (.ci/postgres.sh) ---
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
fsync = on
synchronous_commit = on
full_page_writes = on
logging_collector = off
EOF

  for attempt in 1 2 3; do
    port="$(_pg_free_port)" || { _pg_warn "could not pick a free port"; return 1; }
    if runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-p $port" start >/dev/null 2>&1; then
      started=1
      break
    fi
    _pg_warn "server did not start on port $port (attempt $attempt); log:"
    tail -n 15 "$dir/server.log" 2>/dev/null | sed 's/^/    /' >&2 || true
  done
  [ -n "$started" ] || return 1

  _pg_psql "$bin" "$port" "$pw" -d postgres -c 'CREATE DATABASE mnemo_test' -c 'CREATE DATABASE mnemo_vector' ||
    { _pg_warn "could not create the test databases"; return 1; }

  export MNEMO_TEST_PG_URL="postgres://postgres:$pw@127.0.0.1:$port/mnemo_test"
  unset MNEMO_TEST_PGVECTOR_URL
  if _pg_psql "$bin" "$port" "$pw" -d mnemo_vector -c 'CREATE EXTENSION vector' >"$dir/vector.log" 2>&1; then
    export MNEMO_TEST_PGVECTOR_URL="postgres://postgres:$pw@127.0.0.1:$port/mnemo_vector"
    vec_note="pgvector $(_pg_psql "$bin" "$port" "$pw" -d mnemo_vector -At -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'" 2>/dev/null || echo '?') in mnemo_vector"
  else
    vec_note="no pgvector"
    _pg_warn "pgvector is not available: MNEMO_TEST_PGVECTOR_URL is not set ($(tr '\n' ' ' <"$dir/vector.log"))"
  fi

  _pg_say "PostgreSQL $("$bin/postgres" -V | awk '{print $3}') started on 127.0.0.1:$port in $(_pg_secs_since "$t0") s (data and log in $dir; databases mnemo_test, mnemo_vector; $vec_note); exported MNEMO_TEST_PG_URL${MNEMO_TEST_PGVECTOR_URL:+ and MNEMO_TEST_PGVECTOR_URL}"
}
