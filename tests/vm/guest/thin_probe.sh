# Scenario (a probe, run by hand; python -m tests.vm.capture_thin_fixtures): what lvm2 and
# discovery make of a Proxmox-style thin pool, and of a cache on its data (lvconvert --type cache
# on the pool caches its _tdata). Its raw snapshots are tests/fixtures/lab-thin.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
export LVM_SUPPRESS_FD_WARNINGS=1
export CACHEWISE_STATE_DIR="$LAB_WORK/state"
hdd=$(by_serial HDD0001); ssd=$(by_serial SSD0001)
ssd_id=$(ls /dev/disk/by-id/*SSD0001 | grep -v -- -part | head -1)
mnt=/run/lab/vm
o=$LAB_OUT
{ lvm version; thin_check -V; cache_check -V; uname -r; } > $o/versions.txt 2>&1 || true
pvcreate -q "$hdd"; vgcreate -q pve "$hdd"
lvcreate -q -y --type thin-pool -L 512M -n data pve
lvcreate -q -y -V 256M -T pve/data -n vm-100-disk-0
mkfs.ext4 -q /dev/pve/vm-100-disk-0; mkdir -p $mnt; mount /dev/pve/vm-100-disk-0 $mnt
head -c 16M /dev/urandom > $mnt/f; sync; (cd $mnt && sha256sum f) > $o/sums.txt
dmsetup ls --tree > $o/dm-tree-1.txt 2>&1; dmsetup table > $o/dm-table-1.txt
lvs -a --reportformat json -o lv_name,vg_name,segtype,lv_attr,lv_size,pool_lv,lv_dm_path,devices,lv_role,data_lv,metadata_lv > $o/lvs-1.json
cw scan --json > $o/scan-thin.json 2> $o/scan-thin.err || true
cw scan --save-raw $o/raw-thin.json > /dev/null 2>&1 || true
cw plan lvmcache-attach --lv pve/data --ssd "$ssd_id" --size 64m > $o/plan-attach.txt 2>&1 || echo "rc $?" >> $o/plan-attach.txt
pvcreate -q "$ssd"; vgextend -q pve "$ssd"
lvcreate -q -y -n cpool -L 64M pve "$ssd"; lvcreate -q -y -n cpool_meta -L 8M pve "$ssd"
lvconvert -y --type cache-pool --poolmetadata pve/cpool_meta --cachemode writeback pve/cpool > $o/cachepool.txt 2>&1
lvconvert -y --type cache --cachepool pve/cpool pve/data > $o/attach.txt 2>&1 || echo "rc $?" >> $o/attach.txt
dmsetup ls --tree > $o/dm-tree-2.txt 2>&1; dmsetup table > $o/dm-table-2.txt; dmsetup status > $o/dm-status-2.txt
lvs -a --reportformat json -o lv_name,vg_name,segtype,lv_attr,lv_size,pool_lv,lv_dm_path,devices,lv_role,data_lv,metadata_lv,cache_mode,cache_policy,cache_dirty_blocks > $o/lvs-2.json
cw scan --json > $o/scan-cached.json 2> $o/scan-cached.err || true
cw scan --save-raw $o/raw-cached.json > /dev/null 2>&1 || true
cw plan remove --device /dev/pve/data > $o/plan-remove.txt 2>&1 || echo "rc $?" >> $o/plan-remove.txt
cw plan lvmcache-uncache --lv pve/data > $o/plan-uncache.txt 2>&1 || echo "rc $?" >> $o/plan-uncache.txt
cw doctor --json > $o/doctor.json 2> $o/doctor.err || true
head -c 8M /dev/urandom > $mnt/g; sync; (cd $mnt && sha256sum g) >> $o/sums.txt
lvs -a -o lv_name,cache_dirty_blocks pve > $o/dirty.txt 2>&1 || true
lvconvert -y --uncache pve/data > $o/uncache.txt 2>&1 || echo "rc $?" >> $o/uncache.txt
lvs -a --reportformat json -o lv_name,segtype,devices > $o/lvs-3.json
sync; echo 3 > /proc/sys/vm/drop_caches
(cd $mnt && sha256sum -c sums.txt) > $o/verify.txt 2>&1 || (cd $mnt && sha256sum -c $o/sums.txt) > $o/verify.txt 2>&1 || true
# the cache on the pool's tdata named directly
lvcreate -q -y -n cpool2 -L 64M pve "$ssd"; lvcreate -q -y -n cpool2_meta -L 8M pve "$ssd"
lvconvert -y --type cache-pool --poolmetadata pve/cpool2_meta pve/cpool2 > /dev/null 2>&1
lvconvert -y --type cache --cachepool pve/cpool2 pve/data_tdata > $o/attach-tdata.txt 2>&1 || echo "rc $?" >> $o/attach-tdata.txt
lvs -a --reportformat json -o lv_name,segtype,devices > $o/lvs-4.json
lvconvert -y --uncache pve/data_tdata > $o/uncache-tdata.txt 2>&1 || echo "rc $?" >> $o/uncache-tdata.txt
umount $mnt
vgchange -an pve > $o/deactivate.txt 2>&1; vgchange -ay pve >> $o/deactivate.txt 2>&1
echo done > $o/finished
