# Scenario: the accuracy suite (issue 13). For each cache backend on the 150-IOPS HDD and the
# SSD, and each workload, start from an empty cache, run the workload with fio for $ACC_SECONDS
# while recording what fio issued (its iolog: the trace cachewise predicts from), and sample
# the kernel's own hit and miss counters every 2 s. The host (tests/vm/accuracy.py) compares
# the prediction made from the trace with what the counters show.
# Workloads: ACC_WORKLOADS, space-separated name=workload[@size of its data, default 640M]: a fio
# random distribution (zipf:1.2),
# "backup" (zipf:1.2 reads with a sequential 1 MiB backup stream beside them) or "writes" (zipf:1.2,
# 30% reads). A name starting with "old" first fills the cache with other data (zipf reads of
# another region for ACC_PREFILL_SECONDS). Backends: ACC_BACKENDS (dmcache-wt dmcache-wb bcache-wt
# bcache-wb; dmcache-wt-mt: migration_threshold 16384 sectors), cache ACC_CACHE_MB.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
hdd=$(by_serial HDD0001)
ssd=$(by_serial SSD0001)
seconds=${ACC_SECONDS:-90}
cache_mb=${ACC_CACHE_MB:-64}
region=${ACC_REGION:-640M}  # the workload's data; old data at 700M, the backup at 1400M
old_at=700M
backup_at=1400M
prefill_s=${ACC_PREFILL_SECONDS:-45}
no_udev_lvm
uname -r > "$LAB_OUT/kernel.txt"
lvm version > "$LAB_OUT/lvm-version.txt"
fio --version > "$LAB_OUT/fio-version.txt"

run_fio() {  # run_fio NAME TARGET WORKLOAD: one measured run, fio's iolog recorded
  local common="--filename=$2 --bs=4k --direct=1 --ioengine=libaio --iodepth=4 --norandommap --randrepeat=1"
  case "$3" in
    backup)  # a 1 GiB-scale zipf hot set, with a sequential backup read streaming beside it
      fio --name=hot $common --rw=randread --random_distribution=zipf:1.2 --size="$size" --time_based \
          --runtime="$seconds" --write_iolog="$LAB_OUT/$1.iolog" \
          --name=backup --filename="$2" --rw=read --bs=1M --direct=1 --ioengine=libaio --iodepth=1 \
          --offset="$backup_at" --size="$size" --time_based --runtime="$seconds" --rate=8M \
          --write_iolog="$LAB_OUT/$1.backup.iolog" --output-format=json > "$LAB_OUT/$1.fio.json" ;;
    writes)  # a write-heavy mix: 30% reads
      fio --name="$1" $common --rw=randrw --rwmixread=30 --random_distribution=zipf:1.2 --size="$size" \
          --time_based --runtime="$seconds" --write_iolog="$LAB_OUT/$1.iolog" --output-format=json \
          > "$LAB_OUT/$1.fio.json" ;;
    *)
      fio --name="$1" $common --rw=randread --random_distribution="$3" --size="$size" --time_based \
          --runtime="$seconds" --write_iolog="$LAB_OUT/$1.iolog" --output-format=json > "$LAB_OUT/$1.fio.json" ;;
  esac
}

prefill() {  # prefill TARGET: fill the cache with other data (zipf reads of another region)
  fio --name=old --filename="$1" --bs=4k --direct=1 --ioengine=libaio --iodepth=4 --rw=randread \
      --random_distribution=zipf:0.9 --offset="$old_at" --size="$region" --time_based --runtime="$prefill_s" \
      --output-format=terse > /dev/null
}

teardown_lvm() {
  lvremove -q -y labvg >/dev/null 2>&1 || true
  vgremove -q -y labvg >/dev/null 2>&1 || true
  pvremove -q -y "$hdd" "$ssd" >/dev/null 2>&1 || true
  wipefs -q -a "$hdd" "$ssd"
}

teardown_bcache() {
  echo 1 > /sys/block/bcache0/bcache/stop 2>/dev/null || true
  for cs in /sys/fs/bcache/*-*; do [ -d "$cs" ] && echo 1 > "$cs/stop"; done
  sleep 2
  wipefs -q -a "$hdd"
  wipefs -q -a "$(lsblk -nrpo NAME "$ssd" | sed -n 2p)" 2>/dev/null || true
  wipefs -q -a "$ssd"
}

for backend in ${ACC_BACKENDS:-dmcache-wt bcache-wt}; do
  for w in ${ACC_WORKLOADS:-zipf12=zipf:1.2 zipf08=zipf:0.8}; do
    name=${w%%=*}; workload=${w#*=}; size=$region
    case "$workload" in *@*) size=${workload#*@}; workload=${workload%@*} ;; esac
    run="$backend-$name"
    mode=writethrough; case "$backend" in *-wb*) mode=writeback ;; esac
    settings=""; case "$backend" in *-mt) settings="--cachesettings migration_threshold=16384" ;; esac
    echo "$(date +%s.%N) start $run" >> "$LAB_OUT/timeline.txt"
    if [ "${backend%%-*}" = dmcache ]; then
      pvcreate -q "$hdd" "$ssd"; vgcreate -q labvg "$hdd" "$ssd"
      lvcreate -q -y -L "${ACC_LV_MB:-1900}M" -n data labvg "$hdd"
      lvcreate -q -y --type cache-pool -L "${cache_mb}M" --chunksize 64k --cachemode $mode -n pool labvg "$ssd"
      lvconvert -q -y --type cache --cachepool labvg/pool $settings labvg/data
      lvs -a -o lv_name,segtype,chunk_size,lv_size,cache_mode,cache_policy,cache_settings --reportformat json labvg \
          > "$LAB_OUT/$run.lvs.json"
      dev=/dev/labvg/data
      case "$name" in old*) prefill $dev; echo "$(date +%s.%N) prefilled $run" >> "$LAB_OUT/timeline.txt" ;; esac
      sample_counters "$LAB_OUT/$run.samples" labvg-data & sampler=$!
      run_fio "$run" $dev "$workload"
      kill $sampler; wait $sampler 2>/dev/null || true
      dmsetup status labvg-data > "$LAB_OUT/$run.final"
      teardown_lvm
    else
      # The cache is a partition of ACC_CACHE_MB, as big as the dm-cache pool.
      echo ",${cache_mb}M" | sfdisk -q "$ssd" > /dev/null
      udevadm settle --timeout=30
      part=$(lsblk -nrpo NAME "$ssd" | sed -n 2p)
      # 64 KiB buckets: the kernel refuses a cache of 512 buckets or fewer ("ca->sb.nbuckets is
      # too small", EPERM; recipes/bcache.py says so to users), and 64 MiB in the default
      # 512 KiB buckets is 128.
      make-bcache --wipe-bcache --bucket 64k -B "$hdd" -C "$part" > "$LAB_OUT/$run.make-bcache.txt"
      udevadm settle --timeout=30
      cset=$(bcache-super-show "$part" | awk '$1 == "cset.uuid" {print $2}')
      # udev's rules may register them first; register_quiet takes "already registered" as done.
      # The kernel registers asynchronously: wait for the cache set and bcache0, then attach.
      echo "$part" > /sys/fs/bcache/register_quiet || true
      echo "$hdd" > /sys/fs/bcache/register_quiet || true
      for _ in $(seq 60); do [ -d "/sys/fs/bcache/$cset" ] && [ -e /sys/block/bcache0/bcache ] && break; sleep 1; done
      [ -e /sys/block/bcache0/bcache/cache ] || echo "$cset" > /sys/block/bcache0/bcache/attach || true
      for _ in $(seq 30); do [ -e /sys/block/bcache0/bcache/cache ] && break; sleep 1; done
      echo $mode > /sys/block/bcache0/bcache/cache_mode
      cat /sys/block/bcache0/bcache/state > "$LAB_OUT/$run.state"
      dev=/dev/bcache0
      case "$name" in old*) prefill $dev; echo "$(date +%s.%N) prefilled $run" >> "$LAB_OUT/timeline.txt" ;; esac
      sample_counters "$LAB_OUT/$run.samples" bcache0 & sampler=$!
      run_fio "$run" $dev "$workload"
      kill $sampler; wait $sampler 2>/dev/null || true
      teardown_bcache
    fi
    echo "$(date +%s.%N) end $run" >> "$LAB_OUT/timeline.txt"
  done
done
