# Scenario: a dead cache SSD, for each backend, and the way out (issue 29). One boot, one vCPU.
# Five caches on five partitions of the 150-IOPS HDD, each with an XFS and files whose sha256 is
# recorded: lvmcache writethrough (twice), dm-writecache (files written before the attach, so they
# are on the origin), bcache writethrough, and a mirrored (raid1) writeback lvmcache pool on two
# SSDs. The second lvmcache is deactivated after its pull, and `vgchange -ay` then refuses it as at
# a boot with its SSD dead: it is rescued while it is no block device.
# A writer runs on each while their SSDs (one leg of the mirror) are deleted from the SCSI bus;
# `cachewise status --json` then reports each failure; the rescue plans (`plan remove`, and
# `plan cache-repair` onto a third SSD for the mirror) run with `cachewise apply`; every sha256
# is checked on the origin. The bcache device is stopped and registered again at the end, as a
# restart would, to show it comes back by itself.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
export LVM_SUPPRESS_FD_WARNINGS=1 CACHEWISE_STATE_DIR="$LAB_WORK/state"
O="$LAB_OUT"
hdd=$(by_serial HDD0001)
{ uname -r; lvm version | head -1; cw --version; } > "$O/versions.txt"
printf 'label: gpt\n,600M\n,600M\n,600M\n,600M\n,400M\n' | sfdisk -q "$hdd"
udevadm settle --timeout=30
part() { echo "${hdd}$1"; }
fs() {  # fs DEV MNT NAME: an XFS on DEV at MNT with two files, their sums in NAME-sums.txt
  mkfs.xfs -q -f "$1"; mkdir -p "$2"; mount "$1" "$2"
  for f in a b; do head -c 6M /dev/urandom > "$2/$f"; done
  sync; (cd "$2" && sha256sum a b) > "$O/$3-sums.txt"
}
verify() {  # verify MNT NAME: every file's sum on the origin, after the page cache is dropped
  sync; echo 3 > /proc/sys/vm/drop_caches
  if (cd "$1" && sha256sum -c "$O/$2-sums.txt") > "$O/$2-verify.txt" 2>&1; then echo ok >> "$O/$2-verify.txt"; fi
}
pool() {  # pool VG MODE SSD...: a cache pool as cachewise makes it (raid1 on two SSDs), attached to VG/data
  local vg=$1 mode=$2; shift 2
  local raid=(); [ $# = 2 ] && raid=(--type raid1 -m 1)
  lvcreate -q -y --wipesignatures y "${raid[@]}" -n data_cache -L 48M "$vg" "$@"
  lvcreate -q -y --wipesignatures y "${raid[@]}" -n data_cache_meta -L 8M "$vg" "$@"
  lvconvert -q -y --type cache-pool --poolmetadata "$vg/data_cache_meta" --cachemode "$mode" "$vg/data_cache"
  lvconvert -q -y --type cache --cachepool "$vg/data_cache" "$vg/data"
}
a=$(by_serial SSDA001); c=$(by_serial SSDC001); d=$(by_serial SSDD001)
f1=$(by_serial SSDF001); f2=$(by_serial SSDF002); f3=$(by_serial SSDF003); e=$(by_serial SSDE001)

# --- the four caches ---
pvcreate -q "$(part 1)" "$a"; vgcreate -q vga "$(part 1)" "$a"; lvcreate -q -y -L 320M -n data vga "$(part 1)"
fs /dev/vga/data /run/lab/a a
pool vga writethrough "$a"
pvcreate -q "$(part 2)" "$c"; vgcreate -q vgc "$(part 2)" "$c"; lvcreate -q -y -L 320M -n data vgc "$(part 2)"
fs /dev/vgc/data /run/lab/c c
lvcreate -q -y -an -Zn -L 48M -n data_wcache vgc "$c"
lvconvert -q -y --type writecache --cachevol data_wcache --cachesettings block_size=512 vgc/data
make-bcache --cset-uuid 22222222-2222-3333-4444-555555555501 -B "$(part 3)" -C "$d" > /dev/null
udevadm settle --timeout=30
for x in "$d" "$(part 3)"; do echo "$x" > /sys/fs/bcache/register_quiet 2>/dev/null || true; done
bn=$(basename "$(part 3)")
for _ in $(seq 100); do [ -e "/sys/class/block/$bn/bcache/cache" ] && break; sleep 0.2; done
bdev=/dev/$(basename "$(readlink "/sys/class/block/$bn/bcache/dev")")
udevadm settle --timeout=30
buuid=$(cat "/sys/class/block/$bn/bcache/backing_dev_uuid")
fs "$bdev" /run/lab/d d
pvcreate -q "$(part 4)" "$f1" "$f2"; vgcreate -q vgf "$(part 4)" "$f1" "$f2"; lvcreate -q -y -L 320M -n data vgf "$(part 4)"
fs /dev/vgf/data /run/lab/f f
pool vgf writeback "$f1" "$f2"
pvcreate -q "$(part 5)" "$e"; vgcreate -q vge "$(part 5)" "$e"; lvcreate -q -y -L 320M -n data vge "$(part 5)"
fs /dev/vge/data /run/lab/e e
pool vge writethrough "$e"
head -c 4M /dev/urandom > /run/lab/f/c; sync; (cd /run/lab/f && sha256sum c) >> "$O/f-sums.txt"
cw status --json > "$O/status-before.json"

# --- the pulls, under load ---
for m in a c d e f; do
  fio --name=load --filename=/run/lab/$m/load --rw=randrw --bs=4k --size=4M --direct=1 --ioengine=libaio \
      --iodepth=1 --rate_iops=20 --time_based --runtime=600 > "$O/$m-load.txt" 2>&1 &
  echo $! >> "$O/loads"
done
sleep 3
for serial in SSDA001 SSDC001 SSDD001 SSDE001 SSDF002; do
  n=$(basename "$(by_serial $serial)")
  echo "$serial $n $(cut -d' ' -f1 /proc/uptime)" >> "$O/pulls.txt"
  echo 1 > "/sys/block/$n/device/delete"
done
for _ in $(seq 100); do dmsetup status vga-data | grep -q Fail && break; sleep 0.1; done
echo "vga-data $(dmsetup status vga-data) at $(cut -d' ' -f1 /proc/uptime)" >> "$O/pulls.txt"
sleep 5
for p in $(cat "$O/loads"); do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
# vge/data as after a reboot with its SSD dead: not active, and lvm2 will not activate it
umount /run/lab/e > "$O/e-umount.txt" 2>&1 || true
if lvchange -an vge/data > "$O/e-deactivate.txt" 2>&1; then echo "rc 0" >> "$O/e-deactivate.txt"; else echo "rc $?" >> "$O/e-deactivate.txt"; fi
if vgchange -ay vge > "$O/e-vgchange.txt" 2>&1; then echo "rc 0" >> "$O/e-vgchange.txt"; else echo "rc $?" >> "$O/e-vgchange.txt"; fi
lvs -a -o lv_name,lv_attr,segtype,cache_mode,devices --reportformat json vge > "$O/e-inactive-lvs.json" 2> "$O/e-inactive-lvs.err" || true
cw scan --save-raw "$O/e-inactive-raw.json" > "$O/scan.txt" 2>&1 || true
cw status --json > "$O/status.json"
cw status > "$O/status.txt" 2>&1 || true
dmsetup status > "$O/dmstatus.txt"
rc=0; cw doctor --json > "$O/doctor.json" 2> "$O/doctor.err" || rc=$?
echo $rc > "$O/doctor.rc"
cw doctor > "$O/doctor.txt" 2>&1 || true

# --- the way out ---
plan() {  # plan NAME ARGS...: the plan (or its refusal) and its preview
  if cw plan "${@:2}" -o "$O/$1-plan.json" > "$O/$1-preview.txt" 2>&1; then echo "rc 0" >> "$O/$1-preview.txt"
  else echo "rc $?" >> "$O/$1-preview.txt"; fi
}
apply() {  # apply NAME: the plan applied, its log and exit code kept
  if cw apply "$O/$1-plan.json" --yes > "$O/$1-apply.txt" 2>&1; then echo "rc 0" >> "$O/$1-apply.txt"
  else echo "rc $?" >> "$O/$1-apply.txt"; fi
}
# lvmcache writethrough: taken off while mounted; the XFS that shut down mounts again (log recovery)
plan a remove --device /dev/vga/data --free-ssd
apply a
umount /run/lab/a; mount /dev/vga/data /run/lab/a > "$O/a-mount.txt" 2>&1 || true; verify /run/lab/a a
lvs -a --reportformat json vga > "$O/a-lvs.json"
# lvmcache writethrough, not active (lvm2 refused it): taken off as it is, then activated
plan e remove --device vge/data
apply e
mount /dev/vge/data /run/lab/e > "$O/e-mount.txt" 2>&1 || true; verify /run/lab/e e
lvs -a -o +lv_uuid --reportformat json vge > "$O/e-lvs.json"
# writecache: refused without the acceptance, then taken off inactive (unmounted first)
plan c-refused remove --device /dev/vgc/data
umount /run/lab/c
plan c remove --device /dev/vgc/data --accept-data-loss
apply c
mount /dev/vgc/data /run/lab/c > "$O/c-mount.txt" 2>&1 || true; verify /run/lab/c c
lvs -a --reportformat json vgc > "$O/c-lvs.json"
# bcache writethrough: stopped, registered again and started without its set (unmounted first)
umount /run/lab/d
plan d remove --device "$(part 3)"
apply d
udevadm settle --timeout=30
mount "/dev/bcache/by-uuid/$buuid" /run/lab/d > "$O/d-mount.txt" 2>&1 || true; verify /run/lab/d d
umount /run/lab/d || true
bcache-super-show "$(part 3)" > "$O/d-super.txt" 2>&1
# as after a restart: stopped and registered again, it starts by itself
echo 1 > "/sys/class/block/$bn/bcache/stop" || true; sleep 2
echo "$(part 3)" > /sys/fs/bcache/register || true; sleep 2; udevadm settle --timeout=30
cat "/sys/class/block/$bn/bcache/running" "/sys/class/block/$bn/bcache/state" > "$O/d-restarted.txt" || true
mount "/dev/bcache/by-uuid/$buuid" /run/lab/d > "$O/d-restarted-mount.txt" 2>&1 || true
cp "$O/d-sums.txt" "$O/d-restarted-sums.txt"; verify /run/lab/d d-restarted
# the mirror: removal refused, the repair onto the third SSD; the file system stays mounted
plan f-remove remove --device /dev/vgf/data
plan f cache-repair --lv vgf/data --ssd "$f3"
apply f
lvs -a -o lv_name,lv_attr,devices,lv_health_status,sync_percent --reportformat json vgf > "$O/f-lvs.json"
verify /run/lab/f f
cw status --json > "$O/status-after.json"
echo scenario-done
