# Scenario (issue 29, soak): SIGKILL after every step of every recipe that changes a cache, then
# resume (odd steps, and the last) or roll back (even steps), checksums compared after each:
# lvmcache-uncache of a writeback cache, writecache-attach, writecache-detach, bcache-create,
# bcache-detach of a writeback bcache with dirty data. (lvmcache-attach: apply_lvm.sh.)
# Outside the soak run, steps 1 and 2 of each.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
export CACHEWISE_STATE_DIR="$LAB_WORK/state"
stamp() { echo "$(date +%s) $*" >> "$LAB_OUT/timeline.txt"; }
id_of() { ls /dev/disk/by-id/*"$1" | grep -v -- -part | head -1; }
hdd=$(by_serial CRHDD01); ssd=$(by_serial CRSSD01); bh=$(by_serial CRBH01); bs=$(by_serial CRBS01)
ssd_id=$(id_of CRSSD01); bh_id=$(id_of CRBH01); bs_id=$(id_of CRBS01)
mnt=/run/cr/data; bmnt=/run/cr/b
mkdir -p $mnt $bmnt

pvcreate -q "$hdd"; vgcreate -q cr "$hdd"; lvcreate -q -y -L 192M -n data cr
mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/cr/data
mount /dev/cr/data $mnt
for i in 1 2 3; do head -c 6M /dev/urandom > $mnt/f$i; done
sync; (cd $mnt && sha256sum f*) > "$LAB_OUT/lv.sums"

verify_lv() {  # remount and compare every recorded sum
  sync; umount $mnt; echo 3 > /proc/sys/vm/drop_caches; mount /dev/cr/data $mnt
  lvs -a --reportformat json -o lv_name,segtype,cache_mode > "$LAB_OUT/$1-lvs.json"
  if (cd $mnt && sha256sum -c --quiet "$LAB_OUT/lv.sums") > "$LAB_OUT/$1.txt" 2>&1; then echo ok >> "$LAB_OUT/$1.txt"
  else echo FAILED >> "$LAB_OUT/$1.txt"; fi
}
bare_lv() {  # cr/data without a cache, the SSD out of the VG and blank, whatever state a run left
  local seg lv
  seg=$(lvs --noheadings -o segtype cr/data | tr -d ' ')
  case $seg in cache|writecache) lvconvert -q -y --uncache cr/data ;; esac
  for lv in $(lvs --noheadings -o lv_name cr | tr -d ' []' | grep -v '^data$'); do lvremove -q -y "cr/$lv" || true; done
  vgreduce -q cr "$ssd" 2> /dev/null || true
  pvremove -q -y "$ssd" 2> /dev/null || true
  wipefs -a -q "$ssd"
}
dirty_lv() {  # a writer leaves dirty blocks in a writeback cache (its scratch file is not checked)
  head -c 8M /dev/urandom > $mnt/scratch; sync
  fio --name=warm --filename=$mnt/scratch --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=4 \
      --time_based --runtime=4 --output-format=terse > /dev/null
  fio --name=w --filename=$mnt/scratch --rw=randwrite --bs=4k --direct=1 --ioengine=libaio --iodepth=2 \
      --time_based --runtime=3 --output-format=terse > /dev/null
}

# --- lvmcache-uncache of a writeback cache ---
stamp uncache
cw plan lvmcache-attach --lv cr/data --ssd "$ssd_id" --size 64m --mode writeback -o "$LAB_OUT/lc-attach.json" > /dev/null
cached_lv() { bare_lv; cw apply "$LAB_OUT/lc-attach.json" --yes > "$LAB_OUT/lc-attach-last.txt" 2>&1; dirty_lv
  rm -f "$LAB_OUT/lc-uncache.json"; cw plan lvmcache-uncache --lv cr/data --release-ssd "$ssd_id" -o "$LAB_OUT/lc-uncache.json" > /dev/null; }
cached_lv
crash_each_step "$LAB_OUT/lc-uncache.json" uncache verify_lv cached_lv

# --- writecache-attach, then writecache-detach ---
stamp wc-attach
bare_lv
cw plan writecache-attach --lv cr/data --ssd "$ssd_id" --size 64m -o "$LAB_OUT/wc-attach.json" > /dev/null
crash_each_step "$LAB_OUT/wc-attach.json" wc-attach verify_lv bare_lv
stamp wc-detach
wc_lv() { bare_lv; cw apply "$LAB_OUT/wc-attach.json" --yes > "$LAB_OUT/wc-attach-last.txt" 2>&1; dirty_lv
  rm -f "$LAB_OUT/wc-detach.json"; cw plan writecache-detach --lv cr/data --release-ssd "$ssd_id" -o "$LAB_OUT/wc-detach.json" > /dev/null; }
wc_lv
crash_each_step "$LAB_OUT/wc-detach.json" wc-detach verify_lv wc_lv
bare_lv

# --- bcache-create on empty disks, then bcache-detach with dirty data ---
stamp bcache-create
bare_bcache() {  # both disks blank, no bcache registered
  local b c
  umount $bmnt 2> /dev/null || true
  for b in /sys/block/bcache*; do [ -e "$b/bcache/stop" ] && echo 1 > "$b/bcache/stop"; done
  for c in /sys/fs/bcache/*-*-*; do [ -e "$c/stop" ] && echo 1 > "$c/stop"; done
  sleep 2; udevadm settle --timeout=30
  wipefs -a -q "$bh" "$bs"
}
verify_create() {  # a complete bcache (resumed) or two blank disks (rolled back); nothing half-made
  local state=none bdev
  bdev=$(ls -d /sys/block/$(basename "$bh")/bcache 2> /dev/null || true)
  if [ -n "$bdev" ] && [ -e "$bdev/../holders" ] && ls /sys/block/$(basename "$bh")/holders | grep -q bcache; then
    state="bcache $(cat "$bdev/state")"
  fi
  { echo "$state"; blkid -p -o value -s TYPE "$bh" || true; blkid -p -o value -s TYPE "$bs" || true; } > "$LAB_OUT/$1.txt"
}
bare_bcache
cw plan bcache-create --backing "$bh_id" --cache "$bs_id" --mode writeback -o "$LAB_OUT/bc-create.json" > /dev/null
crash_each_step "$LAB_OUT/bc-create.json" bc-create verify_create bare_bcache
stamp bcache-detach
bcache_with_data() {  # a writeback bcache with files (their sums in b.sums) and dirty data
  local bname
  bare_bcache
  cw apply "$LAB_OUT/bc-create.json" --yes > "$LAB_OUT/bc-create-last.txt" 2>&1
  bname=$(basename "$(ls -d /sys/block/$(basename "$bh")/holders/bcache* | head -1)")
  mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/$bname; mount /dev/$bname $bmnt
  for i in 1 2; do head -c 4M /dev/urandom > $bmnt/g$i; done
  sync; (cd $bmnt && sha256sum g*) > "$LAB_OUT/b.sums"
  fio --name=w --filename=$bmnt/scratch --size=8M --rw=randwrite --bs=4k --direct=1 --ioengine=libaio \
      --iodepth=2 --time_based --runtime=3 --output-format=terse > /dev/null
  cat /sys/block/$bname/bcache/dirty_data >> "$LAB_OUT/bc-detach-dirty.txt"
  rm -f "$LAB_OUT/bc-detach.json"; cw plan bcache-detach --device /dev/$bname -o "$LAB_OUT/bc-detach.json" > /dev/null
}
verify_b() {  # the files on the bcache device (running with or without its cache) or on the backing disk
  local bname
  sync; umount $bmnt 2> /dev/null || true; echo 3 > /proc/sys/vm/drop_caches
  bname=$(basename "$(ls -d /sys/block/$(basename "$bh")/holders/bcache* | head -1)")
  cat /sys/block/$bname/bcache/state > "$LAB_OUT/$1-state.txt" 2>&1 || true
  mount /dev/$bname $bmnt
  if (cd $bmnt && sha256sum -c --quiet "$LAB_OUT/b.sums") > "$LAB_OUT/$1.txt" 2>&1; then echo ok >> "$LAB_OUT/$1.txt"
  else echo FAILED >> "$LAB_OUT/$1.txt"; fi
}
bcache_with_data
crash_each_step "$LAB_OUT/bc-detach.json" bc-detach verify_b bcache_with_data
bare_bcache
stamp done
