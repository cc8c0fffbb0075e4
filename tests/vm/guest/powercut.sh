# Scenario, boot 1 of 2 (issue 29): every cache kind cachewise offers, made through `cachewise
# plan` / `cachewise apply` on one machine: lvmcache writethrough and writeback, a mirrored
# (raid1) writeback pool, dm-writecache, bcache writethrough and writeback (non-default tunables).
# Files are written and fsync'd through each cache and their sha256 recorded; writers keep
# blocks dirty in every writeback cache; the kernel's dirty counts are recorded just before the
# power is cut without a sync. Boot 2 (powercut_after.sh) comes back as a system does.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
export CACHEWISE_STATE_DIR="$LAB_WORK/state"
stamp() { echo "$(date +%s) $*" >> "$LAB_OUT/timeline.txt"; }
id_of() { ls /dev/disk/by-id/*"$1" | grep -v -- -part | head -1; }
hdd=$(by_serial PCHDD01); ssd1=$(by_serial PCSSD01); ssd2=$(by_serial PCSSD02)
ssd1_id=$(id_of PCSSD01); ssd2_id=$(id_of PCSSD02)

# fill DIR TAG: three files written and fsync'd (each one on stable storage before the next), sums recorded
fill() {
  local f
  for i in 1 2 3; do
    f="$1/$2-$i"
    head -c 3M /dev/urandom > "$f.tmp"
    python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)" "$f.tmp"
    mv "$f.tmp" "$f"
    python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)" "$1"
    (cd "$1" && sha256sum "$2-$i") >> "$1.sums"
  done
}

stamp lvm-setup
pvcreate -q "$hdd" "$ssd1" "$ssd2"
vgcreate -q pc "$hdd" "$ssd1" "$ssd2"
for lv in wt wb mir wc; do
  lvcreate -q -y -L 160M -n $lv pc "$hdd"
  mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/pc/$lv
  mkdir -p /run/pc/$lv && mount /dev/pc/$lv /run/pc/$lv
  : > /run/pc/$lv.sums
  fill /run/pc/$lv before
done

stamp lvm-caches
cw plan lvmcache-attach --lv pc/wt --ssd "$ssd1_id" --size 48m -o "$LAB_OUT/wt.json" > /dev/null
cw apply "$LAB_OUT/wt.json" --yes > "$LAB_OUT/wt-apply.txt" 2>&1
cw plan lvmcache-attach --lv pc/wb --ssd "$ssd1_id" --size 48m --mode writeback -o "$LAB_OUT/wb.json" > /dev/null
cw apply "$LAB_OUT/wb.json" --yes > "$LAB_OUT/wb-apply.txt" 2>&1
cw plan lvmcache-attach --lv pc/mir --ssd "$ssd1_id" --ssd "$ssd2_id" --size 48m --mode writeback -o "$LAB_OUT/mir.json" > /dev/null
cw apply "$LAB_OUT/mir.json" --yes > "$LAB_OUT/mir-apply.txt" 2>&1
cw plan writecache-attach --lv pc/wc --ssd "$ssd1_id" --size 48m -o "$LAB_OUT/wc.json" > /dev/null
cw apply "$LAB_OUT/wc.json" --yes > "$LAB_OUT/wc-apply.txt" 2>&1

stamp bcache
keep_etc_cachewise
for kind in wt wb; do
  [ $kind = wt ] && mode=writethrough || mode=writeback
  b=$(id_of PCB${kind^^}H); c=$(id_of PCB${kind^^}S)
  cw plan bcache-create --backing "$b" --cache "$c" --mode $mode --sequential-cutoff 8m --writeback-percent 40 \
      -o "$LAB_OUT/b$kind.json" > /dev/null
  cw apply "$LAB_OUT/b$kind.json" --yes --json > "$LAB_OUT/b$kind-apply.json" 2> "$LAB_OUT/b$kind-apply.err"
  bdev=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['bcache_device'])" "$LAB_OUT/b$kind-apply.json")
  bname=$(basename "$(readlink -f "$bdev")")
  echo "$bname" > "$LAB_OUT/b$kind-name.txt"
  cat /sys/block/$bname/bcache/backing_dev_uuid 2>/dev/null > "$LAB_OUT/b$kind-uuid.txt" || true
  for t in cache_mode sequential_cutoff writeback_percent; do
    echo "$t $(cat /sys/block/$bname/bcache/$t)"
  done > "$LAB_OUT/b$kind-tunables-before.txt"
  ls -ln /etc/cachewise/bcache/ >> "$LAB_OUT/tunables-files.txt" 2>&1 || true
  mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/$bname
  blkid -o value -s UUID /dev/$bname > "$LAB_OUT/b$kind-fsuuid.txt"
  mkdir -p /run/pc/b$kind && mount /dev/$bname /run/pc/b$kind
  : > /run/pc/b$kind.sums
done

stamp write-through-caches
for d in wt wb mir wc bwt bwb; do
  fill /run/pc/$d after
  cp /run/pc/$d.sums "$LAB_OUT/$d.sums"
done
lvs -a --reportformat json -o vg_name,lv_name,segtype,cache_mode,lv_attr,devices > "$LAB_OUT/before-lvs.json"

# A flush that does not progress, before the writers start (doctor took 85-93 s a run on one vCPU
# beside them, 10 s without): bcache's writeback switched off holds the dirty data the files left.
# doctor records the caches' samples at each run; the second, 15 s later, judges them.
stamp doctor-stuck
# bcache's writeback switched off, as a mistaken tuning or a script left it: its dirty data cannot
# go down (writeback_percent alone keeps it dirty on purpose, which doctor does not call stuck)
echo 0 > "/sys/block/$(cat "$LAB_OUT/bwb-name.txt")/bcache/writeback_running"
cw doctor --json > "$LAB_OUT/stuck-doctor-1.json" 2> "$LAB_OUT/stuck-doctor-1.err" || true
sleep 15
rc=0; cw doctor --stuck-after 10s --dirty-above 1 --json > "$LAB_OUT/stuck-doctor.json" 2> "$LAB_OUT/stuck-doctor.err" || rc=$?
echo $rc > "$LAB_OUT/stuck-doctor.rc"
# --- writers keep blocks dirty in every writeback cache (their scratch files are not checked) ---
stamp dirty
# dm-cache: smq cleans dirty chunks only while it is told the device is idle, which dm-cache-target.c
# (spare_migration_bandwidth) says only after a second without I/O and with migration_threshold at
# least one chunk; a threshold of 0 (a dm message: LVM metadata keeps its own) holds every dirty chunk
# until the cut even if the writers pause. A write covering a whole chunk of a writeback cache with
# free chunks is promoted at once, dirty (optimisable_bio; smq's should_promote with fast_copy): the
# scratch file is rewritten in 256 KiB direct writes, each covering at least one whole chunk (64 KiB
# here), rather than waiting on smq's hotspot queue to promote read blocks (one run saw none in 20 s).
for d in wb mir; do
  dmsetup message pc-$d 0 migration_threshold 0
  head -c 8M /dev/urandom > /run/pc/$d/scratch
  python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)" /run/pc/$d/scratch
  fio --name=dirty --filename=/run/pc/$d/scratch --size=8M --rw=write --bs=256k --direct=1 \
      --output-format=terse > /dev/null
done
for d in wb mir wc bwb; do
  [ -e /run/pc/$d/scratch ] || head -c 8M /dev/urandom > /run/pc/$d/scratch
  fio --name=writer --filename=/run/pc/$d/scratch --size=8M --rw=randwrite --bs=4k --direct=1 --ioengine=libaio \
      --iodepth=2 --rate_iops=60 --time_based --runtime=600 --output-format=terse > /dev/null 2>&1 &
done
dirty_now() {  # one line per writeback cache: NAME DIRTY (blocks for dm, sectors' text for bcache)
  echo "wb $(dmsetup status pc-wb | awk '{print $14}')"
  echo "mir $(dmsetup status pc-mir | awk '{print $14}')"
  echo "wc $(dmsetup status pc-wc | awk '{print $5 - $6}')"  # total blocks - free blocks: used (dirty or not yet written back)
  echo "bwb $(cat /sys/block/$(cat "$LAB_OUT/bwb-name.txt")/bcache/dirty_data)"
}
for _ in $(seq 40); do
  dirty_now > "$LAB_OUT/dirty-before-cut.txt"
  if awk '{v=$2; sub(/[kKMG]$/,"",v); if (v+0 <= 0) bad=1} END {exit bad}' "$LAB_OUT/dirty-before-cut.txt"; then break; fi
  sleep 0.5
done  # the file keeps the last sample, taken just before the cut (no second sample to differ from it)
dmsetup status > "$LAB_OUT/dmstatus-before-cut.txt"
stamp cut
sync -f "$LAB_OUT/timeline.txt"
power_cut
