# Scenario: bcache writeback on two empty disks through `cachewise plan` / `cachewise apply`:
# create, write data with checksums, a safe detach while dirty data exists (progress shown),
# stop; the backing disk itself reads back the same checksums.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
export CACHEWISE_STATE_DIR="$LAB_WORK/state"
# --- bcache writeback on empty disks: create, write, safe detach while dirty, stop ---
bhdd_id=$(ls /dev/disk/by-id/*BHDD0001 | head -1)
bssd_id=$(ls /dev/disk/by-id/*BSSD0001 | head -1)
bhdd=$(by_serial BHDD0001)
cw plan bcache-create --backing "$bhdd_id" --cache "$bssd_id" --mode writeback -o "$LAB_OUT/bc.json" > "$LAB_OUT/bc-preview.txt"
cw apply "$LAB_OUT/bc.json" --yes --json > "$LAB_OUT/bc-apply.json" 2> "$LAB_OUT/bc-apply.err"
bdev=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['bcache_device'])" "$LAB_OUT/bc-apply.json")
bname=$(basename "$(readlink -f "$bdev")")
cat "/sys/block/$bname/bcache/cache_mode" "/sys/block/$bname/bcache/sequential_cutoff" \
    "/sys/block/$bname/bcache/writeback_percent" > "$LAB_OUT/bc-settings.txt"
mkfs.ext4 -q "$bdev"
mkdir -p /run/lab/bc && mount "$bdev" /run/lab/bc
fio --name=bc --filename=/run/lab/bc/g1 --size=12M --rw=randwrite --bs=4k --direct=1 --ioengine=libaio \
    --iodepth=4 --output-format=terse > /dev/null
head -c 4M /dev/urandom > /run/lab/bc/g2
sync
(cd /run/lab/bc && sha256sum g1 g2) > "$LAB_OUT/bc-sums.txt"
cat "/sys/block/$bname/bcache/dirty_data" > "$LAB_OUT/bc-dirty-before.txt"
cat "/sys/block/$bname/bcache/state" >> "$LAB_OUT/bc-dirty-before.txt"
cw plan bcache-detach --device "$bdev" -o "$LAB_OUT/bc-detach.json" > /dev/null
cw apply "$LAB_OUT/bc-detach.json" --yes > "$LAB_OUT/bc-detach.txt" 2>&1
cat "/sys/block/$bname/bcache/state" > "$LAB_OUT/bc-state-after.txt"
umount /run/lab/bc; echo 3 > /proc/sys/vm/drop_caches; mount "$bdev" /run/lab/bc
(cd /run/lab/bc && sha256sum -c --quiet "$LAB_OUT/bc-sums.txt") > "$LAB_OUT/bc-verify.txt" 2>&1 && echo ok >> "$LAB_OUT/bc-verify.txt" || echo FAILED >> "$LAB_OUT/bc-verify.txt"
umount /run/lab/bc
# Stop the bcache device and read the backing disk itself (data starts 8 KiB in).
echo 1 > "/sys/block/$bname/bcache/stop"
for _ in $(seq 50); do [ -e "/sys/block/$bname" ] || break; sleep 0.2; done
loop=$(losetup -f --show -r -o 8192 "$bhdd")
mount -o ro,noload "$loop" /run/lab/bc
(cd /run/lab/bc && sha256sum -c --quiet "$LAB_OUT/bc-sums.txt") > "$LAB_OUT/bc-verify-raw.txt" 2>&1 && echo ok >> "$LAB_OUT/bc-verify-raw.txt" || echo FAILED >> "$LAB_OUT/bc-verify-raw.txt"
umount /run/lab/bc; losetup -d "$loop"

echo scenario-done
