# Scenario: an ext4 LV on the emulated HDD, probed and traced under a Zipf(1.2) read workload;
# `cachewise recommend` from that trace; then the recommended lvmcache configuration is
# attached for real with lvm2, and the data read back through the cache.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
hdd=$(by_serial HDD0001)
ssd=$(by_serial SSD0001)
ssd_id=$(ls /dev/disk/by-id/*SSD0001 | head -1)
# Fixtures for the unit tests: the tools' own output on this guest.
lvm version > "$LAB_OUT/lvm-version.txt"
smartctl -j -a "$ssd" > "$LAB_OUT/smartctl-sata.json" || true
smartctl -j -a "$(by_serial NVME0001)" > "$LAB_OUT/smartctl-nvme.json" || true
dpkg-query -W -f '${Version}' bcache-tools > "$LAB_OUT/bcache-tools-version.txt" || true
uname -r > "$LAB_OUT/kernel.txt"

pvcreate -q "$hdd"
vgcreate -q labvg "$hdd"
lvcreate -q -y -L 2G -n data labvg
mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/labvg/data
mkdir -p /run/lab/data && mount /dev/labvg/data /run/lab/data
fio --name=fill --filename=/run/lab/data/db.img --size=256M --rw=write --bs=1M --direct=1 --ioengine=libaio \
    --output-format=terse > /dev/null
sync
sha256sum /run/lab/data/db.img > "$LAB_OUT/sha-before.txt"

cw probe --yes --json "$hdd" "$ssd" > "$LAB_OUT/probe.json"
cw trace /dev/labvg/data --duration 25s -o "$LAB_OUT/data.cwtrace" --json > "$LAB_OUT/trace-summary.json" 2> "$LAB_OUT/trace.err" &
tracer=$!
for _ in $(seq 300); do ls -d /sys/kernel/tracing/instances/cachewise-* > /dev/null 2>&1 && break; sleep 0.1; done
sleep 0.5
fio --name=zipf --filename=/run/lab/data/db.img --readonly --direct=1 --ioengine=libaio --iodepth=4 --rw=randread \
    --bs=4k --random_distribution=zipf:1.2 --norandommap --time_based --runtime=15 --output-format=terse > /dev/null
wait $tracer

cw recommend --slow /dev/labvg/data --fast "$ssd_id" --trace "$LAB_OUT/data.cwtrace" --json > "$LAB_OUT/rec.json"
COLUMNS=100 cw recommend --slow /dev/labvg/data --fast "$ssd_id" --workload database > "$LAB_OUT/rec.txt"
cw recommend --slow /dev/labvg/data --fast /dev/nonexistent --workload database 2> "$LAB_OUT/bad-missing.err" || true
cw recommend --slow /dev/labvg/data --fast /dev/labvg/data --workload database 2> "$LAB_OUT/bad-twice.err" || true
cw recommend --slow /dev/labvg/data --fast "$ssd_id" 2> "$LAB_OUT/bad-noworkload.err" || true

eval "$("$CW_PY" - "$LAB_OUT/rec.json" <<'PY'
import json, sys
rec = json.load(open(sys.argv[1]))
cfg = rec["config"]
print(f"backend={cfg['backend']} mode={cfg['mode']} policy={cfg['policy']}")
print(f"size_k={cfg['size_bytes'] // 1024} meta_k={cfg['metadata_size_bytes'] // 1024} chunk_k={cfg['chunk_size_bytes'] // 1024}")
PY
)"
echo "recommended: $backend $mode ${size_k}k chunk ${chunk_k}k meta ${meta_k}k policy $policy"

pvcreate -q "$ssd"
vgextend -q labvg "$ssd"
# What lvm2 chooses by itself for a cache pool of the same size, to compare with our rules.
lvcreate -q -y --type cache-pool -L "${size_k}k" -n cwdefault labvg "$ssd"
lvs --reportformat json --units k -a -o lv_name,lv_size,chunk_size,lv_metadata_size labvg > "$LAB_OUT/lvm-default.json"
lvremove -q -y labvg/cwdefault
# The recommended configuration, attached for real to the mounted LV.
lvcreate -q -y -L "${size_k}k" -n cwcache labvg "$ssd"
lvcreate -q -y -L "${meta_k}k" -n cwcache_meta labvg "$ssd"
lvconvert -q -y --type cache-pool --poolmetadata labvg/cwcache_meta --chunksize "${chunk_k}k" \
    --cachemode "$mode" --cachepolicy "$policy" labvg/cwcache > "$LAB_OUT/lvconvert-pool.txt" 2>&1
lvconvert -q -y --type cache --cachepool labvg/cwcache labvg/data > "$LAB_OUT/lvconvert-cache.txt" 2>&1
lvs --reportformat json --units k -a -o lv_name,lv_size,segtype,chunk_size,cache_mode,cache_policy,lv_metadata_size,devices labvg > "$LAB_OUT/lvs-after.json"
dmsetup status labvg-data > "$LAB_OUT/dm-status.txt"
echo 3 > /proc/sys/vm/drop_caches
sha256sum /run/lab/data/db.img > "$LAB_OUT/sha-after.txt"
umount /run/lab/data
lvconvert -q -y --uncache labvg/data > "$LAB_OUT/uncache.txt" 2>&1

# The safety gate on the real machine (issue 26): a ZFS pool label and a bcachefs superblock on
# the NVMe's two partitions (signatures only: the guest has neither file system). recommend says
# "don't cache" and names L2ARC; a plan putting the cache on the bcachefs member is refused even
# with --wipe, and the member is left byte-identical.
nvme=$(by_serial NVME0001)
printf 'label: gpt\n,96M\n,\n' | sfdisk -q "$nvme"
udevadm settle --timeout=30
"$CW_PY" "$LAB_GUEST/signatures.py" "${nvme}p1" "${nvme}p2"
blockdev --rereadpt "$nvme" || true
udevadm trigger; udevadm settle --timeout=30
sha256sum "${nvme}p2" > "$LAB_OUT/bcachefs-before.txt"
cw recommend --slow "${nvme}p1" --fast "$ssd_id" --workload database --json > "$LAB_OUT/rec-zfs.json" \
  2> "$LAB_OUT/rec-zfs.err" || true
cw plan lvmcache-attach --lv labvg/data --ssd "${nvme}p2" --allow-partition --size 64m --wipe \
  -o "$LAB_OUT/plan-bcachefs.json" > /dev/null 2> "$LAB_OUT/plan-bcachefs.err" && echo "rc 0" >> "$LAB_OUT/plan-bcachefs.err" \
  || echo "rc $?" >> "$LAB_OUT/plan-bcachefs.err"
sha256sum "${nvme}p2" > "$LAB_OUT/bcachefs-after.txt"
echo scenario-done
