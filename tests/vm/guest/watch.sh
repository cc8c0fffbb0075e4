# Scenario: watching caches work (issue 12). One boot:
# 1. lvmcache (writethrough) on the 150-IOPS HDD: `cachewise replay` of a zipf trace on the bare
#    LV, then the cache attached and the same trace replayed cold and warm while
#    `cachewise watch --json-lines` samples it and the Warm-up screen runs in tmux; a quiet
#    moment where dmsetup is read before and after one sample.
# 2. lvmcache in writeback with a writer kept running: uncached (the SSD released) by
#    `cachewise apply` while `cachewise watch --until-clean` follows the dirty blocks down;
#    every checksum matches afterwards (this was the "writeback" boot of test_apply_wb_lab.py).
# 3. bcache writeback on empty disks: a zipf read load sampled by watch; a writer kept running
#    (a stall, explained), then writeback_percent 0 and the flush counted down to clean.
# Disks are found by serial. Every cachewise call writes its output under $LAB_OUT.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
export CACHEWISE_STATE_DIR="$LAB_WORK/state"
stamp() { echo "$(date +%s.%N) $*" >> "$LAB_OUT/timeline.txt"; }
hdd=$(by_serial HDD0001)
ssd_id=$(ls /dev/disk/by-id/*SSD0001 | head -1)
mnt=/run/lab/data
stamp start

# A zipf:1.2 read trace over the first 192 MiB of the LV (fio iolog v2, 4 KiB reads).
"$CW_PY" - "$LAB_OUT/zipf.log" <<'EOF'
import sys
import numpy as np
rng = np.random.default_rng(7)
blocks = 192 * 256
ranks = np.minimum(rng.zipf(1.2, 3000), blocks) - 1
perm = rng.permutation(blocks)
with open(sys.argv[1], "w") as fh:
    fh.write("fio version 2 iolog\n/dev/labvg/data add\n/dev/labvg/data open\n")
    for r in ranks:
        fh.write(f"/dev/labvg/data read {int(perm[r]) * 4096} 4096\n")
    fh.write("/dev/labvg/data close\n")
EOF

# --- 1. lvmcache writethrough: before/after replay, watch, Warm-up screen ---
pvcreate -q "$hdd"; vgcreate -q labvg "$hdd"; lvcreate -q -y -L 512M -n data labvg
mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/labvg/data
mkdir -p $mnt && mount /dev/labvg/data $mnt
head -c 8M /dev/urandom > $mnt/hot; head -c 8M /dev/urandom > $mnt/f1; sync
(cd $mnt && sha256sum f1) > "$LAB_OUT/sums.txt"
stamp replay-origin
cw replay "$LAB_OUT/zipf.log" --target /dev/labvg/data --label origin --duration 20s --json \
    > "$LAB_OUT/replay-origin.json" 2> "$LAB_OUT/replay-origin.err" || true
stamp attach
cw plan lvmcache-attach --lv labvg/data --ssd "$ssd_id" --size 128m --mode writethrough -o "$LAB_OUT/wt.json" > /dev/null
cw apply "$LAB_OUT/wt.json" --yes > "$LAB_OUT/wt-apply.txt" 2>&1
dmsetup table > "$LAB_OUT/dmsetup-table-cache.txt"
stamp watch
# Started without the cw function: a backgrounded function runs in a subshell, and `kill $!`
# stopped that subshell while its python went on sampling through the writeback and uncache below.
"$CW_PY" -X faulthandler -m cachewise watch labvg/data --json-lines --interval 1 --duration 300s \
    > "$LAB_OUT/lvm-watch.jsonl" 2> "$LAB_OUT/lvm-watch.err" &
watcher=$!
tmux new-session -d -s warm -x 120 -y 35 \
    "env CACHEWISE_STATE_DIR=$LAB_WORK/state-tui NPY_DISABLE_CPU_FEATURES='$NPY_DISABLE_CPU_FEATURES' $CW_PY -m cachewise tui --watch labvg/data"
for _ in $(seq 90); do  # the app takes a while to start under emulation
  tmux capture-pane -p -t warm 2>/dev/null | grep -q "Hit ratio" && break
  sleep 1
done
stamp tui-up
cw replay "$LAB_OUT/zipf.log" --target /dev/labvg/data --label cold --duration 20s --json \
    > "$LAB_OUT/replay-cold.json" 2> "$LAB_OUT/replay-cold.err" || true
tmux capture-pane -p -t warm > "$LAB_OUT/warmup-screen-1.txt" || true
fio --name=zipf --filename=/dev/labvg/data --rw=randread --random_distribution=zipf:1.2 --size=192M --bs=4k \
    --direct=1 --ioengine=libaio --iodepth=4 --time_based --runtime=15 --output-format=terse > /dev/null
cw replay "$LAB_OUT/zipf.log" --target /dev/labvg/data --label warm --duration 20s --json \
    > "$LAB_OUT/replay-warm.json" 2> "$LAB_OUT/replay-warm.err" || true
cw replay "$LAB_OUT/zipf.log" --target /dev/labvg/data --label warm-table --duration 5s \
    --compare "$LAB_OUT/replay-origin.json" "$LAB_OUT/replay-cold.json" "$LAB_OUT/replay-warm.json" \
    > "$LAB_OUT/replay-table.txt" 2>&1 || true
tmux capture-pane -p -t warm > "$LAB_OUT/warmup-screen-2.txt" || true
tmux send-keys -t warm Escape; sleep 0.5; tmux send-keys -t warm q; sleep 1; tmux kill-server 2>/dev/null || true  # Esc: back to Disks; q quits there
# Stop the watch as Ctrl-C would (SIGTERM: a background job of a script ignores SIGINT).
# (It may have ended on its own: its --duration is a bound, not the scenario's pace.)
kill $watcher 2>/dev/null || echo "watch had already ended" >> "$LAB_OUT/lvm-watch.err"
wait $watcher || echo "watch rc $?" >> "$LAB_OUT/lvm-watch.err"
# A quiet moment: nothing reads or writes, so the counters hold still around one sample.
stamp quiet
sync; sleep 1
dmsetup status labvg-data > "$LAB_OUT/quiet-before.txt"
cw watch labvg/data --count 1 --json-lines --no-record > "$LAB_OUT/quiet.jsonl" 2>&1
dmsetup status labvg-data > "$LAB_OUT/quiet-after.txt"
cw status --json --prometheus "$LAB_OUT/cachewise.prom" > "$LAB_OUT/status-lvm.json" 2> "$LAB_OUT/status-lvm.err"

# --- 2. lvmcache writeback uncached with dirty blocks, followed by watch --until-clean ---
stamp writeback
cw plan lvmcache-mode --lv labvg/data --mode writeback -o "$LAB_OUT/wb.json" > /dev/null
cw apply "$LAB_OUT/wb.json" --yes > "$LAB_OUT/wb-apply.txt" 2>&1
cw plan lvmcache-uncache --lv labvg/data --release-ssd "$ssd_id" -o "$LAB_OUT/un.json" > /dev/null
lvs --reportformat json -o vg_name,lv_name,segtype,cache_mode labvg > "$LAB_OUT/wb-attached-lvs.json"
keep_dirty $mnt/hot "$LAB_OUT/wb-dirty-samples.txt"
dmsetup status labvg-data > "$LAB_OUT/dmsetup-status-dirty.txt"
cw watch labvg/data --until-clean --interval 0.5 --duration 300s --json-lines \
    > "$LAB_OUT/un-watch.jsonl" 2> "$LAB_OUT/un-watch.err" &
watcher=$!
sleep 2
stamp uncache
cw apply "$LAB_OUT/un.json" --yes > "$LAB_OUT/un-apply.txt" 2>&1
kill $writer; wait $writer || true
wait $watcher || echo "watch rc $?" >> "$LAB_OUT/un-watch.err"
# f1 is as it was written before the cache; the writer rewrote hot, so its sum is taken now,
# after the flush, and checked again after a remount with the page cache dropped.
sync; (cd $mnt && sha256sum hot) >> "$LAB_OUT/sums.txt"
lvs --reportformat json -o vg_name,lv_name,segtype,cache_mode labvg > "$LAB_OUT/wb-uncached-lvs.json"
umount $mnt; echo 3 > /proc/sys/vm/drop_caches; mount /dev/labvg/data $mnt
(cd $mnt && sha256sum -c --quiet "$LAB_OUT/sums.txt") > "$LAB_OUT/verify.txt" 2>&1 && echo ok >> "$LAB_OUT/verify.txt" \
    || echo FAILED >> "$LAB_OUT/verify.txt"
umount $mnt

# --- 3. bcache writeback: zipf reads watched, a stall with a writer, then a flush to clean ---
stamp bcache
bhdd_id=$(ls /dev/disk/by-id/*BHDD0001 | head -1)
bssd_id=$(ls /dev/disk/by-id/*BSSD0001 | head -1)
cw plan bcache-create --backing "$bhdd_id" --cache "$bssd_id" --mode writeback -o "$LAB_OUT/bc.json" > /dev/null
cw apply "$LAB_OUT/bc.json" --yes --json > "$LAB_OUT/bc-apply.json" 2> "$LAB_OUT/bc-apply.err"
bdev=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['bcache_device'])" "$LAB_OUT/bc-apply.json")
bname=$(basename "$(readlink -f "$bdev")")
echo "$bname" > "$LAB_OUT/bc-name.txt"
cw watch "$bname" --json-lines --interval 1 --duration 30s > "$LAB_OUT/bc-watch.jsonl" 2> "$LAB_OUT/bc-watch.err" &
watcher=$!
fio --name=zipf --filename="/dev/$bname" --rw=randread --random_distribution=zipf:1.2 --size=128M --bs=4k \
    --direct=1 --ioengine=libaio --iodepth=4 --time_based --runtime=25 --output-format=terse > /dev/null
wait $watcher || echo "watch rc $?" >> "$LAB_OUT/bc-watch.err"
sleep 3  # bcache moves its counters into stats_total about once a second
(cd /sys/block/$bname/bcache && for f in state dirty_data stats_total/cache_hits stats_total/cache_misses; do
    echo "$f $(cat $f)"; done) > "$LAB_OUT/bc-quiet-before.txt"
cw watch "$bname" --count 1 --json-lines --no-record > "$LAB_OUT/bc-quiet.jsonl" 2>&1
(cd /sys/block/$bname/bcache && for f in state dirty_data stats_total/cache_hits stats_total/cache_misses; do
    echo "$f $(cat $f)"; done) > "$LAB_OUT/bc-quiet-after.txt"
# The disks with the bcache, for `cachewise demo`'s flush scene (the stall and the flush below).
cw scan --save-raw "$LAB_OUT/raw-bcache.json" --no-record > /dev/null 2>&1 || true
stamp bcache-stall
fio --name=writer --filename="/dev/$bname" --rw=randwrite --bs=4k --size=96M --direct=1 --ioengine=libaio \
    --iodepth=1 --rate_iops=150 --time_based --runtime=600 --output-format=terse > /dev/null 2>&1 &
writer=$!
cw watch "$bname" --until-clean --stall-after 8 --duration 25s --json-lines \
    > "$LAB_OUT/bc-stall.jsonl" 2> "$LAB_OUT/bc-stall.err" || true
kill $writer; wait $writer || true
stamp bcache-flush
echo 0 > "/sys/block/$bname/bcache/writeback_percent"
# The same flush as JSON lines beside the text (`cachewise demo` plays it back).
cw watch "$bname" --until-clean --interval 0.5 --duration 240s --json-lines --no-record \
    > "$LAB_OUT/bc-flush.jsonl" 2> "$LAB_OUT/bc-flush-jsonl.err" &
flushrec=$!
cw watch "$bname" --until-clean --interval 0.5 --duration 240s > "$LAB_OUT/bc-flush.txt" 2>&1 || true
wait $flushrec || true
cat "/sys/block/$bname/bcache/state" > "$LAB_OUT/bc-state-after.txt"
stamp end
echo scenario-done
