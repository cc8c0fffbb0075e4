# Scenario (issue 31, soak): one SSD caching two disks with bcache. One boot:
# 1. `bcache-create` makes a writeback bcache of the first HDD with the SSD; an ext4 on it, files
#    with their checksums;
# 2. `bcache-join` adds the second HDD to the same cache set (writeback); an ext4, files; writes
#    leave dirty data on both; a raw discovery snapshot of the shared set (fixture);
# 3. a detach of the first that would wipe the SSD is refused (the set caches the second too);
#    the detach without the wipe writes the first's dirty data back and leaves the set running,
#    the second's bcache device cached and mounted; every checksum of both unchanged;
# 4. the detach of the second with the wipe stops the set and leaves the SSD blank; every
#    checksum of both unchanged, read again after the page cache is dropped.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
export CACHEWISE_STATE_DIR="$LAB_WORK/state"
stamp() { echo "$(date +%s) $*" >> "$LAB_OUT/timeline.txt"; }
sums_ok() {  # sums_ok DIR SUMS NAME: check DIR against $LAB_OUT/SUMS, the result in NAME.txt
  if (cd "$1" && sha256sum -c --quiet "$LAB_OUT/$2") > "$LAB_OUT/$3.txt" 2>&1; then
    echo ok >> "$LAB_OUT/$3.txt"; else echo FAILED >> "$LAB_OUT/$3.txt"; fi
}
id_of() { ls /dev/disk/by-id/*"$1" | grep -v -- -part | head -1; }
h1=$(id_of SHHDD01); h2=$(id_of SHHDD02); ssd=$(id_of SHSSD01)
bdev_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['bcache_device'])" "$1"; }
stamp start
cw --version > "$LAB_OUT/versions.txt"; make-bcache 2>&1 | head -1 >> "$LAB_OUT/versions.txt" || true

# --- 1. the first disk ---
cw plan bcache-create --backing "$h1" --cache "$ssd" --mode writeback -o "$LAB_OUT/create.json" > /dev/null
cw apply "$LAB_OUT/create.json" --yes --json > "$LAB_OUT/create-apply.json" 2> "$LAB_OUT/create-apply.err"
b1=$(bdev_of "$LAB_OUT/create-apply.json"); n1=$(basename "$(readlink -f "$b1")")
mkfs.ext4 -q "$b1"; mkdir -p /run/sh/1 /run/sh/2; mount "$b1" /run/sh/1
head -c 8M /dev/urandom > /run/sh/1/a; sync

# --- 2. the second disk joins the set ---
stamp join
cw plan bcache-join --backing "$h2" --cache "$ssd" --mode writeback -o "$LAB_OUT/join.json" \
    > "$LAB_OUT/join-preview.txt" 2>&1
cw apply "$LAB_OUT/join.json" --yes --json > "$LAB_OUT/join-apply.json" 2> "$LAB_OUT/join-apply.err"
b2=$(bdev_of "$LAB_OUT/join-apply.json"); n2=$(basename "$(readlink -f "$b2")")
mkfs.ext4 -q "$b2"; mount "$b2" /run/sh/2
head -c 8M /dev/urandom > /run/sh/2/b; sync
for m in 1 2; do  # dirty data on both: random writes to a new file on each
  fio --name=w$m --filename=/run/sh/$m/w --size=6M --rw=randwrite --bs=4k --direct=1 --ioengine=libaio \
      --iodepth=4 --output-format=terse > /dev/null
done
sync
(cd /run/sh/1 && sha256sum a w) > "$LAB_OUT/sums-1.txt"; (cd /run/sh/2 && sha256sum b w) > "$LAB_OUT/sums-2.txt"
for n in $n1 $n2; do
  echo "$n $(cat /sys/block/$n/bcache/state) $(cat /sys/block/$n/bcache/dirty_data) $(cat /sys/block/$n/bcache/cache_mode)"
done > "$LAB_OUT/shared-state.txt"
cset=$(basename "$(readlink -f /sys/block/$n1/bcache/cache)")
echo "$cset $(basename "$(readlink -f /sys/block/$n2/bcache/cache)")" > "$LAB_OUT/csets.txt"
ls /etc/cachewise/bcache/ > "$LAB_OUT/tunables-files.txt" 2>&1 || true
cw scan --json > "$LAB_OUT/scan-shared.json"
cw scan --save-raw "$LAB_OUT/raw-shared.json" > /dev/null

# --- 3. the first leaves; the set stays for the second ---
stamp detach-1
if cw plan bcache-detach --device "$b1" --wipe-cache -o "$LAB_OUT/refused.json" > "$LAB_OUT/refused.txt" 2>&1; then
  echo "rc 0" >> "$LAB_OUT/refused.txt"; else echo "rc $?" >> "$LAB_OUT/refused.txt"; fi
cw plan bcache-detach --device "$b1" -o "$LAB_OUT/detach-1.json" > "$LAB_OUT/detach-1-preview.txt" 2>&1
cw apply "$LAB_OUT/detach-1.json" --yes > "$LAB_OUT/detach-1.txt" 2>&1 || echo "rc $?" >> "$LAB_OUT/detach-1.txt"
{ cat /sys/block/$n1/bcache/state; cat /sys/block/$n2/bcache/state; cat /sys/block/$n2/bcache/dirty_data
  [ -d "/sys/fs/bcache/$cset" ] && echo "set running" || echo "set gone"
  [ -e "/sys/block/$n2/bcache/cache" ] && echo "second cached" || echo "second uncached"
} > "$LAB_OUT/after-detach-1.txt"
head -c 1M /dev/urandom > /run/sh/2/more && sync && echo written >> "$LAB_OUT/after-detach-1.txt"
sums_ok /run/sh/1 sums-1.txt verify-1a; sums_ok /run/sh/2 sums-2.txt verify-2a

# --- 4. the second leaves; the set stops and the SSD is wiped ---
stamp detach-2
cw plan bcache-detach --device "$b2" --wipe-cache -o "$LAB_OUT/detach-2.json" > "$LAB_OUT/detach-2-preview.txt" 2>&1
cw apply "$LAB_OUT/detach-2.json" --yes > "$LAB_OUT/detach-2.txt" 2>&1 || echo "rc $?" >> "$LAB_OUT/detach-2.txt"
{ [ -d "/sys/fs/bcache/$cset" ] && echo "set running" || echo "set gone"
  blkid -p -o value -s TYPE "$ssd" || echo "ssd blank"
} > "$LAB_OUT/after-detach-2.txt"
for m in 1 2; do umount /run/sh/$m; done
echo 3 > /proc/sys/vm/drop_caches
mount "$b1" /run/sh/1; mount "$b2" /run/sh/2
sums_ok /run/sh/1 sums-1.txt verify-1b; sums_ok /run/sh/2 sums-2.txt verify-2b
umount /run/sh/1 /run/sh/2
stamp end
