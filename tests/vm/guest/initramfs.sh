# Scenario (soak, issue 29): a plan's initramfs step against Debian's initramfs-tools. A
# writecache on an LV whose file system the initramfs mounts (x-initrd.mount in fstab): apply
# refuses it while initramfs-tools would leave dm-writecache out of the image, naming the line to
# add; with that line it attaches the cache, makes the image again (update-initramfs -u -k all)
# and checks with lsinitramfs that the image carries dm-writecache. One vCPU.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
export CACHEWISE_STATE_DIR="$LAB_WORK/state" LVM_SUPPRESS_FD_WARNINGS=1
O="$LAB_OUT"
K=$(uname -r)
stamp() { echo "$(cut -d' ' -f1 /proc/uptime) $*" >> "$O/timeline.txt"; }
# The guest's /boot, /etc and /var are the host's, read-only: a tmpfs overlay on each folder the
# step writes (guest only: the host's images are never touched).
writable() {
  local d=$1 n
  if touch "$d/.cw-writable" 2> /dev/null; then rm -f "$d/.cw-writable"; return; fi
  n=$(echo "$d" | tr / _)
  mkdir -p "/run/ov$n/u" "/run/ov$n/w"
  mount -t overlay overlay -o "lowerdir=$d,upperdir=/run/ov$n/u,workdir=/run/ov$n/w" "$d"
}
for d in /boot /etc /var/tmp; do writable "$d"; done
{ uname -r; dpkg-query -W initramfs-tools lvm2 thin-provisioning-tools; grep -E '^(MODULES|COMPRESS)=' /etc/initramfs-tools/initramfs.conf; } > "$O/versions.txt" 2>&1 || true
id_of() { ls /dev/disk/by-id/*"$1" | grep -v -- -part | head -1; }
hdd=$(by_serial IRHDD01); ssd=$(by_serial IRSSD01); ssd_id=$(id_of IRSSD01)

stamp setup
pvcreate -q "$hdd"; vgcreate -q ir "$hdd"; lvcreate -q -y -L 200M -n data ir
mkfs.ext4 -q /dev/ir/data
# udev in the guest does not see mkfs on a dm device (no change event: its database keeps "no
# file system"); a system that boots with the file system has udev's probe: ask for it
udevadm trigger --action=change /dev/ir/data; udevadm settle --timeout=30
uuid=$(blkid -o value -s UUID /dev/ir/data)
mkdir -p /srv/ir
echo "UUID=$uuid /srv/ir ext4 defaults,x-initrd.mount 0 2" >> /etc/fstab
mount /srv/ir
for f in a b c; do head -c 4M /dev/urandom > "/srv/ir/$f"; done
sync; (cd /srv/ir && sha256sum a b c) > "$O/sums.txt"
image=/boot/initrd.img-$K
stat -c %Y "$image" > "$O/image-mtime-before.txt"
lsinitramfs "$image" | grep -E 'dm-writecache|dm-cache' > "$O/image-before.txt" || true

stamp plan
cw plan writecache-attach --lv ir/data --ssd "$ssd_id" --size 48m -o "$O/wc.json" > "$O/wc-preview.txt" 2>&1
stamp refused
if cw apply "$O/wc.json" --yes > "$O/refused.txt" 2>&1; then echo "rc 0" >> "$O/refused.txt"; else echo "rc $?" >> "$O/refused.txt"; fi
lvs --noheadings -o segtype ir/data > "$O/segtype-after-refusal.txt"

stamp apply
echo dm-writecache >> /etc/initramfs-tools/modules
start=$(cut -d' ' -f1 /proc/uptime)
if cw apply "$O/wc.json" --yes > "$O/apply.txt" 2>&1; then echo "rc 0" >> "$O/apply.txt"; else echo "rc $?" >> "$O/apply.txt"; fi
echo "$start $(cut -d' ' -f1 /proc/uptime)" > "$O/apply-seconds.txt"
stamp applied
stat -c %Y "$image" > "$O/image-mtime-after.txt"
lsinitramfs "$image" | grep -E 'dm-writecache|dm-cache' > "$O/image-after.txt" || true
cp "$CACHEWISE_STATE_DIR"/journal/*.jsonl "$O/" 2> /dev/null || true
lvs --reportformat json -o lv_name,segtype,lv_attr ir > "$O/lvs.json"
sync; echo 3 > /proc/sys/vm/drop_caches
if (cd /srv/ir && sha256sum -c "$O/sums.txt") > "$O/verify.txt" 2>&1; then echo ok >> "$O/verify.txt"; fi
stamp done
echo scenario-done
