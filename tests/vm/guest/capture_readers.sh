# Capture the outputs the readers (advisor/readers/) are tested against: lvs of a cached LV in
# both report formats, dm-cache (writeback, after reads and writes) and dm-writecache status
# lines, and every file of a writeback bcache device's sysfs directory with its statistics.
# Not part of the lab tier: `python -m tests.vm.capture_reader_fixtures` runs it once.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
hdd=$(by_serial HDD0001)
ssd=$(by_serial SSD0001)
bhdd=$(by_serial BCB0001)
bssd=$(by_serial BCC0001)
{ uname -r; lvm version | head -3; dpkg-query -W -f '${Version}\n' bcache-tools; } > "$LAB_OUT/versions.txt"

pvcreate -q "$hdd" "$ssd"
vgcreate -q labvg "$hdd" "$ssd"
lvcreate -q -y -L 512M -n data labvg "$hdd"
lvcreate -q -y -L 256M -n wc labvg "$hdd"
lvcreate -q -y --type cache-pool -L 128M -n data_cache labvg "$ssd"
lvconvert -q -y --type cache --cachepool labvg/data_cache --cachemode writeback labvg/data
lvcreate -q -y -an -Zn -L 64M -n wc_fast labvg "$ssd"  # a cachevol must be inactive to attach
lvconvert -q -y --type writecache --cachevol wc_fast labvg/wc
fields=lv_name,vg_name,lv_uuid,lv_attr,lv_size,segtype,lv_dm_path,devices,pool_lv,origin,lv_role,cache_mode,cache_policy,cache_dirty_blocks
lvs -a -o "$fields" --reportformat json_std --units b --nosuffix > /dev/null 2> "$LAB_OUT/lvs-json-std-2.03.16.txt" \
  && echo "json_std accepted" >> "$LAB_OUT/lvs-json-std-2.03.16.txt" || true
fio --name=zipf --filename=/dev/labvg/data --direct=1 --ioengine=libaio --iodepth=4 --rw=randrw --rwmixread=80 \
    --bs=4k --random_distribution=zipf:1.2 --time_based --runtime=10 --output-format=terse > /dev/null
dmsetup status labvg-data > "$LAB_OUT/dmsetup-status-cache-writeback.txt"
lvs -a -o "$fields" --reportformat json --units b --nosuffix labvg > "$LAB_OUT/lvs-cached.json"
fio --name=w --filename=/dev/labvg/wc --direct=1 --ioengine=libaio --iodepth=4 --rw=randwrite --bs=4k \
    --size=32M --output-format=terse > /dev/null
dmsetup status labvg-wc > "$LAB_OUT/dmsetup-status-writecache.txt"

make-bcache --writeback -B "$bhdd" -C "$bssd" > /dev/null
udevadm settle --timeout=30
for d in "$bssd" "$bhdd"; do echo "$d" > /sys/fs/bcache/register_quiet 2>/dev/null || true; done
name=$(basename "$bhdd")
for _ in $(seq 100); do [ -e "/sys/block/$name/bcache/cache" ] && break; sleep 0.2; done
bdev=/dev/$(basename "$(readlink /sys/block/$name/bcache/dev)")
echo writeback > "/sys/block/$name/bcache/cache_mode"
fio --name=bc --filename="$bdev" --direct=1 --ioengine=libaio --iodepth=4 --rw=randrw --rwmixread=70 --bs=4k \
    --size=64M --random_distribution=zipf:1.2 --time_based --runtime=8 --output-format=terse > /dev/null
"$CW_PY" - "/sys/block/$name/bcache" > "$LAB_OUT/bcache-sysfs-writeback.json" <<'PY'
import json, os, sys
root = sys.argv[1]
files = {}
for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = [d for d in dirnames if d.startswith("stats_")]
    for name in filenames:
        rel = os.path.relpath(os.path.join(dirpath, name), root)
        try:
            files[rel] = open(os.path.join(dirpath, name)).read().strip()
        except OSError:
            pass
json.dump(dict(sorted(files.items())), sys.stdout, indent=1)
PY
echo scenario-done
