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
