#!/bin/bash
# Guest entry point: load the environment the host wrote, run one scenario, record its exit
# code in $LAB_OUT/rc. Scenario output goes to $LAB_OUT/scenario.log.
. "$1"
script="$2"
cd "$LAB_OUT" || exit 1
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"
bash -x "$LAB_GUEST/$script" > "$LAB_OUT/scenario.log" 2>&1
echo $? > "$LAB_OUT/rc"
