# Scenario, one boot for two must-shows and the mode change:
# 1. the lvmcache attach as an Ansible playbook (`cachewise plan --format ansible`), applied with
#    ansible-playbook against localhost, twice (the second run changes nothing); then
#    `lvmcache-mode` to writeback and, with dirty blocks, back to writethrough; checksums kept;
# 2. bcache writeback on two empty disks through `cachewise plan` / `cachewise apply`: create,
#    write data with checksums, a safe detach while dirty data exists (progress shown), stop, and
#    the backing disk itself reads back the same checksums.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
export CACHEWISE_STATE_DIR="$LAB_WORK/state"
stamp() { echo "$(date +%s) $*" >> "$LAB_OUT/timeline.txt"; }
sums_ok() {  # sums_ok DIR SUMS NAME: check DIR against $LAB_OUT/SUMS, the result in NAME.txt
  if (cd "$1" && sha256sum -c --quiet "$LAB_OUT/$2") > "$LAB_OUT/$3.txt" 2>&1; then
    echo ok >> "$LAB_OUT/$3.txt"; else echo FAILED >> "$LAB_OUT/$3.txt"; fi
}
modprobe loop

# --- 1. Ansible: the same lvmcache attach, run twice against localhost ---
stamp ansible-setup
hdd=$(by_serial HDD0001)
ssd_id=$(ls /dev/disk/by-id/*SSD0001 | head -1)
mnt=/run/lab/data
pvcreate -q "$hdd"; vgcreate -q labvg "$hdd"; lvcreate -q -y -L 256M -n data labvg
mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/labvg/data
mkdir -p $mnt && mount /dev/labvg/data $mnt
for i in 1 2 3; do head -c 8M /dev/urandom > $mnt/f$i; done
sync; (cd $mnt && sha256sum f*) > "$LAB_OUT/an-sums.txt"
if [ "${LAB_SOAK:-0}" = 1 ]; then  # the playbook, twice (about 3 minutes under emulation): soak only
  cw plan lvmcache-attach --lv labvg/data --ssd "$ssd_id" --size 128m --format ansible -o "$LAB_OUT/attach.yml" 2> "$LAB_OUT/attach-plan.err"
  export HOME="$LAB_WORK/home" ANSIBLE_LOCAL_TEMP="$LAB_WORK/ansible-tmp" ANSIBLE_REMOTE_TEMP="$LAB_WORK/ansible-tmp"
  mkdir -p "$HOME" "$ANSIBLE_LOCAL_TEMP"
  for run in 1 2; do
    stamp "ansible-run-$run"
    "$(dirname "$CW_PY")/ansible-playbook" -i localhost, -c local -e ansible_python_interpreter=/usr/bin/python3 \
        "$LAB_OUT/attach.yml" > "$LAB_OUT/ansible-$run.txt" 2>&1 && echo "rc 0" >> "$LAB_OUT/ansible-$run.txt" \
        || echo "rc $?" >> "$LAB_OUT/ansible-$run.txt"
  done
else  # the same attach through cachewise, for the mode change that follows
  cw plan lvmcache-attach --lv labvg/data --ssd "$ssd_id" --size 128m -o "$LAB_OUT/attach.json" > /dev/null
  cw apply "$LAB_OUT/attach.json" --yes > "$LAB_OUT/attach-apply.txt" 2>&1
fi
stamp ansible-done
lvs -a --reportformat json -o vg_name,lv_name,segtype,cache_mode,chunk_size > "$LAB_OUT/ansible-lvs.json"

# --- lvmcache-mode: to writeback, dirty blocks under a writer, back to writethrough ---
# As in watch.sh: smq promotes blocks read often and cleans when idle, so a file is read to
# get it promoted and a rate-limited writer keeps blocks dirty while the mode changes back.
stamp mode
head -c 8M /dev/urandom > $mnt/hot; sync
cw plan lvmcache-mode --lv labvg/data --mode writeback -o "$LAB_OUT/mode-wb.json" > "$LAB_OUT/mode-wb-preview.txt"
cw apply "$LAB_OUT/mode-wb.json" --yes > "$LAB_OUT/mode-wb.txt" 2>&1
lvs --reportformat json -o lv_name,segtype,cache_mode labvg/data > "$LAB_OUT/mode-wb-lvs.json"
cw plan lvmcache-mode --lv labvg/data --mode writethrough -o "$LAB_OUT/mode-wt.json" > "$LAB_OUT/mode-wt-preview.txt"
keep_dirty $mnt/hot "$LAB_OUT/mode-dirty-samples.txt"
stamp mode-writethrough
cw apply "$LAB_OUT/mode-wt.json" --yes > "$LAB_OUT/mode-wt.txt" 2>&1
kill $writer; wait $writer || true
lvs --reportformat json -o lv_name,segtype,cache_mode,cache_dirty_blocks labvg/data > "$LAB_OUT/mode-wt-lvs.json"
stamp mode-done
fio --name=work --filename=$mnt/work --size=16M --rw=randrw --bs=4k --direct=1 --ioengine=libaio --iodepth=4 \
    --time_based --runtime=5 --output-format=terse > /dev/null
sync; (cd $mnt && sha256sum work hot) >> "$LAB_OUT/an-sums.txt"
umount $mnt; echo 3 > /proc/sys/vm/drop_caches; mount /dev/labvg/data $mnt
sums_ok $mnt an-sums.txt an-verify
umount $mnt

# --- 2. bcache writeback on empty disks: create, write, safe detach while dirty, stop ---
stamp bcache-plan
bhdd_id=$(ls /dev/disk/by-id/*BHDD0001 | head -1)
bssd_id=$(ls /dev/disk/by-id/*BSSD0001 | head -1)
bhdd=$(by_serial BHDD0001)
cw plan bcache-create --backing "$bhdd_id" --cache "$bssd_id" --mode writeback -o "$LAB_OUT/bc.json" > "$LAB_OUT/bc-preview.txt"
stamp bcache-apply
cw apply "$LAB_OUT/bc.json" --yes --json > "$LAB_OUT/bc-apply.json" 2> "$LAB_OUT/bc-apply.err"
stamp bcache-applied
bdev=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['bcache_device'])" "$LAB_OUT/bc-apply.json")
bname=$(basename "$(readlink -f "$bdev")")
cat "/sys/block/$bname/bcache/cache_mode" "/sys/block/$bname/bcache/sequential_cutoff" \
    "/sys/block/$bname/bcache/writeback_percent" > "$LAB_OUT/bc-settings.txt"
mkfs.ext4 -q "$bdev"
mkdir -p /run/lab/bc && mount "$bdev" /run/lab/bc
# About 20 MiB of dirty data in all (with the file system's own writes): at the backing disk's
# 2 MiB/s the flush at full speed takes about 10 s, so its countdown is seen.
fio --name=bc --filename=/run/lab/bc/g1 --size=12M --rw=randwrite --bs=4k --direct=1 --ioengine=libaio \
    --iodepth=4 --output-format=terse > /dev/null
head -c 4M /dev/urandom > /run/lab/bc/g2
sync
(cd /run/lab/bc && sha256sum g1 g2) > "$LAB_OUT/bc-sums.txt"
cat "/sys/block/$bname/bcache/dirty_data" > "$LAB_OUT/bc-dirty-before.txt"
cat "/sys/block/$bname/bcache/state" >> "$LAB_OUT/bc-dirty-before.txt"
cw plan bcache-detach --device "$bdev" --wipe-cache -o "$LAB_OUT/bc-detach.json" > "$LAB_OUT/bc-detach-preview.txt"
cat "/sys/block/$bname/bcache/dirty_data" >> "$LAB_OUT/bc-dirty-before.txt"
stamp bcache-detach
cw apply "$LAB_OUT/bc-detach.json" --yes > "$LAB_OUT/bc-detach.txt" 2>&1
stamp bcache-detached
cat "/sys/block/$bname/bcache/state" > "$LAB_OUT/bc-state-after.txt"
blkid -p "$bssd_id" > "$LAB_OUT/bc-cache-after.txt" 2>&1 || echo "blkid rc $?" >> "$LAB_OUT/bc-cache-after.txt"
umount /run/lab/bc; echo 3 > /proc/sys/vm/drop_caches; mount "$bdev" /run/lab/bc
sums_ok /run/lab/bc bc-sums.txt bc-verify
umount /run/lab/bc
# Stop the bcache device and read the backing disk itself (data starts 8 KiB in).
echo 1 > "/sys/block/$bname/bcache/stop"
for _ in $(seq 50); do [ -e "/sys/block/$bname" ] || break; sleep 0.2; done
loop=$(losetup -f --show -r -o 8192 "$bhdd")
mount -o ro,noload "$loop" /run/lab/bc
sums_ok /run/lab/bc bc-sums.txt bc-verify-raw
umount /run/lab/bc; losetup -d "$loop"
stamp end
echo scenario-done
