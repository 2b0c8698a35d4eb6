#!/bin/sh
# A one-node Ceph cluster for the tests (TestCeph.swift starts it): a monitor, one OSD on
# memstore and a RADOS Gateway on 127.0.0.1:RGW_PORT, with an S3 user whose keys are given.
# Everything lives in DIR. Writes DIR/ready once the user exists, then waits for its standard
# input to end (the test process closing it, or dying): then stops the daemons and deletes DIR.
# When the start fails, it leaves only its own log in DIR, with the tails of the daemons' logs.
#
#     ceph_cluster.sh DIR MON_PORT RGW_PORT ACCESS_KEY SECRET_KEY [TLS_PORT CERTIFICATE KEY]
#
# With TLS_PORT, the gateway also serves https on 127.0.0.1:TLS_PORT with that certificate.
#
# Traps (docs/PLATFORM.md): with `auth ... = none` the gateway cannot talk to the monitor unless
# every messenger mode is `crc`; one OSD needs pools of size 1 and chooseleaf type 0.
set -eu
dir=$1 mon_port=$2 rgw_port=$3 access=$4 secret=$5
tls=""
if [ $# -ge 8 ]; then tls=" ssl_endpoint=127.0.0.1:$6 ssl_certificate=$7 ssl_private_key=$8"; fi
pids=""

stop() {
    trap - EXIT INT TERM
    for pid in $pids; do kill "$pid" 2>/dev/null || true; done
    i=0
    for pid in $pids; do
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
        kill -9 "$pid" 2>/dev/null || true
    done
    if [ -f "$dir/ready" ]; then
        rm -rf "$dir"
    else
        tail -n 30 "$dir"/log/*.log >&2 || true
        rm -rf "$dir/mon" "$dir/osd" "$dir/run" "$dir/log" "$dir/rgw" "$dir/monmap" "$dir/ceph.conf"
    fi
}
trap stop EXIT INT TERM

mkdir -p "$dir/mon" "$dir/osd" "$dir/run" "$dir/log" "$dir/rgw"
fsid=$(cat /proc/sys/kernel/random/uuid)
export CEPH_CONF="$dir/ceph.conf"
cat >"$CEPH_CONF" <<CONF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$mon_port
mon initial members = a
auth cluster required = none
auth service required = none
auth client required = none
ms client mode = crc
ms mon client mode = crc
ms cluster mode = crc
ms service mode = crc
ms mon service mode = crc
ms mon cluster mode = crc
ms bind msgr1 = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
osd crush chooseleaf type = 0
run dir = $dir/run
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
pid file = $dir/run/\$name.pid
keyring = /dev/null
mon data = $dir/mon
osd data = $dir/osd
osd objectstore = memstore
memstore device bytes = 4294967296
rgw frontends = beast endpoint=127.0.0.1:$rgw_port$tls
rgw data = $dir/rgw
rgw dns name = localhost
rgw thread pool size = 64
CONF

monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$dir/monmap" >/dev/null
ceph-mon --mkfs -i a --monmap "$dir/monmap"
ceph-mon -f -i a &
pids="$!"
uuid=$(cat /proc/sys/kernel/random/uuid)
id=$(ceph --connect-timeout 60 osd new "$uuid")
ceph-osd -i "$id" --mkfs --osd-uuid "$uuid"
ceph-osd -f -i "$id" &
pids="$! $pids"
radosgw -f -n client.rgw.test &
pids="$! $pids"
radosgw-admin user create --uid=test --display-name=test --access-key="$access" --secret="$secret" >/dev/null
echo "$pids" >"$dir/ready"
gateway=${pids%% *}
# Until the test process closes our input (or dies); then `stop` runs on exit. Lines before that
# are a drill's commands: `kill-gateway` kills the gateway (SIGKILL) and reaps it, `start-gateway`
# starts it again; each then writes the gateway's pid to DIR/gateway.N, N counting lines from 1.
n=0
while read -r command; do
    n=$((n + 1))
    case "$command" in
    kill-gateway) kill -9 "$gateway" 2>/dev/null && wait "$gateway" 2>/dev/null || true ;;
    start-gateway)
        radosgw -f -n client.rgw.test &
        gateway=$!
        pids="$gateway $pids"
        ;;
    esac
    echo "$gateway" >"$dir/gateway.$n.part" && mv "$dir/gateway.$n.part" "$dir/gateway.$n"
done
