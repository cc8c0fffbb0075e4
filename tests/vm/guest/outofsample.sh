# Scenario: the out-of-sample accuracy suite (issue 28; host side tests/vm/outofsample.py). Each
# cell is the user's loop, end to end, through cachewise itself:
#   day 1  the workload runs on the uncached device while `cachewise trace` records it;
#          `cachewise recommend` chooses from that trace (the cell's backend: the recommendation,
#          or the alternative it offers for that backend, as the TUI's `o` would pick it; or, when
#          it cannot judge yet, the smaller end of the range it gives), and `cachewise plan` and
#          `cachewise apply --yes` make that cache;
#   day 2  the workload again, drawn afresh, through the new (empty) cache: its warm-up;
#   day 3  and again, through the cache day 2 warmed: what it settled at.
# The kernel's counters are read every 2 s from the cache's making to day 3's end. The host
# compares what recommend predicted from day 1 with what the kernel counted.
# OOS_CELLS: space-separated NAME=WORKLOAD,BACKEND (BACKEND lvmcache or bcache); OOS_SECONDS:
# each day's length; OOS_BUDGET: the cache budget given to recommend; OOS_CAPTURE=1: day 1 is
# recorded by `cachewise capture` (what recommend reads), with a `cachewise trace` of its first
# third only beside it (the short window, tests/lab/test_nextday_lab.py).
# Each cell writes $LAB_OUT/cells/NAME/ and, last, its "done" (or "failed" with the step).
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
export NPY_DISABLE_CPU_FEATURES=X86_V3
export CACHEWISE_STATE_DIR="$LAB_OUT/state"
hdd=$(by_serial HDD0001)
ssd=$(by_serial SSD0001)
ssd_id=$(ls /dev/disk/by-id/*SSD0001 | grep -v -- -part | head -1)
seconds=${OOS_SECONDS:-70}
budget=${OOS_BUDGET:-320m}
region=${OOS_REGION:-1200M}  # the workloads' data, on an LV (lvmcache) or the raw disk (bcache)
third=$((seconds / 3))
uname -r > "$LAB_OUT/kernel.txt"
lvm version > "$LAB_OUT/lvm-version.txt"
fio --version > "$LAB_OUT/fio-version.txt"
dpkg-query -W -f '${Version}' bcache-tools > "$LAB_OUT/bcache-tools-version.txt" || true
"$CW_PY" -c 'import cachewise; print(cachewise.__version__)' > "$LAB_OUT/cachewise-version.txt" 2>&1 || true
wipe_all() {  # nothing left of the last cell: bcache stopped, the VG gone, no signature on either disk
  local b cs
  for b in /sys/block/bcache*/bcache; do [ -e "$b/stop" ] && echo 1 > "$b/stop"; done 2>/dev/null || true
  for cs in /sys/fs/bcache/*-*; do [ -d "$cs" ] && echo 1 > "$cs/stop"; done 2>/dev/null || true
  # the kernel lets go of a stopped bcache and its cache set asynchronously
  for _ in $(seq 30); do ls -d /sys/block/bcache* /sys/fs/bcache/*-* > /dev/null 2>&1 || break; sleep 1; done
  vgremove -q -y -ff labvg > /dev/null 2>&1 || true
  pvremove -q -y -ff "$hdd" "$ssd" > /dev/null 2>&1 || true
  local p tries
  for tries in $(seq 10); do  # wipefs opens with O_EXCL: busy until every holder is gone
    for p in $(lsblk -nrpo NAME "$ssd" | sed 1d); do wipefs -q -a "$p" 2>/dev/null || true; done
    wipefs -q -a "$hdd" "$ssd" 2>/dev/null && break
    sleep 1
  done
  [ "$tries" -lt 10 ] || wipefs -q -a "$hdd" "$ssd"  # the tenth try's error, then set -e stops the boot
  udevadm settle --timeout=30
}
wipe_all
cw probe --yes --json "$hdd" "$ssd" > "$LAB_OUT/probe.json"

day_fio() {  # day_fio DIR N DEV WORKLOAD: day N of the workload, fio's iolog and IOPS log kept
  local dir=$1 day=day$2 dev=$3 w=$4
  # Each day draws afresh (randrepeat=0: fio 3.33's offsets did not change with --randseed, so a seed would
  # repeat day 1's requests in the same order); the Zipf hot spot stays where it was (its center
  # given), as a database's hot rows stay hot from one day to the next. Every job logs its IOPS
  # (dayN_iops.J.log, J the job's index) and its requests (dayN.iolog for the first job,
  # dayN.JOB.iolog for the others).
  local c="--filename=$dev --direct=1 --ioengine=libaio --norandommap --randrepeat=0 --time_based
           --runtime=$seconds --write_iops_log=$dir/$day --log_avg_msec=2000"
  local log="--write_iolog=$dir/$day.iolog"
  local out="--output-format=json --output=$dir/$day.fio.json"
  # The moving working set's three places, 100 MiB further each day.
  local m1=$((($2 - 1) * 100)) m2=$((($2 - 1) * 100 + 300)) m3=$((($2 - 1) * 100 + 600))
  case "$w" in
    zipf)  # a skewed hot set, random 4 KiB reads
      fio $out --name=zipf $c $log --rw=randread --bs=4k --iodepth=4 --random_distribution=zipf:1.1:0.3 \
          --size="$region" ;;
    streams)  # a hot set, with a sequential 1 MiB stream read beside it all day
      fio $out --name=hot $c $log --rw=randread --bs=4k --iodepth=4 --random_distribution=zipf:1.2:0.3 \
          --size="$region" \
          --name=stream $c --write_iolog="$dir/$day.stream.iolog" --rw=read --bs=1M --iodepth=1 --offset="$region" \
          --size=600M --rate=8M ;;
    scan)  # a hot set, and in the day's middle third a nightly job reads the whole region through
      fio $out --name=hot $c $log --rw=randread --bs=4k --iodepth=4 --random_distribution=zipf:1.2:0.3 \
          --size="$region" \
          --name=stream $c --write_iolog="$dir/$day.stream.iolog" --rw=read --bs=1M --iodepth=2 --size="$region" \
          --startdelay="$third" --runtime="$third" --rate=16M ;;
    moving)  # the working set moves: three 300 MiB hot sets one after another, elsewhere each day
      fio $out --name=p1 $c $log --rw=randread --bs=4k --iodepth=4 --random_distribution=zipf:1.2:0.5 \
          --offset=${m1}M --size=300M --runtime="$third" \
          --name=p2 $c --write_iolog="$dir/$day.p2.iolog" --rw=randread --bs=4k --iodepth=4 \
          --random_distribution=zipf:1.2:0.5 --offset=${m2}M --size=300M --startdelay="$third" --runtime="$third" \
          --name=p3 $c --write_iolog="$dir/$day.p3.iolog" --rw=randread --bs=4k --iodepth=4 \
          --random_distribution=zipf:1.2:0.5 --offset=${m3}M --size=300M --startdelay=$((2 * third)) \
          --runtime="$third" ;;
    phases)  # a day in phases: a daytime hot set, a night scan of the whole region, an evening hot set elsewhere
      fio $out --name=day $c $log --rw=randread --bs=4k --iodepth=4 --random_distribution=zipf:1.2:0.3 \
          --size=300M --runtime="$third" \
          --name=scan $c --write_iolog="$dir/$day.scan.iolog" --rw=read --bs=1M --iodepth=2 --size="$region" \
          --startdelay="$third" --runtime="$third" --rate=16M \
          --name=evening $c --write_iolog="$dir/$day.evening.iolog" --rw=randread --bs=4k --iodepth=4 \
          --random_distribution=zipf:1.2:0.3 --offset=600M --size=300M --startdelay=$((2 * third)) \
          --runtime="$third" ;;
    writehot)  # write-hot, read-cold: Zipf writes to 300 MiB, uniform reads over the other 900 MiB
      fio $out --name=w $c $log --rw=randwrite --bs=4k --iodepth=2 --random_distribution=zipf:1.2:0.3 --size=300M \
          --name=r $c --write_iolog="$dir/$day.r.iolog" --rw=randread --bs=4k --iodepth=2 --offset=300M --size=900M ;;
    large)  # large random reads: 128 KiB
      fio $out --name=large $c $log --rw=randread --bs=128k --iodepth=2 --random_distribution=zipf:1.1:0.3 \
          --size="$region" ;;
    *) echo "unknown workload $w" >&2; return 1 ;;
  esac
}

step() { echo "$(date +%s.%N) $*" >> "$dir/steps.txt"; }

cell() {  # cell NAME WORKLOAD BACKEND
  local name=$1 w=$2 backend=$3
  # a cell stopped by set -e leaves no tracer, sampler or fio running into the next one
  trap 'kill $(jobs -p) 2>/dev/null || true; wait' EXIT
  dir="$LAB_OUT/cells/$name"
  rm -rf "$dir"; mkdir -p "$dir"
  step setup
  if [ "$backend" = lvmcache ]; then
    pvcreate -q "$hdd"; vgcreate -q labvg "$hdd"; lvcreate -q -y -L 1900M -n data labvg "$hdd"
    dev=/dev/labvg/data; slow=/dev/labvg/data
  else
    dev=$hdd; slow=$hdd
  fi
  echo "$seconds" > "$dir/seconds.txt"
  step day1
  local traced="$dir/day1.cwtrace"
  if [ "${OOS_CAPTURE:-}" = 1 ]; then
    # The week-style way (issue 31): `cachewise capture` records the whole day, and beside it a
    # `cachewise trace` records only its first phase, as a short trace taken in the daytime would.
    traced="$dir/cap"
    "$CW_PY" -X faulthandler -m cachewise capture start "$dev" --dir "$traced" --for 1h --json \
        > "$dir/capture.json" 2> "$dir/capture.err" &
    local tracer=$!
    started "$dir/capture.err"
    cw trace "$dev" --duration "${third}s" -o "$dir/short.cwtrace" --json > "$dir/short.json" 2> "$dir/short.err" &
    local short=$!
    started "$dir/short.err"
    day_fio "$dir" 1 "$dev" "$w"
    wait $short
    sleep 1
    kill -TERM $tracer  # SIGTERM ends a capture cleanly (a script's background job ignores SIGINT)
    wait $tracer
    cw analyze --json --no-record "$traced" > "$dir/analysis.json"
    cw recommend --slow "$slow" --fast "$ssd_id" --trace "$dir/short.cwtrace" --cache-size "$budget" --json \
        > "$dir/short-rec.json" || true
  else
    cw trace "$dev" --duration $((seconds + 4))s -o "$traced" --json > "$dir/trace.json" 2> "$dir/trace.err" &
    local tracer=$!
    started "$dir/trace.err"
    day_fio "$dir" 1 "$dev" "$w"
    wait $tracer
  fi
  step recommend
  cw recommend --slow "$slow" --fast "$ssd_id" --trace "$traced" --cache-size "$budget" --json > "$dir/rec.json"
  "$CW_PY" - "$dir" "$backend" <<'PY'
import json, sys
d, want = sys.argv[1], sys.argv[2]
rec = json.load(open(f"{d}/rec.json"))
options = [("recommended", rec["config"])] + [("alternative", o["config"]) for o in rec["runner_ups"]]
for how, cfg in options:
    if cfg and cfg["backend"] == want and cfg["mode"] == "writethrough":
        json.dump({**rec, "config": cfg}, open(f"{d}/chosen.json", "w"))
        break
else:
    # "Can't judge yet" gives a range for the cache it would otherwise recommend: the user goes
    # ahead with the smaller end of its sizes (the knee as traced), and the range is scored.
    u = rec.get("uncertain")
    how, cfg = ("range", {"size_bytes": u["size_bytes"][0]}) if u and u["backend"] == want else ("none", None)
open(f"{d}/choice.txt", "w").write(how + "\n")
if cfg:
    open(f"{d}/size.txt", "w").write(str(cfg["size_bytes"]) + "\n")
PY
  local how; how=$(cat "$dir/choice.txt")
  if [ "$how" = none ]; then
    step "no $backend writethrough offered"
    return 0
  fi
  local given=(--recommendation "$dir/chosen.json")
  [ "$how" = range ] && given=()
  step plan
  if [ "$backend" = lvmcache ]; then
    [ "$how" = range ] && given=(--size "$(( $(cat "$dir/size.txt") / 1048576 ))m")
    cw plan lvmcache-attach --lv labvg/data --ssd "$ssd_id" "${given[@]}" --wipe -o "$dir/plan.json" > "$dir/plan.txt"
  else
    # bcache takes a whole device: the SSD's first partition, as large as the cache recommended.
    echo ",$(( $(cat "$dir/size.txt") / 1048576 + 1 ))M" | sfdisk -q "$ssd" > /dev/null
    udevadm settle --timeout=30
    part=$(lsblk -nrpo NAME "$ssd" | sed -n 2p)
    # The new partition starts where an earlier cell's cache pool had its data. blkid found only
    # the partition's entry in the calibration runs (part-blkid.txt); it is wiped anyway, as a
    # user clearing an old SSD would (apply checks the device again and refuses a signature the
    # plan did not know of).
    blkid -p -o export "$part" > "$dir/part-blkid.txt" 2>&1 || true
    wipefs -q -a "$part"
    udevadm settle --timeout=30
    cw plan bcache-create --backing "$hdd" --cache "$part" "${given[@]}" --wipe -o "$dir/plan.json" > "$dir/plan.txt"
  fi
  step apply
  cw apply "$dir/plan.json" --yes > "$dir/apply.txt" 2>&1
  echo 3 > /proc/sys/vm/drop_caches
  if [ "$backend" = lvmcache ]; then
    dmsetup table labvg-data > "$dir/table.txt"
    sample_counters "$dir/after.samples" labvg-data & local s=$!
    dev=/dev/labvg/data
  else
    udevadm settle --timeout=30
    bdev=$(basename "$(readlink -f "/sys/block/$(basename "$hdd")/bcache/dev")")  # this HDD's bcacheN
    cat /sys/block/$bdev/bcache/cache_mode /sys/block/$bdev/bcache/sequential_cutoff > "$dir/table.txt"
    cat /sys/fs/bcache/*-*/bucket_size /sys/fs/bcache/*-*/cache0/nbuckets >> "$dir/table.txt" 2>/dev/null || true
    sample_counters "$dir/after.samples" "$bdev" & local s=$!
    dev=/dev/$bdev
  fi
  step day2
  day_fio "$dir" 2 "$dev" "$w"
  # bcache folds its counters into stats_total about every 13.6 s: a pause after each day lets
  # the day's last reads be counted before the next day begins (and before the sampler stops)
  [ "$backend" = bcache ] && sleep 15
  step day3
  day_fio "$dir" 3 "$dev" "$w"
  [ "$backend" = bcache ] && sleep 15
  kill $s; wait $s 2>/dev/null || true
  step end
}

for spec in ${OOS_CELLS:-}; do
  name=${spec%%=*}
  IFS=, read -r w backend <<< "${spec#*=}"
  echo "$(date +%s.%N) start $name" >> "$LAB_OUT/timeline.txt"
  # In its own process, so that set -e stops the cell at its first failure (an if would not)
  ( cell "$name" "$w" "$backend" ) &
  if wait $!; then
    : > "$LAB_OUT/cells/$name/done"
  else
    tail -1 "$LAB_OUT/cells/$name/steps.txt" > "$LAB_OUT/cells/$name/failed" 2>/dev/null || echo setup > "$LAB_OUT/cells/$name/failed"
  fi
  wipe_all
  echo "$(date +%s.%N) end $name" >> "$LAB_OUT/timeline.txt"
done
