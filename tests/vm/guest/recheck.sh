# Scenario: the re-check of a cache made too small (issue 31). One boot:
# 1. labvg/data (ext4) on the 150-IOPS HDD, files with their checksums; a 16 MiB writeback
#    lvmcache attached by `cachewise apply`.
# 2. "Day 1": fio reads a 48 MiB file at random in 64 KiB requests (768 chunks, three times what
#    the cache holds) while `cachewise trace` records the LV; doctor records the counters before and
#    after (the history the re-check reads).
# 3. `cachewise recheck labvg/data --trace day1` says grow, and saves the resize plan.
# 4. Dirty data: a file is promoted and overwritten with known content through the cache, and a
#    writer keeps rewriting another (dmsetup shows dirty blocks); the resize plan is applied with
#    them present; every checksum is read back from the device afterwards, and again after the LV
#    is deactivated and activated.
# 5. "Day 2": the same reads through the new cache, counted by dmsetup; a second re-check.
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

pvcreate -q "$hdd"; vgcreate -q labvg "$hdd"; lvcreate -q -y -L 512M -n data labvg
mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/labvg/data
mkdir -p $mnt && mount /dev/labvg/data $mnt
head -c 48M /dev/urandom > $mnt/hot; head -c 8M /dev/urandom > $mnt/f1; head -c 8M /dev/urandom > $mnt/dirty
head -c 8M /dev/urandom > $mnt/w; sync
(cd $mnt && sha256sum hot f1) > "$LAB_OUT/sums.txt"

stamp attach
cw plan lvmcache-attach --lv labvg/data --ssd "$ssd_id" --size 16m --mode writeback -o "$LAB_OUT/small.json" > /dev/null
cw apply "$LAB_OUT/small.json" --yes > "$LAB_OUT/small-apply.txt" 2>&1
# smq moves at most migration_threshold sectors at a time; the default (2048) would take the whole
# run to warm even this cache (docs/lab.md). Both caches get the same setting.
lvchange -q --cachesettings migration_threshold=65536 labvg/data

day() {  # day N: the reads of a day, with dmsetup's counters before and after
  echo 3 > /proc/sys/vm/drop_caches
  dmsetup status labvg-data > "$LAB_OUT/day$1-before.txt"
  fio --name=day$1 --filename=$mnt/hot --rw=randread --bs=64k --direct=1 --ioengine=libaio --iodepth=4 \
      --io_size=360m --randseed=31 --output-format=json > "$LAB_OUT/day$1-fio.json"
  dmsetup status labvg-data > "$LAB_OUT/day$1-after.txt"
}

stamp day1
cw doctor labvg/data --json > "$LAB_OUT/doctor-1a.json" || true
cw trace /dev/labvg/data --duration 600s -o "$LAB_OUT/day1.cwtrace" --json > "$LAB_OUT/trace.json" 2> "$LAB_OUT/trace.err" &
tracer=$!
started "$LAB_OUT/trace.err"
day 1
kill -TERM $tracer; wait $tracer || true  # a background job of a script ignores SIGINT
cw doctor labvg/data --json > "$LAB_OUT/doctor-1b.json" || true

stamp recheck-1
cw recheck labvg/data --trace "$LAB_OUT/day1.cwtrace" --json -o "$LAB_OUT/grow.json" > "$LAB_OUT/recheck-1.json" \
    2> "$LAB_OUT/recheck-1.err" || echo "rc $?" >> "$LAB_OUT/recheck-1.err"
cw recheck labvg/data --trace "$LAB_OUT/day1.cwtrace" --no-record > "$LAB_OUT/recheck-1.txt" 2>&1 || true

stamp dirty
# Known content written through the cache over blocks it holds: those become dirty. A writer keeps
# rewriting another file, so smq (which cleans dirty blocks once the device idles) leaves some.
fio --name=promote --filename=$mnt/dirty --rw=randread --bs=64k --direct=1 --ioengine=libaio --iodepth=4 \
    --io_size=64m --output-format=terse > /dev/null
head -c 8M /dev/urandom > /run/dirty.src
(cd /run && sha256sum dirty.src) | sed 's/dirty.src/dirty/' >> "$LAB_OUT/sums.txt"
keep_dirty $mnt/w "$LAB_OUT/dirty-samples.txt"
dd if=/run/dirty.src of=$mnt/dirty bs=64k oflag=direct conv=notrunc,fsync status=none
dmsetup status labvg-data > "$LAB_OUT/resize-before.txt"

stamp resize
if [ -s "$LAB_OUT/grow.json" ]; then
  cw apply "$LAB_OUT/grow.json" --yes > "$LAB_OUT/resize-apply.txt" 2>&1 || echo "rc $?" >> "$LAB_OUT/resize-apply.txt"
fi
kill $writer 2> /dev/null || true; wait $writer 2> /dev/null || true
dmsetup status labvg-data > "$LAB_OUT/resize-after.txt"
lvs -a --reportformat json -o lv_name,segtype,lv_size,cache_mode,pool_lv labvg > "$LAB_OUT/lvs-after.json"
sync; echo 3 > /proc/sys/vm/drop_caches
(cd $mnt && sha256sum -c "$LAB_OUT/sums.txt") > "$LAB_OUT/sums-after-resize.txt" 2>&1 || true
lvchange -q --cachesettings migration_threshold=65536 labvg/data || true

stamp day2
day 2
cw recheck labvg/data --trace "$LAB_OUT/day1.cwtrace" --json > "$LAB_OUT/recheck-2.json" 2> "$LAB_OUT/recheck-2.err" || true

stamp reactivate
umount $mnt
lvchange -an labvg/data; lvchange -ay labvg/data
mount /dev/labvg/data $mnt
(cd $mnt && sha256sum -c "$LAB_OUT/sums.txt") > "$LAB_OUT/sums-after-reactivate.txt" 2>&1 || true
umount $mnt
stamp end
