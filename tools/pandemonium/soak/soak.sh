#!/bin/sh
# Guest side of `pandemonium.py bench-soak` (busybox sh; runs as root in the VM).
#
# usage: soak.sh TOTAL_S PHASE_S WINDOW_S
#
# Runs scx_pandemonium (adaptive) for TOTAL_S seconds while the load changes every PHASE_S
# seconds, cycling through PHASES below; the workloads are bench-stress's (driver.sh, sourced).
# A reporter beside it measures one window of WINDOW_S seconds after another and prints a
# `window key=value...` line per window (the host parses them, windows.py). Results in /results:
#   windows.txt     the window lines
#   events.txt      `soak: ...` lines: phases, daemon stops and starts with their procdb load
#   winN.*.json     the progress monitor's and the wakeup probe's report of window N
#   sched.log       the daemon's -v output, every instance, with "@@ ..." markers
#   procdb.bin      the procdb as the last clean stop left it
#   dmesg.txt       the kernel log
# Exit status: 0 when every step ran (the verdicts are the host's), 2 on bad usage.

TOTAL=$1
PHASE=$2
WIN=$3
for v in "$TOTAL" "$PHASE" "$WIN"; do
    [ -n "$v" ] && [ "$v" -gt 0 ] 2>/dev/null || {
        echo "usage: soak.sh TOTAL_S PHASE_S WINDOW_S" >&2; exit 2; }
done

set -- "$PHASE" ""
STRESS_DRIVER_LIB=1
. /usr/local/bin/stress-driver.sh

DB=/var/lib/pandemonium/procdb.bin
EVENTS=$R/events.txt
WINDOWS=$R/windows.txt
ST=/tmp/soak                  # shared with the reporter: the phase, the daemon's pid
PHASES="build interactive gaming hotplug kill"
# USER_HZ of x86 Linux: /proc/PID/stat counts CPU time in these ticks.
HZ=100
mkdir -p $ST
# The console, for say() from phases whose output goes to a file.
exec 3>&1
: > $EVENTS
: > $WINDOWS
rm -f $ST/*

say() {
    echo "soak: $*" >> $EVENTS
    echo "soak: $*" >&3
    echo "pandemonium-soak: $*" > /dev/kmsg
    echo "@@ $*" >> $SLOG
}

now() { date +%s; }

# The daemon's last procdb load line (startup), spaces kept: the host reads it to the line end.
load_line() { grep 'procdb /.*: ' $SLOG | tail -n 1 | sed 's/^.*procdb [^ ]*: //'; }

# restart SIG MODEARGS: stop the daemon with SIG, then start it with MODEARGS. The procdb file
# is left where it is, as a reboot or a package upgrade would leave it.
restart() {
    sig=$1
    MODE=$2
    if [ -n "$SPID" ]; then
        old=$SPID
        echo - > $ST/pid
        kill -$sig $SPID 2>/dev/null
        if wait_gone $SPID $STOP_S; then wait $SPID; rc=$?; else rc=hang; fi
        say "stop signal=$sig pid=$old rc=$rc"
        [ $rc = hang ] && { cat /proc/$old/stack >> $SLOG 2>/dev/null; echo w > /proc/sysrq-trigger; }
    fi
    SPID=
    launch
}

launch() {
    t0=$(now)
    if start_sched; then
        echo $SPID > $ST/pid
        say "start pid=$SPID mode='$MODE' t=$(($(now) - T0)) attach_s=$(($(now) - t0))" \
            "procdb_load=$(load_line)"
    else
        echo - > $ST/pid
        say "start failed mode='$MODE'"
        return 1
    fi
}

# The phases. Each runs about D seconds (set by the loop below) and returns 0 when everything
# in it completed. P is the phase's name, for its result files.

# A build: make -j over generated "compile" steps (no compiler in the guest: busybox gzip and
# sha256sum, two short processes a step) beside a fork/exec storm of `true` per CPU. Builds of
# 60 steps (~11 s at 2 vCPUs under TCG), so that the phase ends close to its time.
BUILD_STEPS=60
ph_build() {
    wl_build > $R/$P.build.txt 2>&1 & b=$!
    wl_forkexec > $R/$P.forkexec.txt 2>&1 & f=$!
    waitall $b $f
}

# Interactive tasks (duty-cycled: 300 us of work every 4 ms) with a hackbench burst every 3 s.
ph_interactive() {
    stress --workers $N --run-us 300 --sleep-us 4000 --name st-interact > $R/$P.interact.json &
    i=$!
    end=$(($(now) + D))
    bad=0
    bursts=0
    while [ "$(now)" -lt $end ]; do
        timeout $T hackbench -P -p -g 2 -f 10 -l 100 > /dev/null 2>&1 || bad=$((bad + 1))
        bursts=$((bursts + 1))
        sleep 3
    done
    echo "$bursts hackbench bursts, $bad failed"
    waitall $i && [ $bad -eq 0 ]
}

# Gaming mode (a restart with -m gaming after SIGTERM): a CPU-bound "game" that Steam started
# (SteamGameId in its environment) beside busy loops named like a compositor; SIGTERM again
# and back to auto at the end.
ph_gaming() {
    restart TERM "-m gaming" || return 1
    d0=$D
    D=$((PHASE_END - $(now)))
    [ $D -lt 5 ] && D=5
    env SteamGameId=480 timeout $T pandemonium-tools stress --duration-s $D --workers $N \
        --long-runner --name game-main > $R/$P.game.json & g=$!
    stress --workers $N --long-runner --name Xorg > $R/$P.xorg.json & x=$!
    waitall $g $x
    rc=$?
    D=$d0
    restart TERM "" && return $rc
}

ph_hotplug() { wl_hotplug; }

# SIGKILL: no chance to save or clean up; the restart must load the last periodic save. Then
# hogs beside hackbench bursts.
ph_kill() {
    restart KILL "" || return 1
    D=$((PHASE_END - $(now)))
    [ $D -lt 5 ] && D=5
    stress --workers $((2 * N)) --long-runner --name st-hog > $R/$P.hogs.json & h=$!
    until_end hackbench -T -p -g 2 -f 10 -l 100
    waitall $h
}

# What the reporter samples.
field() { sed 's/.*) //' /proc/$1/stat 2>/dev/null | cut -d' ' -f$2; }
cpu_ms() {
    u=$(field $1 12)
    s=$(field $1 13)
    [ -n "$u" ] && [ -n "$s" ] && echo $(((u + s) * 1000 / HZ)) || echo -
}
rss_kb() { v=$(awk '/^VmRSS:/{print $2}' /proc/$1/status 2>/dev/null); echo "${v:--}"; }
json_ns() { v=$(sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" "$1" 2>/dev/null); echo "${v:--}"; }
# The in-memory profile count from the daemon's last -v telemetry line (`procdb: N/CAP`).
procdb_n() { v=$(tail -n 30 $SLOG | grep -o 'procdb: [0-9]*/' | tail -n 1 | tr -dc 0-9); echo "${v:--}"; }
wake_lat_max() {
    v=$(timeout 20 scx_pandemonium --monitor 1 2>/dev/null | awk '$1 == "wake_lat_max_ns" { print $2; exit }')
    echo "${v:--}"
}
ejections() {
    dmesg | grep 'sched_ext' | grep 'disabled (' | grep -vc 'unregistered from user space'
}

# One window after another until NWIN are done: the progress monitor (bench-stress's: 200 us
# of work every 3 ms; its worst gap is the longest it waited to run) and the wakeup probe (a
# 10 ms period with 200 us of work) run until SAMPLE_S before the window's end on the clock
# (window n ends at n * WIN), then the daemon is sampled; sampling takes a few seconds under
# load, and the clock keeps it from adding up over an hour.
SAMPLE_S=5
reporter() {
    n=0
    while [ $n -lt $NWIN ]; do
        n=$((n + 1))
        w=$((n * WIN - ($(now) - T0) - SAMPLE_S))
        [ $w -lt 5 ] && w=5
        timeout $((w + 60)) pandemonium-tools stress --workers 1 --run-us 200 --sleep-us 3000 \
            --name st-monitor --duration-s $w > $R/win$n.monitor.json & m=$!
        timeout $((w + 60)) pandemonium-tools probe --period-us 10000 --work-us 200 \
            --name st-probe --duration-s $w > $R/win$n.probe.json
        wait $m
        pid=$(cat $ST/pid 2>/dev/null)
        pid=${pid:--}
        if [ "$pid" != - ]; then
            rss=$(rss_kb $pid) cpu=$(cpu_ms $pid) wl=$(wake_lat_max)
        else
            rss=- cpu=- wl=-
        fi
        echo "window n=$n t=$(($(now) - T0)) phase=$(cat $ST/phase 2>/dev/null) pid=$pid" \
            "mon_ns=$(json_ns $R/win$n.monitor.json worst_gap_ns)" \
            "p99_ns=$(json_ns $R/win$n.probe.json p99_ns)" \
            "probe_max_ns=$(json_ns $R/win$n.probe.json max_ns) wake_lat_max_ns=$wl" \
            "rss_kb=$rss cpu_ms=$cpu procdb=$(procdb_n) ejections=$(ejections)" | tee -a $WINDOWS
    done
}

NWIN=$((TOTAL / WIN))
[ $NWIN -lt 1 ] && NWIN=1
# Time counts from the first attach: the soak is TOTAL seconds of a scheduler running.
T0=$(now)
say "begin cpus=$N total_s=$TOTAL phase_s=$PHASE window_s=$WIN windows=$NWIN kernel=$(uname -r)"
MODE=
launch || { dmesg > $R/dmesg.txt; say "end reason=noattach"; exit 0; }
T0=$(now)
echo "-" > $ST/phase
reporter & RP=$!

# The k-th phase (from 1) ends at k * PHASE on the clock, so a phase that overran (a build step, a
# restart) shortens the next one instead of pushing the last phases out of the run.
set -- $PHASES
k=0
while [ $(($(now) - T0)) -lt $TOTAL ]; do
    [ $# -eq 0 ] && set -- $PHASES
    P=$1
    shift
    k=$((k + 1))
    pend=$((k * PHASE))
    [ $pend -gt $TOTAL ] && pend=$TOTAL
    D=$((pend - ($(now) - T0)))
    [ $D -lt 10 ] && D=10
    T=$((D + GRACE))
    PHASE_END=$(($(now) + D))
    if [ -z "$SPID" ] || ! alive $SPID; then
        rc=-
        [ -n "$SPID" ] && { wait $SPID; rc=$?; }
        say "daemon gone before $P: exit $rc"
        SPID=
        MODE=
        launch
    fi
    echo $P > $ST/phase
    say "phase $P begin d=$D t=$(($(now) - T0))"
    ph_$P >> $R/$P.out.txt 2>&1
    say "phase $P end rc=$? t=$(($(now) - T0)) sched_alive=$(alive $SPID && echo 1 || echo 0)"
done
echo "-" > $ST/phase
wait $RP

# A clean stop saves the procdb; a last start must load what it saved.
old=$SPID
stop_sched
say "stop signal=INT pid=$old rc=$STOP_RC"
cp $DB $R/procdb.bin 2>/dev/null
MODE=
if launch; then
    old=$SPID
    stop_sched
    say "stop signal=INT pid=$old rc=$STOP_RC"
fi
dmesg > $R/dmesg.txt
say "end t=$(($(now) - T0)) state=$(sched_state)"
exit 0
