#!/usr/bin/env bash
# netns test: two network namespaces joined by a veth pair act as two hosts. Runs the
# conformance transfer cases across them, then shapes the link with tc tbf and checks that HARP
# reaches >= 90% of the shaped rate. Cleans up namespaces on any exit.
# Usage: netns_test.sh BUILD_DIR [RATE_MBIT]     (root and iproute2 required; exit 77 = skip)
set -u
BUILD=${1:?usage: netns_test.sh BUILD_DIR [RATE_MBIT]}
RATE=${2:-800}
LIB="$BUILD/libnccl-net-harp.so"
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then echo "SKIP: needs root and ip"; exit 77; fi
ID="h$$"
NSA="harp_${ID}_a"; NSB="harp_${ID}_b"; IF="hv${ID}"
SUB=$(( ($$ % 200) + 20 ))
cleanup() { ip netns del "$NSA" 2>/dev/null; ip netns del "$NSB" 2>/dev/null; true; }
trap cleanup EXIT INT TERM
set -e
ip netns add "$NSA"; ip netns add "$NSB"
ip link add "${IF}a" type veth peer name "${IF}b"
ip link set "${IF}a" netns "$NSA"; ip link set "${IF}b" netns "$NSB"
ip -n "$NSA" addr add "10.213.$SUB.1/30" dev "${IF}a"; ip -n "$NSB" addr add "10.213.$SUB.2/30" dev "${IF}b"
for ns in "$NSA" "$NSB"; do ip -n "$ns" link set lo up; done
ip -n "$NSA" link set "${IF}a" up; ip -n "$NSB" link set "${IF}b" up
set +e
passed=0; failed=0
check() { if [ "$1" = 0 ]; then passed=$((passed+1)); echo "PASS $2"; else failed=$((failed+1)); echo "FAIL $2"; fi; }

for c in transfer_v10 transfer_v12; do
  timeout 120 "$BUILD/harp_conformance" --lib "$LIB" --case "$c" --ns-recv "$NSA" --ns-send "$NSB" --ifname "$IF" >/dev/null
  check $? "netns $c over veth"
done

# Shaped link: tbf on both ends; HARP must reach 90% of the rate (goodput ~ 0.95 x rate).
for dev in a b; do
  ns=$([ $dev = a ] && echo "$NSA" || echo "$NSB")
  ip netns exec "$ns" tc qdisc add dev "${IF}$dev" root tbf rate "${RATE}mbit" burst 1mb latency 100ms
done
out=$(HARP_JOB_SECRET=netns HARP_IFNAME="$IF" HARP_NFLOWS=4 timeout 120 "$BUILD/harp-bench" --lib "$LIB" \
      --modes harp,socket1 --sizes 4M,16M --mb-per-size 96 --ns-recv "$NSA" --ns-send "$NSB" --ifname "${IF}a" 2>&1)
echo "$out" | grep '^bench' | sed 's/^/  /'
want=$(awk -v r="$RATE" 'BEGIN { printf "%.4f", r * 0.9 / 8 / 1000 }')
best=$(echo "$out" | awk '/mode=harp/ { split($NF, kv, "="); if (kv[2] > m) m = kv[2] } END { printf "%.4f", m + 0 }')
ok=$(awk -v b="$best" -v w="$want" 'BEGIN { print (b >= w) ? 0 : 1 }')
echo "  shaped ${RATE} Mbit/s: HARP best ${best} GB/s, need >= ${want} GB/s (90%)"
check "$ok" "netns shaped link >= 90% of ${RATE} Mbit/s"
echo "netns: $passed passed, $failed failed"
[ "$failed" = 0 ]
