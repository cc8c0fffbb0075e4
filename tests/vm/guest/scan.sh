# Scenario: build every kind of device discovery must report, then scan without and with udev.
# Outputs in $LAB_OUT: scan-noudev.json, scan-udev.json (+ -all variants), raw-*.json
# snapshots, the real tools' outputs (fixtures), versions.txt, hotplug-*.json.
. "$LAB_GUEST/common.sh"
set -e
stop_udev
no_udev_lvm
modprobe loop; modprobe bcache; modprobe dm-mod

part=$(by_serial PART0001); lvmdisk=$(by_serial LVM0001)
bcb=$(by_serial BCB0001); bcc=$(by_serial BCC0001)

# A partitioned disk: part1 ext4 mounted, part2 left empty.
printf 'label: gpt\n,256M\n,\n' | sfdisk -q "$part"
mkfs.ext4 -q -L labdata "${part}1"
mkdir -p /run/lab/mnt && mount "${part}1" /run/lab/mnt && echo hello > /run/lab/mnt/hello.txt
# A plain device-mapper device (not LVM) over part2.
dmsetup create labplain --uuid CW-LABPLAIN --table "0 $(blockdev --getsz "${part}2") linear ${part}2 0"

# LVM: a PV in VG labvg with one LV.
pvcreate -q "$lvmdisk"; vgcreate -q labvg "$lvmdisk"; lvcreate -q -y -n data -L 256M labvg

# bcache: backing + cache made together, registered by hand (no udev rules yet).
make-bcache -B "$bcb" -C "$bcc" > "$LAB_OUT/make-bcache.txt"
echo "$bcb" > /sys/fs/bcache/register
echo "$bcc" > /sys/fs/bcache/register
for _ in $(seq 50); do [ -e /sys/block/bcache0 ] && break; sleep 0.2; done

# A loop device, which scan hides unless --all.
truncate -s 64M /run/lab/loop.img
losetup -f --show /run/lab/loop.img > "$LAB_OUT/loopdev.txt"

{
  echo "kernel $(uname -r)"
  lvm version | head -1
  echo "bcache-tools $(dpkg-query -W -f '${Version}' bcache-tools)"
  echo "util-linux $(lsblk --version)"
  echo "systemd-udevd $(/lib/systemd/systemd-udevd --version)"
  "$CW_PY" -c 'import pyudev; print("pyudev", pyudev.__version__)'
} > "$LAB_OUT/versions.txt"

# 1. Without udev.
cw scan --json --no-record --save-raw "$LAB_OUT/raw-noudev.json" > "$LAB_OUT/scan-noudev.json"
cw scan --json --all --no-record > "$LAB_OUT/scan-noudev-all.json"
lsblk --json --bytes -O > "$LAB_OUT/lsblk-noudev.json"
lvs -a --reportformat json --units b --nosuffix -o lv_name,vg_name,lv_uuid,lv_attr,lv_size,segtype,lv_dm_path,devices,pool_lv,origin,lv_role > "$LAB_OUT/lvs.json"
pvs --reportformat json --units b --nosuffix -o pv_name,vg_name,pv_uuid,pv_size,dev_size > "$LAB_OUT/pvs.json"
for d in "$bcb" "$bcc"; do bcache-super-show "$d"; done > "$LAB_OUT/bcache-super-show.txt"
(cd /sys/block && for b in */bcache; do for f in "$b"/*; do [ -f "$f" ] && [ -r "$f" ] && printf '%s\t%s\n' "$f" "$(head -c 200 "$f" | tr '\n' ' ')"; done; done) > "$LAB_OUT/bcache-sysfs.tsv" 2>/dev/null || true
"$CW_PY" "$LAB_GUEST/hotplug_check.py" "HOT0001" "$LAB_OUT/hotplug-noudev.json"

# Timings under emulation: a full scan (with blkid/pvs/lvs) and a quick one (sysfs/udev only).
"$CW_PY" - > "$LAB_OUT/timings-noudev.json" <<'PY'
import json, time
from advisor.disks.collect import collect
t = time.monotonic(); full = collect(); t_full = time.monotonic() - t
t = time.monotonic(); collect(tools=False, reuse=full); t_quick = time.monotonic() - t
print(json.dumps({"full_scan_s": round(t_full, 3), "quick_scan_s": round(t_quick, 3)}))
PY

# 2. With udev.
unset DM_DISABLE_UDEV
start_udev
# bcache registered before udev ran gets no /dev/bcache/by-uuid link (the uuid travels only
# in the kernel's registration event). Stop it and let udev's rules register it, as at boot.
cset=$(basename "$(readlink /sys/block/bcache0/bcache/cache)")
echo 1 > /sys/block/bcache0/bcache/stop
echo 1 > "/sys/fs/bcache/$cset/stop"
for _ in $(seq 100); do [ ! -e /sys/block/bcache0 ] && [ ! -e "/sys/fs/bcache/$cset" ] && break; sleep 0.1; done
udevadm trigger --action=add --settle "$bcb" "$bcc"
for _ in $(seq 100); do [ -e /sys/block/bcache0 ] && break; sleep 0.1; done
udevadm settle --timeout=30
ls -l /dev/bcache/by-uuid/ > "$LAB_OUT/bcache-by-uuid.txt"
cw scan --json --save-raw "$LAB_OUT/raw-udev.json" > "$LAB_OUT/scan-udev.json"
cw scan --json --all --no-record > "$LAB_OUT/scan-udev-all.json"
lsblk --json --bytes -O > "$LAB_OUT/lsblk-udev.json"
udevadm info --export-db > "$LAB_OUT/udev-export-db.txt"
"$CW_PY" "$LAB_GUEST/hotplug_check.py" "HOT0001" "$LAB_OUT/hotplug-udev.json"

# 3. As a normal user (nobody): discovery still works and says what it could not read.
as_nobody "HOME=/tmp XDG_STATE_HOME=/tmp/nobody-state '$CW_PY' -m cachewise scan --json" > "$LAB_OUT/scan-nonroot.json"
echo scenario-done
