# What the kernel and the tools do when a cache SSD disappears under load (issue 29), for each
# backend: the raw outputs the dead-SSD fixtures (tests/fixtures/lab-deadssd/) are made of, and
# the timings docs/dead-ssd.md reports. Not part of the lab tier:
# `python -m tests.vm.capture_deadssd_fixtures` runs it once.
#
# The HDD (HDD0001) is cut into six partitions, one per experiment, each with its own SSD(s):
#   A  lvmcache writethrough (SSDA001): pulled under load; --splitcache, then --uncache
#   B  lvmcache writeback, one SSD (SSDB001), dirty blocks held: pulled; --uncache, then --force
#   C  dm-writecache (SSDC001): pulled; --splitcache, --splitcache --force
#   D  bcache writethrough (SSDD001): pulled under load
#   E  bcache writeback with dirty data (SSDE001): pulled; running=1
#   F  a mirrored (raid1) writeback pool on SSDF001 and SSDF002: SSDF002 pulled, repaired onto SSDF003
# Every step is allowed to fail: what it says is the finding. Each pull's time is in pulls.txt
# (uptime), so dmesg.txt's kernel lines can be put against it.
. "$LAB_GUEST/common.sh"
udevadm settle --timeout=30
export LVM_SUPPRESS_FD_WARNINGS=1
export CACHEWISE_STATE_DIR="$LAB_WORK/state"
O="$LAB_OUT"
hdd=$(by_serial HDD0001)
{ uname -r; lvm version | head -3; dpkg-query -W -f 'bcache-tools ${Version}\n' bcache-tools; \
  dpkg-query -W -f 'xfsprogs ${Version}\n' xfsprogs; cw --version; } > "$O/versions.txt" 2>&1

printf 'label: gpt\n,600M\n,600M\n,600M\n,600M\n,600M\n,600M\n' | sfdisk -q "$hdd"
udevadm settle --timeout=30
part() { echo "${hdd}$1"; }
want() { [[ " ${LAB_ONLY:-a b c d e f g h i} " == *" $1 "* ]]; }  # LAB_ONLY="c d": only those experiments

up() { cut -d' ' -f1 /proc/uptime; }
note() { echo "$(up) $*" >> "$O/events.txt"; }
run() {  # run NAME CMD...: output, exit code and seconds of a command, kept as NAME.txt
  local s e rc
  s=$(date +%s.%N)
  "${@:2}" > "$O/$1.txt" 2>&1; rc=$?
  e=$(date +%s.%N)
  echo "rc $rc seconds $(echo "$e - $s" | bc)" >> "$O/$1.txt"
  note "$1 rc=$rc"
  return $rc
}
sums() { (cd "$1" && sha256sum -- $(ls | grep -v '^load$')) ; }
verify() {  # verify NAME MNT SUMS
  sync; echo 3 > /proc/sys/vm/drop_caches
  (cd "$2" && sha256sum -c "$3") > "$O/$1.txt" 2>&1; echo "rc $?" >> "$O/$1.txt"
}
load_start() {  # a reader and a writer on MNT/load, logged to NAME-load.txt
  fio --name=load --filename="$2/load" --rw=randrw --rwmixread=50 --bs=4k --size=8M --direct=1 \
      --ioengine=libaio --iodepth=2 --rate_iops=40 --time_based --runtime=600 > "$O/$1-load.txt" 2>&1 &
  load=$!
  sleep 4
}
load_stop() { kill "$load" 2>/dev/null; wait "$load" 2>/dev/null; echo "fio exit $?" >> "$O/$1-load.txt"; }
pull() {  # pull NAME SERIAL: delete the SSD from the SCSI bus
  local n
  n=$(basename "$(by_serial "$2")")
  echo "$1 $2 $n $(up) $(date +%s.%N)" >> "$O/pulls.txt"
  echo 1 > "/sys/block/$n/device/delete"
}
until_status() {  # until_status NAME DM PATTERN: seconds until dmsetup status DM matches (max 30 s)
  local s i
  s=$(date +%s.%N)
  for i in $(seq 300); do
    dmsetup status "$2" 2>&1 | grep -q -- "$3" && break
    sleep 0.1
  done
  echo "$(dmsetup status "$2" 2>&1) after $(echo "$(date +%s.%N) - $s" | bc) s" > "$O/$1.txt"
}
rawio() {  # rawio NAME DEV BLOCK: a direct read of one 4 KiB block, then the same bytes written back
  {
    dd if="$2" of=/tmp/blk bs=4k skip="$3" count=1 iflag=direct 2>&1; echo "read rc $?"
    dd if=/tmp/blk of="$2" bs=4k seek="$3" count=1 oflag=direct conv=notrunc 2>&1; echo "write rc $?"
  } > "$O/$1.txt"
}
lvsall() {  # lvsall NAME VG: lvs as discovery asks, and with the health and status columns
  lvs -a -o lv_name,vg_name,lv_attr,lv_size,segtype,devices,pool_lv,origin,lv_role,cache_mode,cache_policy,lv_health_status \
      --reportformat json --units b --nosuffix "$2" > "$O/$1-lvs.json" 2> "$O/$1-lvs.err"
  lvs -a -o lv_name,lv_attr,lv_health_status,lv_check_needed,kernel_cache_policy,cache_dirty_blocks,sync_percent,raid_sync_action,writecache_error \
      --reportformat json "$2" > "$O/$1-lvs-health.json" 2> "$O/$1-lvs-health.err"
  lvs -a -o +devices,lv_health_status "$2" > "$O/$1-lvs.txt" 2>&1
  pvs > "$O/$1-pvs.txt" 2>&1
}
dm() { dmsetup status > "$O/$1-dmstatus.txt" 2>&1; dmsetup table > "$O/$1-dmtable.txt" 2>&1; dmsetup info -c > "$O/$1-dminfo.txt" 2>&1; }
cwstate() {  # what cachewise says now: status --json, status, scan --save-raw, scan
  cw status --json > "$O/$1-status.json" 2> "$O/$1-status.err"; echo "rc $?" >> "$O/$1-status.err"
  cw status > "$O/$1-status.txt" 2>&1
  cw scan --save-raw "$O/$1-raw.json" > /dev/null 2> "$O/$1-raw.err"
}
bcsys() {  # bcsys NAME DIR: every readable file of a sysfs bcache directory
  "$CW_PY" - "$2" > "$O/$1.json" 2>&1 <<'PY'
import json, os, sys
root = sys.argv[1]
files = {}
for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = [d for d in dirnames if d.startswith("stats_") or d == "internal"]
    for name in filenames:
        path = os.path.join(dirpath, name)
        rel = os.path.relpath(path, root)
        try:
            files[rel] = open(path).read().strip()
        except OSError as exc:
            files[rel] = f"<{exc.strerror}>"
    for name in os.listdir(dirpath):
        p = os.path.join(dirpath, name)
        if os.path.islink(p):
            files[os.path.relpath(p, root) + " ->"] = os.readlink(p)
json.dump(dict(sorted(files.items())), sys.stdout, indent=1)
PY
}
mkxfs() { mkfs.xfs -q -f "$1" || exit 1; mkdir -p "$2"; mount "$1" "$2" || exit 1; for f in a b; do head -c 8M /dev/urandom > "$2/$f"; done; sync; }
poolraid() {  # poolraid VG SIZE SSD...: an lvmcache pool as cachewise makes it (raid1 on two SSDs)
  local vg=$1 size=$2; shift 2
  local raid=()
  [ $# = 2 ] && raid=(--type raid1 -m 1)
  lvcreate -q -y --wipesignatures y "${raid[@]}" -n data_cache -L "$size" "$vg" "$@"
  lvcreate -q -y --wipesignatures y "${raid[@]}" -n data_cache_meta -L 8M "$vg" "$@"
}

# ---------------- A: lvmcache writethrough, pulled under load ----------------
if want a; then
a=$(by_serial SSDA001); m=/run/lab/a
pvcreate -q "$(part 1)" "$a"; vgcreate -q vga "$(part 1)" "$a"
lvcreate -q -y -L 400M -n data vga "$(part 1)"
mkxfs /dev/vga/data $m
poolraid vga 64M "$a"
lvconvert -q -y --type cache-pool --poolmetadata vga/data_cache_meta --cachemode writethrough vga/data_cache
lvconvert -q -y --type cache --cachepool vga/data_cache vga/data
head -c 8M /dev/urandom > $m/c; sync
fio --name=warm --filename=$m/a --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=4 --time_based --runtime=6 > /dev/null
sums $m > "$O/a-sums.txt"
dmsetup status vga-data > "$O/a-before-dmstatus.txt"
lvsall a-before vga
load_start a $m
pull a SSDA001
until_status a-until-fail vga-data Fail
sleep 8
load_stop a
dm a-pulled; lvsall a-pulled vga
rawio a-rawio /dev/vga/data 90000
# every 64 KiB chunk read once: which fail (those the SSD held) and which reach the origin
dd if=/dev/vga/data of=/dev/null bs=64k iflag=direct conv=noerror > "$O/a-readall.txt" 2>&1; echo "rc $?" >> "$O/a-readall.txt"
(cat $m/a > /dev/null) > "$O/a-read-file.txt" 2>&1; echo "rc $?" >> "$O/a-read-file.txt"
(head -c 1M /dev/urandom > $m/new && sync) > "$O/a-write-file.txt" 2>&1; echo "rc $?" >> "$O/a-write-file.txt"
grep " $m " /proc/mounts > "$O/a-mounts.txt"
cwstate a-pulled
cw plan remove --device /dev/vga/data --json > "$O/a-plan-remove.json" 2> "$O/a-plan-remove.err"
run a-splitcache lvconvert --yes --splitcache vga/data
run a-uncache lvconvert --yes --uncache vga/data || run a-uncache-force lvconvert --yes --force --uncache vga/data
lvsall a-uncached vga; dm a-uncached
run a-vgreduce vgreduce --removemissing vga
lvsall a-reduced vga
run a-umount umount $m
run a-mount mount /dev/vga/data $m
verify a-verify $m "$O/a-sums.txt"
umount $m

fi
# ---------------- B: lvmcache writeback on one SSD, dirty blocks held ----------------
if want b; then
b=$(by_serial SSDB001); m=/run/lab/b
pvcreate -q "$(part 2)" "$b"; vgcreate -q vgb "$(part 2)" "$b"
lvcreate -q -y -L 400M -n data vgb "$(part 2)"
mkxfs /dev/vgb/data $m
poolraid vgb 64M "$b"
lvconvert -q -y --type cache-pool --poolmetadata vgb/data_cache_meta --cachemode writeback vgb/data_cache
lvconvert -q -y --type cache --cachepool vgb/data_cache vgb/data
lvchange -q --cachesettings migration_threshold=65536 vgb/data
head -c 8M /dev/urandom > $m/c; sync
fio --name=warm --filename=$m/c --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=4 --time_based --runtime=8 > /dev/null
# overwrite c in place with known bytes: the promoted blocks take the write and are dirty
head -c 8M /dev/urandom > /tmp/c.new
dd if=/tmp/c.new of=$m/c bs=1M conv=notrunc,fsync oflag=direct 2> /dev/null
sums $m > "$O/b-sums.txt"
load_start b $m
dmsetup status vgb-data > "$O/b-before-dmstatus.txt"
pull b SSDB001
until_status b-until-fail vgb-data Fail
sleep 5
load_stop b
dm b-pulled; lvsall b-pulled vgb
cwstate b-pulled
cw plan remove --device /dev/vgb/data --json > "$O/b-plan-remove.json" 2> "$O/b-plan-remove.err"
umount $m > "$O/b-umount.txt" 2>&1
run b-uncache lvconvert --yes --uncache vgb/data
run b-uncache-force lvconvert --yes --force --uncache vgb/data
lvsall b-uncached vgb
run b-vgreduce vgreduce --removemissing vgb
run b-mount mount /dev/vgb/data $m
verify b-verify $m "$O/b-sums.txt"
umount $m 2>/dev/null
xfs_repair -n /dev/vgb/data > "$O/b-xfs-repair-n.txt" 2>&1; echo "rc $?" >> "$O/b-xfs-repair-n.txt"

fi
# ---------------- C: dm-writecache ----------------
if want c; then
c=$(by_serial SSDC001); m=/run/lab/c
pvcreate -q "$(part 3)" "$c"; vgcreate -q vgc "$(part 3)" "$c"
lvcreate -q -y -L 400M -n data vgc "$(part 3)"
mkxfs /dev/vgc/data $m
lvcreate -q -y -an -Zn -L 64M -n data_wcache vgc "$c"
lvconvert -q -y --type writecache --cachevol data_wcache --cachesettings block_size=512 vgc/data
head -c 8M /dev/urandom > $m/c; sync   # written through the writecache: on the SSD until written back
sums $m > "$O/c-sums.txt"
dmsetup status vgc-data > "$O/c-before-dmstatus.txt"
load_start c $m
pull c SSDC001
sleep 10
dmsetup status vgc-data > "$O/c-after10s-dmstatus.txt" 2>&1
load_stop c
dm c-pulled; lvsall c-pulled vgc
rawio c-rawio /dev/vgc/data 90000
cwstate c-pulled
cw plan remove --device /dev/vgc/data --json > "$O/c-plan-remove.json" 2> "$O/c-plan-remove.err"
umount $m > "$O/c-umount.txt" 2>&1
(cat $m/a > /dev/null) > "$O/c-read-file.txt" 2>&1; echo "rc $?" >> "$O/c-read-file.txt"
run c-splitcache lvconvert --yes --splitcache vgc/data
run c-splitcache-force lvconvert --yes --force --splitcache vgc/data
lvsall c-split vgc
run c-lvremove lvremove --yes vgc/data_wcache
run c-vgreduce vgreduce --removemissing vgc
run c-vgreduce-force vgreduce --removemissing --force vgc
lvsall c-reduced vgc
run c-mount mount /dev/vgc/data $m
verify c-verify $m "$O/c-sums.txt"
umount $m 2>/dev/null
xfs_repair -n /dev/vgc/data > "$O/c-xfs-repair-n.txt" 2>&1; echo "rc $?" >> "$O/c-xfs-repair-n.txt"

fi
# ---------------- D: bcache writethrough ----------------
if want d; then
d=$(by_serial SSDD001); m=/run/lab/d; bk=$(part 4)
make-bcache --cset-uuid 11111111-2222-3333-4444-555555555501 -B "$bk" -C "$d" > /dev/null
udevadm settle --timeout=30
for x in "$d" "$bk"; do echo "$x" > /sys/fs/bcache/register_quiet 2>/dev/null || true; done
bn=$(basename "$bk")
for _ in $(seq 100); do [ -e "/sys/class/block/$bn/bcache/cache" ] && break; sleep 0.2; done
bdev=/dev/$(basename "$(readlink /sys/class/block/$bn/bcache/dev)"); echo "$bdev" > "$O/d-bdev.txt"
mkxfs "$bdev" $m
sums $m > "$O/d-sums.txt"
bcsys d-before-backing "/sys/class/block/$bn/bcache"
ls -la /sys/fs/bcache/ /sys/fs/bcache/*/ > "$O/d-before-fsbcache.txt" 2>&1
load_start d $m
pull d SSDD001
for i in $(seq 100); do [ "$(cat /sys/class/block/$bn/bcache/state 2>/dev/null)" = "no cache" ] && break; sleep 0.1; done
echo "state $(cat /sys/class/block/$bn/bcache/state 2>&1) after $i polls" > "$O/d-until-nocache.txt"
sleep 8
load_stop d
ls -la /sys/fs/bcache/ /sys/fs/bcache/*/ > "$O/d-pulled-fsbcache.txt" 2>&1
ls /sys/block > "$O/d-pulled-blocks.txt"
bcsys d-pulled-backing "/sys/class/block/$bn/bcache"
[ -d /sys/block/$(basename "$bdev")/bcache ] && bcsys d-pulled-bcache "/sys/block/$(basename "$bdev")/bcache"
rawio d-rawio "$bdev" 90000
(head -c 1M /dev/urandom > $m/new && sync) > "$O/d-write-file.txt" 2>&1; echo "rc $?" >> "$O/d-write-file.txt"
cwstate d-pulled
cw plan remove --device "$bdev" --json > "$O/d-plan-remove.json" 2> "$O/d-plan-remove.err"
run d-umount umount $m
run d-mount mount "$bdev" $m
verify d-verify $m "$O/d-sums.txt"
umount $m
bcache-super-show "$bk" > "$O/d-super-show.txt" 2>&1

fi
# ---------------- E: bcache writeback with dirty data ----------------
if want e; then
e=$(by_serial SSDE001); m=/run/lab/e; bk=$(part 5)
make-bcache --writeback --cset-uuid 11111111-2222-3333-4444-555555555502 -B "$bk" -C "$e" > /dev/null
udevadm settle --timeout=30
for x in "$e" "$bk"; do echo "$x" > /sys/fs/bcache/register_quiet 2>/dev/null || true; done
bn=$(basename "$bk")
for _ in $(seq 100); do [ -e "/sys/class/block/$bn/bcache/cache" ] && break; sleep 0.2; done
bdev=/dev/$(basename "$(readlink /sys/class/block/$bn/bcache/dev)"); echo "$bdev" > "$O/e-bdev.txt"
echo 40 > /sys/class/block/$bn/bcache/writeback_percent
mkxfs "$bdev" $m
sums $m > "$O/e-sums.txt"
cat /sys/class/block/$bn/bcache/dirty_data > "$O/e-before-dirty.txt"
bcsys e-before-backing "/sys/class/block/$bn/bcache"
load_start e $m
pull e SSDE001
for i in $(seq 100); do [ -e "$bdev" ] || break; sleep 0.1; done
echo "$bdev exists: $([ -e "$bdev" ] && echo yes || echo no) after $i polls" > "$O/e-until-gone.txt"
sleep 8
load_stop e
ls -la /sys/fs/bcache/ > "$O/e-pulled-fsbcache.txt" 2>&1
ls /sys/block > "$O/e-pulled-blocks.txt"
bcsys e-pulled-backing "/sys/class/block/$bn/bcache"
cwstate e-pulled
cw plan remove --device "$bk" --json > "$O/e-plan-remove.json" 2> "$O/e-plan-remove.err"
umount $m > "$O/e-umount.txt" 2>&1
bcache-super-show "$bk" > "$O/e-super-show.txt" 2>&1
echo "$bk" > /sys/fs/bcache/register 2> "$O/e-register.txt"; echo "rc $?" >> "$O/e-register.txt"
sleep 1
bcsys e-registered-backing "/sys/class/block/$bn/bcache"
cwstate e-registered
run e-running sh -c "echo 1 > /sys/class/block/$bn/bcache/running"
sleep 2
ls /sys/block > "$O/e-running-blocks.txt"
bcsys e-running-backing "/sys/class/block/$bn/bcache"
bdev=/dev/$(basename "$(readlink /sys/class/block/$bn/bcache/dev 2>/dev/null)" 2>/dev/null); echo "$bdev" >> "$O/e-bdev.txt"
run e-mount mount "$bdev" $m
verify e-verify $m "$O/e-sums.txt"
umount $m 2>/dev/null
xfs_repair -n "$bdev" > "$O/e-xfs-repair-n.txt" 2>&1; echo "rc $?" >> "$O/e-xfs-repair-n.txt"
cwstate e-running

fi
# ---------------- F: a mirrored writeback pool loses a leg, repaired onto a new SSD ----------------
if want f; then
f1=$(by_serial SSDF001); f2=$(by_serial SSDF002); m=/run/lab/f
pvcreate -q "$(part 6)" "$f1" "$f2"; vgcreate -q vgf "$(part 6)" "$f1" "$f2"
lvcreate -q -y -L 400M -n data vgf "$(part 6)"
mkxfs /dev/vgf/data $m
poolraid vgf 64M "$f1" "$f2"
lvconvert -q -y --type cache-pool --poolmetadata vgf/data_cache_meta --cachemode writeback vgf/data_cache
lvconvert -q -y --type cache --cachepool vgf/data_cache vgf/data
head -c 8M /dev/urandom > $m/c; sync
sums $m > "$O/f-sums.txt"
lvsall f-before vgf; dm f-before
load_start f $m
pull f SSDF002
sleep 10
load_stop f
dm f-pulled; lvsall f-pulled vgf
cwstate f-pulled
cw plan remove --device /dev/vgf/data --json > "$O/f-plan-remove.json" 2> "$O/f-plan-remove.err"
verify f-verify-degraded $m "$O/f-sums.txt"
f3=$(by_serial SSDF003)
run f-pvcreate pvcreate "$f3"
run f-vgextend vgextend vgf "$f3"
run f-repair-top lvconvert --yes --repair vgf/data
lvsall f-after-top vgf
for sub in $(lvs --noheadings -a -o lv_name vgf | tr -d ' []' | grep -E '_c(data|meta)$'); do
  run "f-repair-$sub" lvconvert --yes --repair "vgf/$sub" "$f3"
done
for i in $(seq 120); do
  lvs --noheadings -a -o sync_percent vgf | tr -d ' ' | grep -qv '^100.00$\|^$' || break
  sleep 1
done
echo "synced after $i s" > "$O/f-sync.txt"
lvsall f-repaired vgf; dm f-repaired
run f-vgreduce vgreduce --removemissing vgf
lvsall f-reduced vgf
cwstate f-reduced
verify f-verify $m "$O/f-sums.txt"

fi
# ---------------- G: bcache writethrough pulled, then detached; does it come back after a stop? ----------------
if want g; then
g=$(by_serial SSDD001); m=/run/lab/g; bk=$(part 4)
wipefs -a -q "$bk"
make-bcache --cset-uuid 11111111-2222-3333-4444-555555555511 -B "$bk" -C "$g" > /dev/null
udevadm settle --timeout=30
for x in "$g" "$bk"; do echo "$x" > /sys/fs/bcache/register_quiet 2>/dev/null || true; done
bn=$(basename "$bk")
for _ in $(seq 100); do [ -e "/sys/class/block/$bn/bcache/cache" ] && break; sleep 0.2; done
bdev=/dev/$(basename "$(readlink /sys/class/block/$bn/bcache/dev)"); echo "$bdev" > "$O/g-bdev.txt"
mkxfs "$bdev" $m
sums $m > "$O/g-sums.txt"
load_start g $m
pull g SSDD001
sleep 6
load_stop g
bcsys g-pulled-backing "/sys/class/block/$bn/bcache"
cwstate g-pulled
cw plan remove --device "$bk" --json > "$O/g-plan-remove.json" 2> "$O/g-plan-remove.err"
run g-detach sh -c "echo 1 > /sys/class/block/$bn/bcache/detach"
sleep 2
bcsys g-detached-backing "/sys/class/block/$bn/bcache"
bcache-super-show "$bk" > "$O/g-detached-super.txt" 2>&1
run g-umount umount $m
run g-stop sh -c "echo 1 > /sys/class/block/$bn/bcache/stop"
sleep 2
ls /sys/block > "$O/g-stopped-blocks.txt"
run g-register sh -c "echo $bk > /sys/fs/bcache/register"
sleep 2
bcsys g-reregistered-backing "/sys/class/block/$bn/bcache"
bdev=/dev/$(basename "$(readlink /sys/class/block/$bn/bcache/dev 2>/dev/null)" 2>/dev/null); echo "$bdev" >> "$O/g-bdev.txt"
run g-mount mount "$bdev" $m
verify g-verify $m "$O/g-sums.txt"
umount $m 2>/dev/null
fi

# ---------------- H: bcache writeback with dirty data pulled: registered, run, detached ----------------
if want h; then
h=$(by_serial SSDE001); m=/run/lab/h; bk=$(part 5)
wipefs -a -q "$bk"
# a and b are written back to the disk (writeback_percent 0 until dirty_data is 0), c stays dirty
make-bcache --writeback --cset-uuid 11111111-2222-3333-4444-555555555512 -B "$bk" -C "$h" > /dev/null
udevadm settle --timeout=30
for x in "$h" "$bk"; do echo "$x" > /sys/fs/bcache/register_quiet 2>/dev/null || true; done
bn=$(basename "$bk")
for _ in $(seq 100); do [ -e "/sys/class/block/$bn/bcache/cache" ] && break; sleep 0.2; done
bdev=/dev/$(basename "$(readlink /sys/class/block/$bn/bcache/dev)"); echo "$bdev" > "$O/h-bdev.txt"
mkxfs "$bdev" $m
echo 0 > /sys/class/block/$bn/bcache/writeback_percent
for _ in $(seq 120); do [ "$(cat /sys/class/block/$bn/bcache/dirty_data)" = "0.0k" ] && break; sleep 0.5; done
cat /sys/class/block/$bn/bcache/dirty_data > "$O/h-flushed-dirty.txt"
echo 40 > /sys/class/block/$bn/bcache/writeback_percent
head -c 8M /dev/urandom > $m/c; sync
sums $m > "$O/h-sums.txt"
cat /sys/class/block/$bn/bcache/dirty_data > "$O/h-before-dirty.txt"
pull h SSDE001
sleep 6
ls /sys/block > "$O/h-pulled-blocks.txt"
cwstate h-pulled
umount $m > "$O/h-umount.txt" 2>&1
bcache-super-show "$bk" > "$O/h-super.txt" 2>&1
dd if="$bk" bs=4096 skip=1 count=1 2>/dev/null | base64 -w0 > "$O/h-superblock.b64"
cwstate h-unregistered
cw plan remove --device "$bk" --json > "$O/h-plan-remove.json" 2> "$O/h-plan-remove.err"
run h-register sh -c "echo $bk > /sys/fs/bcache/register"
sleep 1
bcsys h-registered-backing "/sys/class/block/$bn/bcache"
run h-running sh -c "echo 1 > /sys/class/block/$bn/bcache/running"
sleep 2
bcsys h-running-backing "/sys/class/block/$bn/bcache"
run h-detach sh -c "echo 1 > /sys/class/block/$bn/bcache/detach"
sleep 2
bcsys h-detached-backing "/sys/class/block/$bn/bcache"
bcache-super-show "$bk" > "$O/h-detached-super.txt" 2>&1
bdev=/dev/$(basename "$(readlink /sys/class/block/$bn/bcache/dev 2>/dev/null)" 2>/dev/null); echo "$bdev" >> "$O/h-bdev.txt"
run h-mount mount "$bdev" $m
verify h-verify $m "$O/h-sums.txt"
umount $m 2>/dev/null
fi

# ---------------- I: dm-writecache pulled, then taken off while inactive ----------------
if want i; then
c=$(by_serial SSDC001); m=/run/lab/i
pvcreate -q "$(part 3)" "$c"; vgcreate -q vgi "$(part 3)" "$c"
lvcreate -q -y -L 400M -n data vgi "$(part 3)"
mkxfs /dev/vgi/data $m
lvcreate -q -y -an -Zn -L 64M -n data_wcache vgi "$c"
lvconvert -q -y --type writecache --cachevol data_wcache --cachesettings block_size=512 vgi/data
head -c 8M /dev/urandom > $m/c; sync
sums $m > "$O/i-sums.txt"
dmsetup status vgi-data > "$O/i-before-dmstatus.txt"
load_start i $m
pull i SSDC001
sleep 6
load_stop i
dm i-pulled; lvsall i-pulled vgi
cwstate i-pulled
(cat $m/a > /dev/null) > "$O/i-read-file.txt" 2>&1; echo "rc $?" >> "$O/i-read-file.txt"
run i-umount umount $m
run i-deactivate lvchange --yes -an vgi/data
lvsall i-inactive vgi
run i-uncache-force lvconvert --yes --force --uncache vgi/data
lvsall i-uncached vgi
run i-vgreduce vgreduce --removemissing vgi
run i-activate lvchange --yes -ay vgi/data
lvsall i-reduced vgi
run i-mount mount /dev/vgi/data $m
verify i-verify $m "$O/i-sums.txt"
umount $m 2>/dev/null
xfs_repair -n /dev/vgi/data > "$O/i-xfs-repair-n.txt" 2>&1; echo "rc $?" >> "$O/i-xfs-repair-n.txt"
fi

dmesg > "$O/dmesg.txt"
echo scenario-done
