# Scenario: every cache the seeds name (issue 16). One boot:
# 1. dm-writecache attached by `cachewise apply` to a mounted XFS LV on the 150-IOPS HDD while a
#    writer runs, then 24 MiB of random writes through it; a raw snapshot of it (fixture);
#    detached by `cachewise apply` with the dirty blocks counting down in its log; every
#    checksum unchanged.
# 2. Recognition: lvmcache with the cleaner policy, dm-crypt (LUKS) over a second cached LV, a
#    bcache backing device with no cache, a ZFS and a bcachefs signature; `scan --save-raw` and
#    `scan --json` of it all (fixtures); `plan remove` on each of them (removable or refused).
#    Then `lvmcache-move` takes the first LV's cache, in writeback with dirty blocks, to the second
#    SSD while a writer runs; the first SSD leaves the VG blank; every checksum unchanged.
# 3. A mirrored (raid1) lvmcache pool on two SSDs in writeback, planned from two --ssd; files
#    written through it; one SSD deleted from the SCSI bus; every checksum unchanged, more writes
#    succeed, and `cachewise scan` reports the pool degraded.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
export CACHEWISE_STATE_DIR="$LAB_WORK/state"
hdd=$(by_serial HDD0001); sig=$(by_serial SIG0001); ext=$(by_serial EXT0001)
s1=$(ls /dev/disk/by-id/scsi-0QEMU*SSD0001 | head -1); s2=$(ls /dev/disk/by-id/scsi-0QEMU*SSD0002 | head -1)
mnt=/run/lab/data
sums() { (cd $mnt && sha256sum -- *) ; }
check() {  # check NAME: drop the page cache, compare every file with the first sums
  sync; echo 3 > /proc/sys/vm/drop_caches
  if (cd $mnt && sha256sum -c --quiet "$LAB_OUT/sums.txt") > "$LAB_OUT/verify-$1.txt" 2>&1; then echo ok >> "$LAB_OUT/verify-$1.txt"; fi
}
cw --version > "$LAB_OUT/versions.txt"; lvm version | head -1 >> "$LAB_OUT/versions.txt"
uname -r >> "$LAB_OUT/versions.txt"; cryptsetup --version >> "$LAB_OUT/versions.txt"; blkid --version >> "$LAB_OUT/versions.txt"

pvcreate -q "$hdd"; vgcreate -q labvg "$hdd"; lvcreate -q -y -L 512M -n data labvg
mkfs.xfs -q /dev/labvg/data; mkdir -p $mnt; mount /dev/labvg/data $mnt
for f in a b; do head -c 12M /dev/urandom > $mnt/$f; done
sync; sums > "$LAB_OUT/sums.txt"

# --- 1. dm-writecache on the mounted XFS ---
cw plan writecache-attach --lv labvg/data --ssd "$s1" --size 96m --high-watermark 80 --low-watermark 5 \
    -o "$LAB_OUT/wc.json" > "$LAB_OUT/wc-preview.txt"
# The attach runs under writes: a rate-limited writer keeps rewriting a file meanwhile.
fio --name=bg --filename=$mnt/bg --rw=randwrite --bs=4k --size=8M --direct=1 --ioengine=libaio --iodepth=1 \
    --rate_iops=50 --time_based --runtime=900 --output-format=terse > /dev/null 2>&1 &
writer=$!
sleep 3
cw apply "$LAB_OUT/wc.json" --yes > "$LAB_OUT/wc-apply.txt" 2>&1
dmsetup status labvg-data > "$LAB_OUT/wc-status-under-writes.txt"
kill $writer; wait $writer || true
sync; (cd $mnt && sha256sum bg) >> "$LAB_OUT/sums.txt"
lvs -a -o lv_name,segtype,writecache_block_size,cache_settings --reportformat json labvg > "$LAB_OUT/wc-lvs.json"
# A writer through the writecache: 24 MiB of random 4 KiB writes to a new file, then its sum.
fio --name=w --filename=$mnt/w --rw=randwrite --bs=4k --size=24M --io_size=24M --direct=1 --ioengine=libaio \
    --iodepth=8 --output-format=terse > /dev/null
(cd $mnt && sha256sum w) >> "$LAB_OUT/sums.txt"
dmsetup status labvg-data > "$LAB_OUT/wc-status-dirty.txt"
check wc-attached
cw scan --json > "$LAB_OUT/scan-writecache.json"
cw scan --save-raw "$LAB_OUT/raw-writecache.json" > /dev/null
cw plan writecache-detach --lv labvg/data --release-ssd "$s1" -o "$LAB_OUT/wcd.json" > "$LAB_OUT/wcd-preview.txt"
cw apply "$LAB_OUT/wcd.json" --yes > "$LAB_OUT/wcd-apply.txt" 2>&1
lvs -a -o lv_name,segtype --reportformat json labvg > "$LAB_OUT/wcd-lvs.json"
pvs --reportformat json > "$LAB_OUT/wcd-pvs.json"
check wc-detached

# --- 2. caches and layers cachewise must recognise ---
cw plan lvmcache-attach --lv labvg/data --ssd "$s1" --size 32m -o "$LAB_OUT/lc.json" > /dev/null
cw apply "$LAB_OUT/lc.json" --yes > "$LAB_OUT/lc-apply.txt" 2>&1
lvchange -q --cachepolicy cleaner labvg/data
lvcreate -q -y -L 64M -n vault labvg "$hdd"
lvcreate -q -y --type cache --cachemode writethrough -L 16M -n vault_cache labvg/vault "$s1" > /dev/null
echo -n labpassphrase | cryptsetup luksFormat -q --type luks2 --pbkdf pbkdf2 --pbkdf-force-iterations 1000 /dev/labvg/vault -
echo -n labpassphrase | cryptsetup open --type luks /dev/labvg/vault vault -
make-bcache -B "$ext" > /dev/null
udevadm settle --timeout=30
[ -e /sys/fs/bcache/register ] && echo "$ext" > /sys/fs/bcache/register 2>/dev/null || true
printf 'label: gpt\n,96M\n,\n' | sfdisk -q "$sig"
udevadm settle --timeout=30
"$CW_PY" "$LAB_GUEST/signatures.py" "${sig}1" "${sig}2"
blockdev --rereadpt "$sig" || true
udevadm trigger; udevadm settle --timeout=30
blkid -p -o export "${sig}1" > "$LAB_OUT/blkid-zfs.txt" || true
blkid -p -o export "${sig}2" > "$LAB_OUT/blkid-bcachefs.txt" || true
cw scan --json > "$LAB_OUT/scan-layers.json"
cw scan --save-raw "$LAB_OUT/raw-layers.json" > /dev/null
remove_plan() {  # remove_plan LABEL DEV: what `plan remove` makes of DEV (plan or refusal)
  if cw plan remove --device "$2" --json > "$LAB_OUT/remove-$1.json" 2> "$LAB_OUT/remove-$1.err"; then
    echo "rc 0" >> "$LAB_OUT/remove-$1.err"
  else
    echo "rc $?" >> "$LAB_OUT/remove-$1.err"
  fi
}
remove_plan data /dev/labvg/data; remove_plan cached-vault /dev/labvg/vault; remove_plan crypt /dev/mapper/vault
remove_plan bcache-backing "$ext"; remove_plan zfs "${sig}1"; remove_plan bcachefs "${sig}2"
cryptsetup close vault
lvconvert -q --yes --uncache labvg/vault > /dev/null; lvremove -q -y labvg/vault
# The cache moves to the second SSD (the first worn, say) in writeback with dirty blocks present,
# one file's among them (promoted, then overwritten with known content), while a writer runs; the
# first SSD leaves the VG blank once the new pool is attached.
lvchange -q --cachepolicy smq --cachemode writeback labvg/data
cw plan lvmcache-move --lv labvg/data --ssd "$s2" -o "$LAB_OUT/move.json" > "$LAB_OUT/move-preview.txt" 2>&1
head -c 4M /dev/urandom > $mnt/mw; head -c 4M /dev/urandom > $mnt/mm; sync
keep_dirty $mnt/mw "$LAB_OUT/move-dirty-samples.txt"
fio --name=promote --filename=$mnt/mm --rw=randread --bs=64k --direct=1 --ioengine=libaio --iodepth=4 \
    --io_size=24m --output-format=terse > /dev/null
head -c 4M /dev/urandom > /run/m.src
dd if=/run/m.src of=$mnt/mm bs=64k oflag=direct conv=notrunc,fsync status=none
(cd /run && sha256sum m.src) | sed "s/m.src\$/mm/" >> "$LAB_OUT/sums.txt"
dmsetup status labvg-data > "$LAB_OUT/move-before.txt"
cw apply "$LAB_OUT/move.json" --yes > "$LAB_OUT/move-apply.txt" 2>&1 || echo "rc $?" >> "$LAB_OUT/move-apply.txt"
kill $writer 2> /dev/null || true; wait $writer 2> /dev/null || true
dmsetup status labvg-data > "$LAB_OUT/move-after.txt"
lvs -a -o lv_name,segtype,devices,cache_mode,pool_lv --reportformat json labvg > "$LAB_OUT/move-lvs.json"
pvs -o pv_name,vg_name --reportformat json > "$LAB_OUT/move-pvs.json"
echo "$(readlink -f "$s1") $(readlink -f "$s2")" > "$LAB_OUT/move-ssds.txt"
blkid -p -o value -s TYPE "$s1" > "$LAB_OUT/move-old-ssd.txt" 2>&1 || echo "blank" >> "$LAB_OUT/move-old-ssd.txt"
check moved
cw plan remove --device /dev/labvg/data -o "$LAB_OUT/lc-remove.json" > /dev/null
cw apply "$LAB_OUT/lc-remove.json" --yes > "$LAB_OUT/lc-remove.txt" 2>&1
check layers

# --- 3. a mirrored writeback pool, then one SSD fails ---
cw plan lvmcache-attach --lv labvg/data --ssd "$s1" --ssd "$s2" --size 64m --mode writeback \
    -o "$LAB_OUT/mirror.json" > "$LAB_OUT/mirror-preview.txt"
cw apply "$LAB_OUT/mirror.json" --yes > "$LAB_OUT/mirror-apply.txt" 2>&1
lvs -a -o lv_name,segtype,devices,cache_mode --reportformat json labvg > "$LAB_OUT/mirror-lvs.json"
head -c 12M /dev/urandom > $mnt/c
fio --name=m --filename=$mnt/c --rw=randwrite --bs=4k --size=12M --io_size=8M --direct=1 --ioengine=libaio \
    --iodepth=4 --output-format=terse > /dev/null
sync; (cd $mnt && sha256sum c) >> "$LAB_OUT/sums.txt"
dmsetup status labvg-data > "$LAB_OUT/mirror-status-before.txt"
cw scan --json > "$LAB_OUT/scan-mirror.json"
n2=$(basename "$(readlink -f "$s2")")
echo 1 > /sys/block/$n2/device/delete
sleep 2
check mirror-failed
head -c 4M /dev/urandom > $mnt/after-failure && sync && echo written > "$LAB_OUT/write-after-failure.txt"
dmsetup status > "$LAB_OUT/mirror-status-failed.txt"
cw scan --json > "$LAB_OUT/scan-degraded.json" 2> "$LAB_OUT/scan-degraded.err"
cw scan > "$LAB_OUT/scan-degraded.txt" 2>&1
cw scan --save-raw "$LAB_OUT/raw-degraded.json" > /dev/null
