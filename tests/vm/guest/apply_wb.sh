# Scenario: a writeback lvmcache with dirty blocks, removed by `cachewise apply` while a writer
# is still running; every file's sha256 matches afterwards.
# dm-cache (smq) promotes only blocks read often, and writes back every dirty block as soon as
# the device is idle, so dirty blocks exist only while writes continue: the writer keeps going
# (rate-limited, so the flush outpaces it) until the uncache is over.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
hdd=$(by_serial HDD0001)
ssd=$(by_serial SSD0001)
ssd_id=$(ls /dev/disk/by-id/*SSD0001 | head -1)
export CACHEWISE_STATE_DIR="$LAB_WORK/state"
mnt=/run/lab/data
pvcreate -q "$hdd"; vgcreate -q labvg "$hdd"; lvcreate -q -y -L 256M -n data labvg
mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/labvg/data
mkdir -p $mnt && mount /dev/labvg/data $mnt
for i in 1 2; do head -c 8M /dev/urandom > $mnt/f$i; done
head -c 8M /dev/urandom > $mnt/hot
sync
cw plan lvmcache-attach --lv labvg/data --ssd "$ssd_id" --size 128m --mode writeback -o "$LAB_OUT/wb.json" > /dev/null
cw apply "$LAB_OUT/wb.json" --yes > "$LAB_OUT/wb-apply.txt" 2>&1
cw plan lvmcache-uncache --lv labvg/data --release-ssd "$ssd_id" -o "$LAB_OUT/wb-un.json" > /dev/null
lvs --reportformat json -o vg_name,lv_name,segtype,cache_mode labvg > "$LAB_OUT/wb-attached-lvs.json"
keep_dirty $mnt/hot "$LAB_OUT/wb-dirty-samples.txt"
cw apply "$LAB_OUT/wb-un.json" --yes > "$LAB_OUT/wb-uncache.txt" 2>&1
kill $writer; wait $writer || true
sync
(cd $mnt && sha256sum f1 f2 hot) > "$LAB_OUT/sums.txt"
lvs --reportformat json -o vg_name,lv_name,segtype,cache_mode labvg > "$LAB_OUT/wb-uncached-lvs.json"
umount $mnt; echo 3 > /proc/sys/vm/drop_caches; mount /dev/labvg/data $mnt
(cd $mnt && sha256sum -c --quiet "$LAB_OUT/sums.txt") > "$LAB_OUT/verify.txt" 2>&1 && echo ok >> "$LAB_OUT/verify.txt" || echo FAILED >> "$LAB_OUT/verify.txt"
echo scenario-done
