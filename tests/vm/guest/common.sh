# Helpers shared by guest scenarios. Disks are found by serial number, never by sdX name.

set -u
cw() { "$CW_PY" -X faulthandler -m cachewise "$@"; }

serial_of() {  # serial_of /sys/block/X
  local d=$1
  if [ -e "$d/device/vpd_pg80" ]; then tail -c +5 "$d/device/vpd_pg80" | tr -d '\0 '
  elif [ -e "$d/device/serial" ]; then tr -d ' \n' < "$d/device/serial"
  fi
}

by_serial() {  # by_serial HDD0001 -> /dev/sdX
  local d
  for d in /sys/block/*; do
    if [ "$(serial_of "$d")" = "$1" ]; then echo "/dev/$(basename "$d")"; return 0; fi
  done
  echo "no disk with serial $1" >&2
  return 1
}

start_udev() {
  /lib/systemd/systemd-udevd --daemon
  udevadm trigger
  udevadm settle --timeout=30
}

# lvm2 waits for udev to confirm device nodes unless told udev is not there.
no_udev_lvm() { export DM_DISABLE_UDEV=1; }

# virtme-ng's init starts udevd whenever it is installed. To see a system without udev,
# stop it and remove everything it made: its database, /dev/disk and /dev/bcache links.
stop_udev() {
  udevadm control --exit 2>/dev/null || true
  pkill -x systemd-udevd 2>/dev/null || true
  rm -rf /run/udev /dev/disk /dev/bcache
}

# Run a command as the unprivileged user nobody. The guest shares the host's root file
# system read-only; when the Python behind $CW_PY lives under a private /root (pyenv), give
# /root a writable overlay whose mode lets nobody through. Guest-only: the host is untouched.
as_nobody() {
  if ! su -s /bin/sh nobody -c "test -x '$CW_PY'" 2>/dev/null; then
    mkdir -p /run/rootov/u /run/rootov/w
    mount -t overlay overlay -o lowerdir=/root,upperdir=/run/rootov/u,workdir=/run/rootov/w /root
    chmod 755 /root
  fi
  su -s /bin/bash nobody -c "$*"
}

# sample_counters FILE DEV: every 2 s, the time and the cache's counters, until killed: a bcache
# device's stats_total (hits, misses, bypass hits, bypass misses) and its dirty data; else
# `dmsetup status` of the dm device DEV (tests/vm/accuracy.py's counters() reads both).
sample_counters() {
  local s
  while :; do
    if [ -e "/sys/block/$2/bcache" ]; then
      s=/sys/block/$2/bcache/stats_total
      echo "$(date +%s.%N) $(cat $s/cache_hits $s/cache_misses $s/cache_bypass_hits $s/cache_bypass_misses | tr '\n' ' ')$(cat /sys/block/$2/bcache/dirty_data)"
    else
      echo "$(date +%s.%N) $(dmsetup status "$2")"
    fi
    sleep 2
  done > "$1"
}

# keep_dirty FILE SAMPLES: make a writeback dm-cache (labvg/data) hold dirty blocks. smq
# promotes only blocks read often and cleans them as soon as the device is idle, so FILE is
# read to get it promoted, then a 40-IOPS writer keeps rewriting it; returns once dmsetup shows
# dirty blocks (each sample appended to SAMPLES), with the writer's pid in $writer.
keep_dirty() {
  lvchange -q --cachesettings migration_threshold=65536 labvg/data
  fio --name=warm --filename="$1" --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=4 \
      --time_based --runtime=8 --output-format=terse > /dev/null
  fio --name=writer --filename="$1" --rw=randwrite --bs=4k --direct=1 --ioengine=libaio --iodepth=1 \
      --rate_iops=40 --time_based --runtime=600 --output-format=terse > /dev/null 2>&1 &
  writer=$!
  local d
  for _ in $(seq 60); do
    d=$(dmsetup status labvg-data | awk '{print $14}')
    echo "$d" >> "$2"
    [ "${d:-0}" -gt 0 ] && break
    sleep 0.5
  done
}

# power_cut: the machine loses power now. Nothing is synced: the sysrq reboot skips the file
# systems' and the block layer's flushes, as a pulled plug does; qemu exits and the harness
# boots again on the same disk images (Lab.run_boots), which finds $LAB_OUT/cut-$LAB_BOOT.
power_cut() {
  echo 1 > /proc/sys/kernel/sysrq
  : > "$LAB_OUT/cut-${LAB_BOOT:-1}"
  # the marker must reach the host's folder before the cut; it is on the shared work folder,
  # not on an emulated disk, so a sync of that one file is all it needs
  sync -f "$LAB_OUT/cut-${LAB_BOOT:-1}" 2>/dev/null || true
  echo b > /proc/sysrq-trigger
  sleep 30  # not reached
}

# wait_for_event PID EVENT K: until the journal holds K records of EVENT or PID has ended. Counted
# with bash builtins only: a process per poll would compete with the apply it watches.
wait_for_event() {
  local n f line
  while kill -0 "$1" 2> /dev/null; do
    n=0
    for f in "$CACHEWISE_STATE_DIR"/journal/*.jsonl; do
      [ -e "$f" ] || continue
      while IFS= read -r line; do [[ $line == *"\"$2\""* ]] && n=$((n + 1)); done < "$f"
    done
    [ "$n" -ge "$3" ] && return 0
    sleep 0.1
  done
}

# crash_each_step PLAN TAG VERIFY RESET: SIGKILL `cachewise apply PLAN` after each of its steps
# (every step in the soak run, steps 1 and 2 otherwise), then resume it (odd steps) or roll it back
# (even steps). VERIFY NAME records whether the data is intact (NAME = TAG-k-data); RESET puts the
# starting state back, whatever state the run left (it may also make PLAN again). Outputs: TAG-k-{apply,after}.txt, the
# journals, and TAG-ks.txt with the steps killed.
crash_each_step() {
  local plan=$1 tag=$2 verify_fn=$3 reset_fn=$4 steps k pid
  steps=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['steps']))" "$plan")
  if [ "${LAB_SOAK:-0}" = 1 ]; then ks=$(seq 1 "$steps"); else ks="1 2"; fi
  echo "$steps $ks" > "$LAB_OUT/$tag-ks.txt"
  mkdir -p "$CACHEWISE_STATE_DIR/old"
  for k in $ks; do
    mv "$CACHEWISE_STATE_DIR"/journal/*.jsonl "$CACHEWISE_STATE_DIR/old/" 2>/dev/null || true
    "$CW_PY" -m cachewise apply "$plan" --yes > "$LAB_OUT/$tag-$k-apply.txt" 2>&1 &
    pid=$!
    wait_for_event "$pid" step-end "$k"
    kill -9 $pid 2> /dev/null || true
    wait $pid 2> /dev/null || true
    if [ "$k" = "$steps" ] || [ $((k % 2)) = 1 ]; then
      action=resume
    else
      action=rollback
    fi
    if grep -q ': done\.$' "$LAB_OUT/$tag-$k-apply.txt"; then
      # the plan ran to its end before the kill landed (its last steps are quick): nothing to resume
      echo "completed rc 0" > "$LAB_OUT/$tag-$k-after.txt"
    elif cw apply --$action --yes > "$LAB_OUT/$tag-$k-after.txt" 2>&1; then echo "$action rc 0" >> "$LAB_OUT/$tag-$k-after.txt"
    else echo "$action rc $?" >> "$LAB_OUT/$tag-$k-after.txt"; fi
    "$verify_fn" "$tag-$k-data"
    "$reset_fn"
  done
}

# keep_etc_cachewise: /etc/cachewise lasts across the boots of a scenario, as on a real disk (the
# guest's /etc is the host's, read-only under a tmpfs overlay that each boot starts afresh):
# it is kept in $LAB_WORK/etc-cachewise and bound there.
keep_etc_cachewise() {
  mkdir -p "$LAB_WORK/etc-cachewise"
  chmod 755 "$LAB_WORK/etc-cachewise"
  if ! mkdir -p /etc/cachewise 2> /dev/null; then
    mkdir -p /run/etcov/u /run/etcov/w
    mount -t overlay overlay -o lowerdir=/etc,upperdir=/run/etcov/u,workdir=/run/etcov/w /etc
    mkdir -p /etc/cachewise
  fi
  mount --bind "$LAB_WORK/etc-cachewise" /etc/cachewise
}

# install_package_udev_rules: the udev rules the .deb installs, pointed at this tree's cachewise
# (the package is not installed in the guest: /usr/bin/cachewise is a wrapper under /run).
install_package_udev_rules() {
  mkdir -p /run/cw-bin
  printf '#!/bin/sh\nPYTHONPATH=%s NPY_DISABLE_CPU_FEATURES="%s" exec %s -m cachewise "$@"\n' \
    "$CW_REPO" "$NPY_DISABLE_CPU_FEATURES" "$CW_PY" > /run/cw-bin/cachewise
  chmod 755 /run/cw-bin/cachewise
  mkdir -p /etc/udev/rules.d 2> /dev/null || true
  sed 's|/usr/bin/cachewise|/run/cw-bin/cachewise|' "$CW_REPO/packaging/debian/cachewise-bcache-tunables.rules" \
    > /etc/udev/rules.d/70-cachewise-bcache-tunables.rules
  udevadm control --reload
}

# started FILE: wait (up to 60 s) until `cachewise trace` or `capture start`, its standard error in
# FILE, says tracing is on. Scripts wait for that line rather than reading the instance's files in
# tracefs while cachewise sets it up: twice the guest hung in such a read (2026-11-26 and -27, a
# grep of the new instance's tracing_on), with nothing on its console.
started() {
  for _ in $(seq 600); do grep -qs -e '^cachewise: tracing ' -e '^cachewise: capturing ' "$1" && return 0; sleep 0.1; done
  return 1
}
