# Scenario for bench/bench_probe.py: probe the five lab disks three times each.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
devs=()
for s in HDD0001 SSD0001 NVME0001 FASTROT1 SLOWFLAT1; do devs+=("$(by_serial $s)"); done
for i in 1 2 3; do
  cw probe --json --yes --no-record "${devs[@]}" > "$LAB_OUT/probe-$i.json"
done
