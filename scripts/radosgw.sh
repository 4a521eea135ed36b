#!/usr/bin/env bash
# A throwaway single-node Ceph cluster with an S3 gateway on 127.0.0.1, for the storage contract
# suite against a real S3 implementation: Debian's Ceph 16.2 packages, one monitor, one OSD, one
# radosgw, and an S3 user with fixed keys. Run as root; no systemd needed (the daemons are started
# directly, in the background, with their logs in the cluster directory).
#
#   bash scripts/radosgw.sh            # then: source /var/tmp/mordn-radosgw/env
#
# Idempotent: when the gateway already answers, it only rewrites the env file. Otherwise whatever
# is left of an earlier cluster is stopped and removed, and a new one is made (the OSD keeps its
# objects in memory, so nothing of a stopped cluster is worth keeping).
#
# Environment: MORDN_RADOSGW_DIR (default /var/tmp/mordn-radosgw), MORDN_RADOSGW_PORT (the
# gateway, default 37480), MORDN_RADOSGW_MON_PORT (the monitor's msgr2 port, default 37300; msgr1
# uses the next one), MORDN_RADOSGW_BUDGET (seconds the whole run may take, default 170). Exits
# non-zero naming the daemon that failed, with the tail of its log.
set -euo pipefail

dir=${MORDN_RADOSGW_DIR:-/var/tmp/mordn-radosgw}
rgw_port=${MORDN_RADOSGW_PORT:-37480}
mon_port=${MORDN_RADOSGW_MON_PORT:-37300}
endpoint="http://127.0.0.1:$rgw_port"
# Fixed test credentials: the cluster only listens on 127.0.0.1 and holds nothing but test objects.
access_key=MORDNTESTRADOSGW0001
secret_key=mordn-test-radosgw-secret-key-0000000001
region=us-east-1
conf="$dir/ceph.conf"
started=$SECONDS
budget=${MORDN_RADOSGW_BUDGET:-170}

say() { printf 'radosgw.sh: %s\n' "$*"; }

# fail DAEMON LOG MESSAGE: what failed and the end of its log, then exit non-zero
fail() {
  printf 'radosgw.sh: %s: %s\n' "$1" "$3" >&2
  if [ -f "$2" ]; then
    printf -- '--- last lines of %s\n' "$2" >&2
    tail -n 30 "$2" >&2
  fi
  exit 1
}

write_env() {
  cat >"$dir/env" <<EOF
export MORDN_TEST_RADOSGW_ENDPOINT=$endpoint
export MORDN_TEST_RADOSGW_ACCESS_KEY=$access_key
export MORDN_TEST_RADOSGW_SECRET_KEY=$secret_key
export MORDN_TEST_RADOSGW_REGION=$region
EOF
}

# The gateway answers: an anonymous GET / lists no buckets, with 200.
gateway_answers() { curl -fsS -o /dev/null --max-time 2 "$endpoint/"; }

[ "$(id -u)" -eq 0 ] || fail setup /dev/null "run as root (it installs packages and starts the daemons)"

if [ -f "$dir/env" ] && gateway_answers 2>/dev/null; then
  write_env
  say "the gateway already answers at $endpoint (env: $dir/env)"
  exit 0
fi

# The monitor, the OSD and the gateway, with ceph-common's CLI tools (ceph, radosgw-admin) and
# uuidgen. Recommends (ceph-mds, chrony, btrfs tools…) are not needed for a test cluster.
packages=(ceph-mon ceph-osd radosgw ceph-common uuid-runtime curl)
installed=$(dpkg-query -W -f='${Status}\n' "${packages[@]}" 2>/dev/null | grep -c '^install ok installed$' || true)
if [ "$installed" -ne ${#packages[@]} ]; then
  say "installing ${packages[*]}"
  apt-get update -qq
  # The packages' maintainer scripts try to start services; there is no init system to start them.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
  say "packages installed after $((SECONDS - started)) s"
fi

# running PID: the process is there and not a zombie (nothing may reap the daemons here)
running() { [ -d "/proc/$1" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; }

# stop_daemons: ends the daemons an earlier run started, by the pids it recorded
stop_daemons() {
  local pidfile pid
  local -a pids=()
  for pidfile in "$dir"/run/*.pid; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
    ceph-mon | ceph-osd | radosgw) running "$pid" && kill "$pid" 2>/dev/null && pids+=("$pid") ;;
    esac
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 50); do
      running "$pid" || continue 2
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
  done
}
stop_daemons

for port in "$mon_port" "$((mon_port + 1))" "$rgw_port"; do
  if ss -Htln "sport = :$port" | grep -q .; then
    fail setup /dev/null "port $port on this machine is in use by something else (set MORDN_RADOSGW_PORT / MORDN_RADOSGW_MON_PORT)"
  fi
done

# Never remove a directory this script did not make.
if [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ] && [ ! -f "$conf" ]; then
  fail setup /dev/null "$dir exists and holds no ceph.conf of an earlier run; not removing it"
fi
rm -rf "$dir"
mkdir -p "$dir/mon" "$dir/osd" "$dir/rgw" "$dir/run" "$dir/log"
fsid=$(uuidgen)

# No cephx: the cluster is reachable from this machine only and lives for one test run, and a
# cluster without keys has fewer parts to go wrong. The OSD keeps objects in memory (memstore):
# nothing to format, no block device or loop file, and a test cluster has no data to keep. The
# pools hold one copy each, and no manager runs: a monitor creates and activates placement groups
# on its own; the manager would only add statistics and the autoscaler (off here).
cat >"$conf" <<EOF
[global]
fsid = $fsid
mon_host = [v2:127.0.0.1:$mon_port,v1:127.0.0.1:$((mon_port + 1))]
public_addr = 127.0.0.1
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
mon_warn_on_pool_no_redundancy = false
osd_crush_chooseleaf_type = 0
run_dir = $dir/run
log_file = $dir/log/\$name.log
admin_socket = $dir/run/\$name.asok
crash_dir = $dir/crash

[mon]
mon_data = $dir/mon/\$id
mon_allow_pool_delete = true

[osd]
osd_data = $dir/osd/\$id
osd_objectstore = memstore
memstore_device_bytes = 1073741824

[client.rgw]
# radosgw's own defaults ask for cephx and an encrypted monitor session, which a cluster
# without keys cannot offer.
auth_client_required = none
ms_mon_client_mode = crc
rgw_data = $dir/rgw
rgw_frontends = beast endpoint=127.0.0.1:$rgw_port
rgw_enable_usage_log = false
log_file = $dir/log/rgw.log
EOF

ceph() { command ceph -c "$conf" --connect-timeout 10 "$@"; }

# launch NAME COMMAND...: starts a daemon in its own session, its output in log/NAME.stdout and
# its pid in run/NAME.pid (setsid need not fork here: a background job leads no process group)
launch() {
  local name=$1
  shift
  setsid "$@" >"$dir/log/$name.stdout" 2>&1 </dev/null &
  echo $! >"$dir/run/$name.pid"
}

# alive NAME: the daemon launched as NAME (mon.a, osd.0, client.rgw) is still running
alive() {
  local pid
  pid=$(cat "$dir/run/$1.pid" 2>/dev/null) && running "$pid"
}

# wait_for SECONDS DAEMON NAME LOG DESCRIPTION COMMAND...: polls COMMAND until it succeeds, and
# fails as soon as the daemon NAME has exited or time is up (SECONDS, or what is left of the budget)
wait_for() {
  local seconds=$1 daemon=$2 name=$3 log=$4 description=$5
  shift 5
  local left=$((started + budget - SECONDS))
  [ "$left" -lt "$seconds" ] && seconds=$((left > 1 ? left : 1))
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ! alive "$name"; then
      fail "$daemon" "$log" "exited ($description)"
    fi
    if [ $SECONDS -ge $deadline ]; then
      fail "$daemon" "$log" "$description within $seconds s"
    fi
    sleep 0.5
  done
}

say "monitor on 127.0.0.1:$mon_port"
monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port,v1:127.0.0.1:$((mon_port + 1))]" \
  "$dir/monmap" >"$dir/log/monmaptool.log" 2>&1 || fail monmaptool "$dir/log/monmaptool.log" "could not write the monitor map"
ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" >"$dir/log/mon-mkfs.log" 2>&1 ||
  fail ceph-mon "$dir/log/mon-mkfs.log" "could not create the monitor's store"
launch mon.a ceph-mon -c "$conf" -i a -f
wait_for 30 ceph-mon mon.a "$dir/log/mon.a.log" "the monitor did not answer" ceph mon stat

say "OSD 0 (memstore)"
osd_uuid=$(uuidgen)
osd_id=$(ceph osd new "$osd_uuid" 2>"$dir/log/osd-new.log") || fail ceph-mon "$dir/log/osd-new.log" "could not register the OSD"
mkdir -p "$dir/osd/$osd_id"
ceph-osd -c "$conf" -i "$osd_id" --mkfs --osd-uuid "$osd_uuid" >"$dir/log/osd-mkfs.log" 2>&1 ||
  fail ceph-osd "$dir/log/osd-mkfs.log" "could not create the OSD's store"
launch "osd.$osd_id" ceph-osd -c "$conf" -i "$osd_id" -f
osd_up() { ceph osd dump --format json | grep -q '"up":1'; }
wait_for 60 ceph-osd "osd.$osd_id" "$dir/log/osd.$osd_id.log" "the OSD did not come up" osd_up

say "gateway on $endpoint"
launch client.rgw radosgw -c "$conf" -n client.rgw -f
# The gateway creates its pools on first start, then listens.
wait_for 120 radosgw client.rgw "$dir/log/rgw.log" "the gateway did not answer at $endpoint" gateway_answers

radosgw-admin -c "$conf" -n client.rgw user create --uid mordn-test --display-name "mordn tests" \
  --access-key "$access_key" --secret "$secret_key" >"$dir/log/user-create.log" 2>&1 ||
  fail radosgw-admin "$dir/log/user-create.log" "could not create the S3 user"
write_env
say "ready after $((SECONDS - started)) s: $endpoint, access key $access_key (env: $dir/env)"
