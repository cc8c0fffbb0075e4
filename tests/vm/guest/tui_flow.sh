# Scenario: the guided flows walked through in tmux by keys only, as a new user would (issue 15).
# 1. An HDD holding an LVM LV with files (mounted, ext4) and a blank SSD: `cachewise` opens on
#    the start screen; Add an SSD cache -> the LV -> the SSD (Space, Enter) -> the probe -> the
#    database workload type -> the recommendation, with o stepping to the lvmcache writeback
#    alternative -> the preview -> the LV's name typed -> the Warm-up screen. A zipf read load
#    and a writer fill it with hot and dirty blocks. Then Esc (start screen), Remove a cache ->
#    the LV -> the preview -> the name typed -> the flush counting down -> detached, SSD released.
# 2. A bcache pair on empty disks: Add -> the empty HDD -> the empty SSD -> ... -> bcache (o when
#    it is not the recommendation) -> applied -> Warm-up; data written through bcache0; Remove
#    -> bcache0 -> detached. Checksums of the data before and after each step.
# Every screen the script waits for is saved as flow-NN-*.txt under $LAB_OUT.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
export CACHEWISE_STATE_DIR="$LAB_WORK/state"
stamp() { echo "$(date +%s.%N) $*" >> "$LAB_OUT/timeline.txt"; }
hdd=$(by_serial HDD0001); ssd=$(by_serial SSD0001)
bhdd=$(by_serial BHDD0001); bssd=$(by_serial BSSD0001)
mnt=/run/lab/data
shot=0

screen() { tmux capture-pane -p -t flow 2>/dev/null || true; }
save() {  # save NAME: the screen as it is now
  shot=$((shot + 1))
  screen > "$LAB_OUT/$(printf 'flow-%02d' $shot)-$1.txt"
}
wait_for() {  # wait_for TEXT SECONDS NAME: until the screen shows TEXT; saved as NAME either way
  local i
  for i in $(seq "$2"); do
    # Lines joined: a sentence the screen wrapped is still found.
    if screen | tr '\n' ' ' | tr -s ' ' | grep -qF -- "$1"; then save "$3"; return 0; fi
    sleep 1
  done
  save "$3-timeout"
  echo "timed out waiting for: $1" >> "$LAB_OUT/flow-errors.txt"
  return 1
}
wait_gone() {  # wait_gone TEXT SECONDS NAME: until the screen no longer shows TEXT
  local i
  for i in $(seq "$2"); do
    if ! screen | tr '\n' ' ' | tr -s ' ' | grep -qF -- "$1"; then return 0; fi
    sleep 1
  done
  save "$3-timeout"
  echo "timed out waiting for this to go: $1" >> "$LAB_OUT/flow-errors.txt"
  return 1
}
key() { tmux send-keys -t flow "$@"; sleep 0.3; }
highlight() {  # highlight TEXT: press Down until the step's 'Highlighted:' line shows TEXT
  local i
  for i in $(seq 30); do
    if screen | grep -F "Highlighted:" | grep -qF -- "$1"; then return 0; fi
    key Down; sleep 0.7
  done
  save "highlight-failed"
  echo "could not highlight: $1" >> "$LAB_OUT/flow-errors.txt"
  return 1
}
type_name() {  # the confirmation: the name the preview shows on the line after "type the device's name"
  local name
  name=$(screen | grep -A1 "type the device's name" | tail -1 | awk '{print $1}')  # the name, not the kernel name beside it
  echo "$name" >> "$LAB_OUT/typed-names.txt"
  tmux send-keys -t flow -l "$name"; sleep 0.5; key Enter
}
sums() { (cd $mnt && sha256sum f1 f2 f3) ; }

# --- the data: an LV with files on the HDD; the SSD blank ---
pvcreate -q "$hdd"; vgcreate -q labvg "$hdd"; lvcreate -q -y -L 640M -n data labvg
mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/labvg/data
mkdir -p $mnt && mount /dev/labvg/data $mnt
for f in f1 f2 f3 hot; do head -c 24M /dev/urandom > $mnt/$f; done; sync
sums > "$LAB_OUT/sums-before.txt"
stamp data

tmux new-session -d -s flow -x 100 -y 32 \
    "env CACHEWISE_STATE_DIR=$LAB_WORK/state NPY_DISABLE_CPU_FEATURES='$NPY_DISABLE_CPU_FEATURES' $CW_PY -m cachewise"
wait_for "What would you like to do?" 120 start
stamp tui-up

# --- 1. Add an SSD cache in front of the LV ---
key Enter
wait_for "step 1 of 7" 60 add-slow
highlight "labvg/data ("; save add-slow-highlighted
key Enter
wait_for "step 2 of 7" 30 add-fast
highlight "($(basename "$ssd"))"; key Space; save add-fast-marked
key Enter
wait_for "step 3 of 7" 30 add-measure
wait_for "goes on to the workload" 120 add-measured
key Enter
wait_for "step 4 of 7" 30 add-workload
highlight "database (random I/O)"
key Enter
wait_for "step 5 of 7" 60 add-recommend
choose_writeback() {  # the alternatives, until lvmcache writeback (the flush is to be seen)
  for _ in $(seq 9); do
    screen | grep -q "Your choice instead: lvmcache (dm-cache) writeback" && break
    key o; sleep 1
  done
}
choose_writeback
save add-choice
key a  # writeback on one SSD: refused until the risk is accepted, and the focus is on that box
wait_for "Nothing was changed" 30 add-refused  # the notice (the box's own label is always there)
key Space; sleep 1  # tick it: the recommendation is made again, with the acceptance
# (the choice of writeback is kept; keys that act on it wait until the new advice shows)
wait_gone "Making the recommendation again" 60 add-again
choose_writeback
save add-choice-accepted
key a
wait_for "as the plan expects" 60 add-preview
# The refusal's notice stays 15 s and covers the line with the name to type: wait it out.
wait_for "To apply this plan, type the device's name" 30 add-preview-clear
stamp apply
type_name
wait_for "step 7 of 7" 180 add-warmup
stamp warm
# The disks as they are now, for `cachewise demo`'s warm-up scene (the samples are in the history).
cw scan --save-raw "$LAB_OUT/raw-lvmcache.json" --no-record > /dev/null 2>&1 || true
fio --name=zipf --filename=$mnt/hot --rw=randread --random_distribution=zipf:1.2 --bs=4k --direct=1 \
    --ioengine=libaio --iodepth=4 --time_based --runtime=20 --output-format=terse > /dev/null
save add-warm
keep_dirty $mnt/hot "$LAB_OUT/dirty-samples.txt"
save add-dirty
dmsetup status labvg-data > "$LAB_OUT/status-dirty.txt"

# --- 1b. Remove it with the writer still running: the flush counts down ---
key Escape
wait_for "What would you like to do?" 30 back-to-start
key Home; key Down; key Enter
wait_for "step 1 of 2" 60 remove-pick
highlight "labvg/data ("
key Enter
wait_for "as the plan expects" 60 remove-preview
stamp remove
type_name
for i in $(seq 6); do sleep 3; save "remove-progress-$i"; done
wait_for "Esc goes back to the caches left" 300 remove-done
stamp removed
kill $writer 2>/dev/null || true; wait $writer 2>/dev/null || true
sync; echo 3 > /proc/sys/vm/drop_caches
sums > "$LAB_OUT/sums-after.txt"
lvs -a --noheadings -o lv_name,segtype labvg > "$LAB_OUT/lvs-after.txt"
pvs --noheadings -o pv_name > "$LAB_OUT/pvs-after.txt"
echo "$ssd" > "$LAB_OUT/ssd.txt"
wipefs --no-act "$ssd" > "$LAB_OUT/ssd-signatures-after.txt" 2>&1 || true

# --- 2. A bcache pair on empty disks ---
key Escape
wait_for "Nothing to choose here" 90 remove-list-after
key Escape
wait_for "What would you like to do?" 30 back-to-start-2
key Home; key Enter
wait_for "step 1 of 7" 60 bc-slow
highlight "($(basename "$bhdd"))"
key Enter
wait_for "step 2 of 7" 30 bc-fast
highlight "($(basename "$bssd"))"
key Enter
wait_for "step 3 of 7" 30 bc-measure
wait_for "goes on to the workload" 120 bc-measured
key Enter
wait_for "step 4 of 7" 30 bc-workload
highlight "database (random I/O)"
key Enter
wait_for "step 5 of 7" 60 bc-recommend
sleep 2  # the recommendation is worked out
for _ in $(seq 10); do  # bcache writethrough (one SSD: writeback would need the acceptance), chosen or recommended
  now=$(screen)
  echo "$now" | grep -q "Your choice instead: bcache writethrough" && break
  if ! echo "$now" | grep -q "Your choice instead"; then echo "$now" | grep -q "Backend *bcache writethrough" && break; fi
  key o; sleep 1
done
save bc-choice
key a
wait_for "as the plan expects" 60 bc-preview
stamp bc-apply
type_name
wait_for "step 7 of 7" 180 bc-warmup
stamp bc-warm
bdev=$(ls -d /sys/block/bcache* | head -1); bdev=/dev/$(basename "$bdev")
echo "$bdev" > "$LAB_OUT/bcache-dev.txt"
head -c 32M /dev/urandom > "$LAB_WORK/bc-data"
dd if="$LAB_WORK/bc-data" of="$bdev" bs=1M oflag=direct status=none
sha256sum < "$LAB_WORK/bc-data" > "$LAB_OUT/bc-sum-before.txt"
fio --name=zipf --filename="$bdev" --rw=randread --random_distribution=zipf:1.2 --size=32M --bs=4k --direct=1 \
    --ioengine=libaio --iodepth=4 --time_based --runtime=15 --output-format=terse > /dev/null
sleep 2; save bc-warm
key Escape
wait_for "What would you like to do?" 30 bc-back-to-start
key Home; key Down; key Enter
wait_for "step 1 of 2" 60 bc-remove-pick
highlight "($(basename "$bdev"))"
key Enter
wait_for "as the plan expects" 60 bc-remove-preview
type_name
wait_for "Esc goes back to the caches left" 300 bc-remove-done
stamp bc-removed
head -c 32M "$bdev" | sha256sum > "$LAB_OUT/bc-sum-after.txt"
cat "/sys/block/$(basename "$bdev")/bcache/state" > "$LAB_OUT/bc-state-after.txt" 2>&1 || true
wipefs --no-act "$bssd" > "$LAB_OUT/bssd-signatures-after.txt" 2>&1 || true
key Escape; key Escape; key q
sleep 2; tmux kill-server 2>/dev/null || true
stamp end
