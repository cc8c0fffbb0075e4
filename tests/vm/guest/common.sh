# Helpers shared by guest scenarios. Disks are found by serial number, never by sdX name.

set -u
cw() { "$CW_PY" -m cachewise "$@"; }

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
