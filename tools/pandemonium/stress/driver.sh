#!/bin/sh
# Guest side of `pandemonium.py bench-stress` (busybox sh; runs as root in the VM).
#
# usage: driver.sh DURATION_S "SCHEDULER ARGS" WORKLOAD...
#
# Starts scx_pandemonium once and runs each workload for DURATION_S seconds beside a progress
# monitor (a duty-cycled `pandemonium-tools stress` worker that reports the longest time it went
# without the CPU). The scheduler is restarted only if it died; every stop has a deadline, so a
# hang on exit is recorded instead of stalling the whole run. Results go to /results:
#   cells.txt       one "cell key=value..." line per workload (parsed by results.py here)
#   W.*.json        the JSON reports of the stress tools of workload W
#   sched.log       the scheduler's -v output, with "@@ begin W" / "@@ end W" markers
#   dmesg.txt       the kernel log, with "pandemonium-stress: begin W" markers
# Exit status: 0 when every step ran (the verdict is the host's job), 2 on bad usage.
#
# With STRESS_DRIVER_LIB=1 it only defines the helpers and workloads and returns, for a script
# that sources it (bench-soak's soak.sh); D and T are then read when a workload runs, so the
# sourcing script sets them per phase.

D=$1
MODE=$2
[ -n "$D" ] && [ "$D" -gt 0 ] 2>/dev/null || { echo "usage: driver.sh DURATION_S ARGS W..." >&2; exit 2; }
shift 2
R=/results
# The build workload's tree (shared with the bench drivers): the guest's copy, or the checkout's.
BUILD_LOAD_SH=${BUILD_LOAD_SH:-/usr/local/bin/build-load.sh}
[ -r "$BUILD_LOAD_SH" ] || BUILD_LOAD_SH=$(dirname "$0")/../guest/build_load.sh
. "$BUILD_LOAD_SH"
N=$(nproc)
H=$((N - 1))                  # the hot-plugged CPU (cpu0 usually cannot go offline)
SLOG=$R/sched.log
CELLS=$R/cells.txt
GRACE=180                     # seconds a workload may overrun before it counts as hung
ATTACH_S=400                  # BPF loading under TCG has taken ~100 s
STOP_S=60
SPID=
STARTS=0
PRESTOP=-
mkdir -p $R
[ -n "$STRESS_DRIVER_LIB" ] || : > $CELLS

note() {
    echo "@@ $*" >> $SLOG
    echo "pandemonium-stress: $*" > /dev/kmsg
    echo "stress-driver: $*"
}

# alive PID: the process exists and is not a zombie.
alive() {
    st=$(sed 's/.*) //' /proc/$1/stat 2>/dev/null | cut -d' ' -f1)
    [ -n "$st" ] && [ "$st" != Z ]
}

# wait_gone PID SECONDS: 0 if it ended in time.
wait_gone() {
    i=0
    while alive $1; do
        [ $i -ge $(($2 * 5)) ] && return 1
        sleep 0.2
        i=$((i + 1))
    done
    return 0
}

sched_state() { cat /sys/kernel/sched_ext/state 2>/dev/null || echo absent; }

start_sched() {
    scx_pandemonium -v $MODE >> $SLOG 2>&1 &
    SPID=$!
    i=0
    while [ "$(sched_state)" != enabled ]; do
        alive $SPID || { wait $SPID; echo "start failed: exit $?" >> $SLOG; SPID=; return 1; }
        [ $i -ge $((ATTACH_S * 2)) ] && { echo "start: not attached in ${ATTACH_S}s" >> $SLOG; return 1; }
        sleep 0.5
        i=$((i + 1))
    done
    note "attached pid $SPID"
}

# stop_sched: SIGINT, then exit within STOP_S. Sets STOP_RC (exit status or "hang").
stop_sched() {
    STOP_RC=none
    [ -n "$SPID" ] || return 0
    kill -INT $SPID 2>/dev/null
    if wait_gone $SPID $STOP_S; then
        wait $SPID
        STOP_RC=$?
    else
        STOP_RC=hang
        note "scheduler pid $SPID did not exit within ${STOP_S}s"
        cat /proc/$SPID/stack >> $SLOG 2>/dev/null
        echo w > /proc/sysrq-trigger
    fi
    SPID=
}

# The workloads. Each runs about D seconds and returns 0 when everything in it completed.
# T bounds any single command so that a hung workload is recorded and the run moves on.
T=$((D + GRACE))
bg() { timeout $T "$@" & }
stress() { timeout $T pandemonium-tools stress --duration-s $D "$@"; }

# until_end CMD...: repeats CMD until D seconds are up; fails on the first failure.
until_end() {
    end=$(($(date +%s) + D))
    n=0
    while [ "$(date +%s)" -lt $end ]; do
        timeout $T "$@" > /dev/null 2>&1 || { echo "$* failed ($?) after $n runs"; return 1; }
        n=$((n + 1))
    done
    echo "$n runs of $1"
}

# waitall PID...: 0 only if every PID exited 0.
waitall() {
    rc=0
    for p in "$@"; do wait $p || rc=1; done
    return $rc
}

wl_hogs() { stress --workers $((4 * N)) --long-runner --name st-hog > $R/$W.hogs.json; }

wl_forkexec() {
    pids=
    for _ in $(seq $N); do
        until_end /bin/busybox true > /dev/null & pids="$pids $!"
    done
    waitall $pids
}

wl_hackbench_proc() { until_end hackbench -P -p -g 2 -f 10 -l 200; }
wl_hackbench_thread() { until_end hackbench -T -p -g 2 -f 10 -l 200; }
wl_pipe() { timeout $T stress-ng --pipe $N --pipe-data-size 8 -t $D --metrics-brief; }

# Two hogs pinned to cpu H, re-pinned after every replug (the kernel breaks the affinity of
# tasks whose only CPU goes away), beside N unpinned hogs; cpu H goes offline and back each
# second.
wl_hotplug() {
    if [ $N -lt 2 ]; then echo "hotplug needs 2 CPUs"; return 0; fi
    stress --workers 2 --long-runner --name st-pinned > $R/$W.pinned.json & pp=$!
    stress --workers $N --long-runner --name st-hog > $R/$W.hogs.json & hp=$!
    mask=$(printf '%x' $((1 << H)))
    end=$(($(date +%s) + D))
    flips=0
    bad=0
    pins=0
    sleep 0.5
    tids=
    while [ "$(date +%s)" -lt $end ]; do
        # The workers by their thread name ($pp is the shell running stress(), not the tool),
        # looked for until found: under load the tool takes a while to start them. The braces
        # silence a task that exits between the glob and the read: the shell reports a failed
        # redirection itself, before the command's own 2>/dev/null applies.
        [ -z "$tids" ] && for t in /proc/[0-9]*/task/[0-9]*; do
            { read -r comm < $t/comm; } 2>/dev/null && [ "$comm" = st-pinned ] && tids="$tids ${t##*/}"
        done
        # An offlined CPU's tasks lose their pin: set again before every unplug.
        for t in $tids; do taskset -p $mask $t > /dev/null 2>&1 && pins=$((pins + 1)); done
        sleep 1
        timeout 30 sh -c "echo 0 > /sys/devices/system/cpu/cpu$H/online" || bad=$((bad + 1))
        sleep 1
        timeout 30 sh -c "echo 1 > /sys/devices/system/cpu/cpu$H/online" || bad=$((bad + 1))
        flips=$((flips + 1))
    done
    echo 1 > /sys/devices/system/cpu/cpu$H/online 2>/dev/null
    echo "cpu$H unplugged and replugged $flips times, $bad failed writes, $pins pins of st-pinned"
    waitall $pp $hp && [ $bad -eq 0 ]
}

wl_mixed() {
    bg stress-ng --cpu $N --sched batch -t $D; b=$!
    bg stress-ng --cpu $N --sched idle -t $D; i=$!
    stress --workers $N --nice 10 --name st-nice10 > $R/$W.nice10.json & n1=$!
    stress --workers $N --nice -10 --name st-nice-10 > $R/$W.nice-10.json & n2=$!
    waitall $b $i $n1 $n2
}

# An RT (SCHED_FIFO) hog on cpu H never reaches sched_ext. What is left of cpu H for the ext
# tasks queued there is the kernel's business: its sched_ext deadline server where it has one
# (the "kernel ext_server=" line), nothing on 6.18 (see workloads.RT_WORKLOADS).
wl_rt_hog() {
    bg stress-ng --cpu 1 --sched fifo --sched-prio 10 --taskset $H -t $D; r=$!
    stress --workers $((2 * N)) --long-runner --name st-hog > $R/$W.hogs.json & h=$!
    waitall $r $h
}

wl_threads() { timeout $T stress-ng --pthread $N --pthread-max 256 -t $D --metrics-brief; }

wl_affinity() {
    bg stress-ng --affinity $N --affinity-rand -t $D --metrics-brief; a=$!
    stress --workers $N --name st-yield > $R/$W.yield.json & y=$!
    waitall $a $y
}

wl_stressng() {
    timeout $T stress-ng --switch $N --fork $N --yield $N --futex $N -t $D --metrics-brief
}

wl_stressng_mutex() { timeout $T stress-ng --mutex $N -t $D --metrics-brief; }

wl_schedpolicy() { timeout $T stress-ng --schedpolicy $N -t $D --metrics-brief; }

# A build-shaped job: make -j over BUILD_STEPS (default 300) generated "compile" steps and a final
# "link" (build-load.sh's tree), repeated until D. One build of 300 takes ~55 s at 2 vCPUs under
# TCG.
wl_build() {
    src=/tmp/build
    build_tree $src ${BUILD_STEPS:-300}
    until_end sh -c "make -C $src -s clean && make -C $src -s -j$((2 * N)) all"
}

# The VM-monitor shape: an I/O thread that wakes every 2 ms beside CPU-bound "vCPU" threads.
wl_vmmon() {
    stress --workers 1 --run-us 100 --sleep-us 2000 --name vm-iothread > $R/$W.iothread.json & io=$!
    stress --workers $N --long-runner --name vm-vcpu > $R/$W.vcpu.json & vc=$!
    waitall $io $vc
}

# The sched-ext/scx CI check, as it is written there; our own instance is stopped first.
wl_scxci() {
    stop_sched
    PRESTOP=$STOP_RC
    echo "scxci: stopping the long-running instance: $STOP_RC"
    stress-ng -t 31 --aggressive -M -c $N -f $N --affinity 1 --affinity-delay 1 --affinity-pin \
        > $R/$W.stress-ng.txt 2>&1 &
    sp=$!
    timeout -s TERM 45 scx_pandemonium -v $MODE > $R/$W.sched.log 2>&1 &
    tp=$!
    if wait_gone $tp $((45 + STOP_S)); then
        wait $tp
        CI_RC=$?
    else
        CI_RC=hang
        echo w > /proc/sysrq-trigger
    fi
    wait $sp
    echo "scx_pandemonium exit status after SIGTERM: $CI_RC"
    [ "$CI_RC" = 0 ]
}

# gap FILE: worst_gap_ns of a stress JSON report, or - if there is none.
gap() {
    v=$(sed -n 's/.*"worst_gap_ns":\([0-9]*\),"per_worker".*/\1/p' "$1" 2>/dev/null)
    echo "${v:--}"
}

worst_load() {
    w=-
    for f in $R/$1.*.json; do
        case $f in *.monitor.json|*'*'*) continue ;; esac
        v=$(gap $f)
        [ "$v" = - ] && continue
        if [ "$w" = - ] || [ "$v" -gt "$w" ]; then w=$v; fi
    done
    echo $w
}

# rescues W: the -v telemetry's per-second rescue counts summed between W's markers.
rescues() {
    awk -v b="@@ begin $1" -v e="@@ end $1" '
        $0 == b { on = 1; s = 0; next }
        $0 == e { on = 0 }
        on && /^d\/s:/ && match($0, /rescue: [0-9]+/) { s += substr($0, RSTART + 8, RLENGTH - 8) }
        END { print s + 0 }' $SLOG
}

# Memory left and kernel memory that cannot be reclaimed: a leak (e.g. frees waiting on an RCU
# grace period that never ends) shows up here cell by cell.
meminfo() {
    awk '/^MemAvailable:/{a=$2} /^SUnreclaim:/{u=$2} END{printf "mem_avail_kb=%s sunreclaim_kb=%s", a, u}' \
        /proc/meminfo
}

run_cell() {
    W=$1
    case $W in scxci) ;; *)
        if [ -z "$SPID" ] || ! alive $SPID; then
            [ -n "$SPID" ] && { wait $SPID; echo "scheduler exit $? before $W" >> $SLOG; }
            STARTS=$((STARTS + 1))
            start_sched || { echo "cell workload=$W rc=noattach sched_alive=0" >> $CELLS; return; }
        fi
    esac
    fn=wl_$(echo $W | tr - _)
    note "begin $W"
    stress --workers 1 --run-us 200 --sleep-us 3000 --name st-monitor > $R/$W.monitor.json &
    mp=$!
    t0=$(date +%s)
    $fn > $R/$W.out.txt 2>&1
    wrc=$?
    wait $mp
    mrc=$?
    secs=$(($(date +%s) - t0))
    salive=0
    if [ -n "$SPID" ] && alive $SPID; then salive=1; fi
    sexit=-
    if [ $salive = 0 ] && [ -n "$SPID" ]; then
        wait $SPID
        sexit=$?
        SPID=
        # What the scheduler said since this workload began (its exit reason and dump) also on
        # the console: a guest that wedges in a later workload never returns /results.
        sed -n "/^@@ begin $W\$/,\$s/^/sched-log: /p" $SLOG
    fi
    [ "$W" = scxci ] && sexit=$CI_RC
    note "end $W"
    # Also on the console: if the guest wedges, /results never reaches the host, the console does.
    echo "cell workload=$W rc=$wrc monitor_rc=$mrc secs=$secs sched_alive=$salive" \
        "sched_exit=$sexit prestop=$PRESTOP state=$(sched_state) mon_ns=$(gap $R/$W.monitor.json)" \
        "load_ns=$(worst_load $W) rescues=$(rescues $W) $(meminfo)" | tee -a $CELLS
    PRESTOP=-
}

[ -n "$STRESS_DRIVER_LIB" ] && return 0

# Whether the kernel serves ext tasks on CPUs kept busy by RT work (the sched_ext deadline
# server, 6.19+; debugfs shows its parameters). Also on the console, like the cell lines.
mount -t debugfs none /sys/kernel/debug 2>/dev/null
if [ -d /sys/kernel/debug/sched/ext_server ]; then EXT_SERVER=1; else EXT_SERVER=0; fi
echo "kernel release=$(uname -r) ext_server=$EXT_SERVER" \
    "rt_runtime_us=$(cat /proc/sys/kernel/sched_rt_runtime_us 2>/dev/null)" | tee -a $CELLS
echo "stress-driver: $N CPUs, ${D}s per workload, scheduler args '$MODE', workloads: $*"
for w in "$@"; do run_cell $w; done
stop_sched
echo "final stop=$STOP_RC starts=$STARTS state=$(sched_state)" | tee -a $CELLS
dmesg > $R/dmesg.txt
exit 0
