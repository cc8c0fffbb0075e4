# Scenario: only the hot-plug checks (for working on hot-plug without the full discovery setup).
. "$LAB_GUEST/common.sh"
set -e
stop_udev
"$CW_PY" "$LAB_GUEST/hotplug_check.py" "HOT0001" "$LAB_OUT/hotplug-noudev.json"
start_udev
"$CW_PY" "$LAB_GUEST/hotplug_check.py" "HOT0001" "$LAB_OUT/hotplug-udev.json"
