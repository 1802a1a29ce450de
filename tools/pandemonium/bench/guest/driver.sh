#!/bin/sh
# Guest side of the benchmarks (busybox sh). Runs a plan the host computed and records raw tool
# output; all parsing and arithmetic on results happens on the host (../parse.py), so
# this script stays a dumb, robust executor.
#
# Environment (set by ../driver.py):
#   BENCH_RUNS      "CORES:ITER:SCHED ..." in order; the CPU count changes only between runs,
#                   i.e. while no sched_ext scheduler is attached
#   BENCH_PHASES    phase names, each a phase_<name> function below
#   BENCH_D         seconds per timed phase
#   BENCH_CYC_D     seconds of the cyclictest phase (several BENCH_D: enough wakeups for a P99)
#   BENCH_OPS       bogo-ops per worker of the fixed throughput job (stress-ng int64)
#   BENCH_PIPE_N, BENCH_LAUNCH_N   samples of the ipc / launch phases
#   BENCH_MSG_LOOPS loops of perf bench sched messaging (-g 4)
#   BENCH_HB_GROUPS, BENCH_HB_LOOPS   hackbench -g / -l
#   BENCH_BESIDE_D  seconds the frames and audio phases measure beside the build load
#   BENCH_COOP_REGIONS  parallel regions per coopbench process (the oversub phase)
#   BENCH_EXTERNALS "LABEL=/path/to/binary ARGS;LABEL=..." the external schedulers (any SCHED
#                   other than eevdf and pandemonium, pandemonium-bpf, -gaming, -coop, -learn);
#                   arguments have no blanks
#   BENCH_SCHED_ARGS  extra scx_pandemonium arguments (bench-sys: -v)
#   BENCH_ATTACH_S, BENCH_STOP_S   attach / detach timeouts
#   BENCH_RESULTS   where to write (default /results; the native mode passes its output dir)
#   BENCH_NO_HOTPLUG  1: never take CPUs offline (native mode on a user's machine); a run whose
#                   core count differs from the online CPUs is a hotplug-failed event
#   BENCH_STREAM    1 (the VM): print every finished step on the console as well (see save below),
#                   so that a guest that dies mid-run loses only the step it was in
#   BENCH_SKIP_RUNS 1-based indices into BENCH_RUNS that an earlier boot finished (a resumed run
#                   after a guest crash); their steps keep their numbers but do not run
# Writes $BENCH_RESULTS: steps.tsv (one line per phase), events.log, raw/* (tool output), env.txt.
# Console lines "BENCH-STEP k total ..." let the host print progress.

R=${BENCH_RESULTS:-/results}
# The build load (build_tree, build_load_start/stop): the guest's copy, or the checkout's when the
# driver runs from it (native runs, tests).
BUILD_LOAD_SH=${BUILD_LOAD_SH:-/usr/local/bin/build-load.sh}
[ -r "$BUILD_LOAD_SH" ] || BUILD_LOAD_SH=$(dirname "$0")/../../guest/build_load.sh
. "$BUILD_LOAD_SH"
mkdir -p $R/raw
STEPS=$R/steps.tsv
EVENTS=$R/events.log
: > $STEPS
: > $EVENTS
SCHED_PID=""
LOADS=""
ABORT=""

now_cs() { read -r up _ < /proc/uptime; echo "${up%.*}${up#*.}"; }
event() { echo "$*" >> $EVENTS; echo "BENCH-EVENT $*"; }
ncpu() { grep -c '^processor' /proc/cpuinfo; }
sx_state() { cat /sys/kernel/sched_ext/state 2>/dev/null || echo none; }

# save K RELPATH: with BENCH_STREAM=1, print $R/RELPATH on the console as
#   BENCH-SAVE-BEGIN K RELPATH / base64 of its gzip / BENCH-SAVE-END K RELPATH SHA256-OF-THE-GZIP
# The final /results tar only leaves the guest when the driver ends; this copy survives a guest
# that oopses mid-run (../stream.py reassembles it; the checksum catches kernel lines that land
# inside the block). Only busybox applets: gzip, base64, sha256sum, head, wc. A file above
# STREAM_MAX is cut there with a note (the final tar still carries all of it).
STREAM_MAX=${BENCH_STREAM_MAX:-262144}
save() {
    [ "${BENCH_STREAM:-0}" = 1 ] && [ -f "$R/$2" ] || return 0
    gz=${TMPDIR:-/tmp}/bench-save.$$.gz
    size=$(wc -c < "$R/$2" | tr -d ' ')
    if [ "$size" -gt $STREAM_MAX ]; then
        { head -c $STREAM_MAX "$R/$2"
          printf '\n[bench: streamed copy cut at %s of %s bytes; the results tar has it all]\n' \
              $STREAM_MAX "$size"; } | gzip -c > "$gz"
    else
        gzip -c < "$R/$2" > "$gz"
    fi
    echo "BENCH-SAVE-BEGIN $1 $2"
    base64 "$gz"
    echo "BENCH-SAVE-END $1 $2 $(sha256sum "$gz" | cut -d' ' -f1)"
    rm -f "$gz"
}

# step_done K TAG PHASE LINE: record a finished step in steps.tsv, then stream its output and
# its steps.tsv line (output first: the host counts a step only once both arrived).
step_done() {
    echo "$4" >> $STEPS
    save "$1" "raw/$2.$3.out"
    [ "${BENCH_STREAM:-0}" = 1 ] && echo "BENCH-SAVE-STEP $1 $4"
    return 0
}

# BENCH_SKIP_RUNS holds run index $1: an earlier boot finished that run.
run_done_before() { case " $BENCH_SKIP_RUNS " in *" $1 "*) return 0 ;; esac; return 1; }

# A process's CPU ticks (utime + stime, USER_HZ), nothing if it is gone. The comm field may hold
# spaces, so the fields are counted after its closing parenthesis.
pid_ticks() { sed 's/.*) //' /proc/$1/stat 2>/dev/null | awk '{print $12 + $13}'; }

# CPU time (utime+stime, USER_HZ ticks) and VmRSS/VmHWM (kB) of the scheduler process; "- - -"
# without one. /proc/PID/stat of the leader sums all its threads.
sched_cost() {
    if [ -z "$SCHED_PID" ] || [ ! -r /proc/$SCHED_PID/stat ]; then echo "- - -"; return; fi
    ticks=$(pid_ticks $SCHED_PID)
    rss=$(awk '/^VmRSS:/ {print $2}' /proc/$SCHED_PID/status)
    hwm=$(awk '/^VmHWM:/ {print $2}' /proc/$SCHED_PID/status)
    echo "${ticks:--} ${rss:--} ${hwm:--}"
}

set_cores() {
    if [ "${BENCH_NO_HOTPLUG:-0}" = 1 ]; then
        [ "$(ncpu)" = "$1" ] || event hotplug-failed "wanted $1 CPUs online, have $(ncpu) (no hotplug here)"
        return
    fi
    for d in /sys/devices/system/cpu/cpu[0-9]*; do
        i=${d##*cpu}
        [ -w $d/online ] || continue
        want=0; [ "$i" -lt "$1" ] && want=1
        [ "$(cat $d/online)" = "$want" ] || echo $want > $d/online \
            || event hotplug-failed "cpu$i -> $want"
    done
    [ "$(ncpu)" = "$1" ] || event hotplug-failed "wanted $1 CPUs online, have $(ncpu)"
}

# The command line of an external scheduler: its BENCH_EXTERNALS entry.
ext_cmd() {
    echo "$BENCH_EXTERNALS" | tr ';' '\n' | while IFS= read -r e; do
        [ "${e%%=*}" = "$1" ] && { echo "${e#*=}"; break; }
    done
}

sched_cmd() {
    case $1 in
        pandemonium) echo "scx_pandemonium $BENCH_SCHED_ARGS" ;;
        pandemonium-bpf) echo "scx_pandemonium --no-adaptive $BENCH_SCHED_ARGS" ;;
        pandemonium-gaming) echo "scx_pandemonium -m gaming $BENCH_SCHED_ARGS" ;;
        pandemonium-coop) echo "scx_pandemonium --coop coopbench $BENCH_SCHED_ARGS" ;;
        pandemonium-learn) echo "scx_pandemonium --coop-learn $BENCH_SCHED_ARGS" ;;
        *) ext_cmd "$1" ;;
    esac
}

# The scheduler's last output line: why it did not attach, in its own words.
last_words() { grep -v '^[[:space:]]*$' "$R/raw/$1.sched.log" 2>/dev/null | tail -1 | cut -c1-300; }

# attach TAG SCHED: start the scheduler and wait until sched_ext reports it enabled. On failure
# WHY says why (also in the attach-failed event).
attach() {
    SCHED_PID=""; WHY=""; ATTACH_CS=""
    [ "$2" = eevdf ] && return 0
    cmd=$(sched_cmd "$2")
    if [ -z "$cmd" ]; then
        WHY="no command line for scheduler $2"; event attach-failed "$1 $WHY"; return 1
    fi
    # shellcheck disable=SC2086  # the command line is split on purpose
    ATTACH_T0=$(now_cs)
    $cmd > $R/raw/$1.sched.log 2>&1 &
    SCHED_PID=$!
    t=0
    while [ "$(sx_state)" != enabled ]; do
        if [ ! -d /proc/$SCHED_PID ] || [ "$(awk '{print $3}' /proc/$SCHED_PID/stat)" = Z ]; then
            wait $SCHED_PID; rc=$?; SCHED_PID=""
            WHY="exited (status $rc) before sched_ext was enabled: $(last_words "$1")"
            event attach-failed "$1 $WHY"
            return 1
        fi
        if [ $t -ge "$BENCH_ATTACH_S" ]; then
            WHY="not enabled after ${t}s (state $(sx_state)): $(last_words "$1")"
            event attach-failed "$1 $WHY"
            return 1
        fi
        sleep 1; t=$((t + 1))
    done
    ATTACH_CS=$(($(now_cs) - ATTACH_T0))  # start to enabled, centiseconds (polled each second)
    echo "BENCH-ATTACHED $1 ${t}s $(cat /sys/kernel/sched_ext/root/ops 2>/dev/null)"
    echo "$1 attach_s $t attach_cs $ATTACH_CS" >> $R/attach.tsv
}

# detach TAG: SIGTERM, then wait for the process to exit and sched_ext to be disabled. A timeout
# is a failure the host reports; the run stops there because the guest may be wedged.
detach() {
    [ -z "$SCHED_PID" ] && return 0
    kill -TERM $SCHED_PID 2>/dev/null
    t=0
    while [ "$(awk '{print $3}' /proc/$SCHED_PID/stat 2>/dev/null || echo Z)" != Z ] \
          || [ "$(sx_state)" != disabled ]; do
        if [ $t -ge "$BENCH_STOP_S" ]; then
            event stop-timeout "$1: still running ${t}s after SIGTERM, state $(sx_state)"
            cat /proc/$SCHED_PID/stack > $R/raw/$1.stack 2>&1
            ABORT=1; SCHED_PID=""; return 1
        fi
        sleep 1; t=$((t + 1))
    done
    wait $SCHED_PID; rc=$?
    [ $rc -eq 0 ] || event stop-status "$1 exited with status $rc"
    SCHED_PID=""
}

# -- load generators -------------------------------------------------------------------------
# busy N: N pure busy loops, the field's standard load (never yield, never sleep).
busy() {
    n=$1
    while [ "$n" -gt 0 ]; do
        (while :; do :; done) &
        LOADS="$LOADS $!"; n=$((n - 1))
    done
}
# The project's stress workers (each yields every 10 ms unless --long-runner).
load() { pandemonium-tools stress --duration-s 0 "$@" >> "$OUT.load" 2>&1 & LOADS="$LOADS $!"; }
storm() {
    n=$1
    while [ "$n" -gt 0 ]; do
        (while :; do /bin/busybox true; done) &
        LOADS="$LOADS $!"; n=$((n - 1))
    done
}
unload() {
    for lp in $LOADS; do kill -TERM "$lp" 2>/dev/null; done
    for lp in $LOADS; do wait "$lp" 2>/dev/null; done
    LOADS=""
}
PERIOD_US=10000  # the probe's and cyclictest's wake period: 10 ms, as the standard tool run
probe() { timeout -s TERM $((BENCH_D + 120)) pandemonium-tools probe --duration-s "$BENCH_D" --name bench-probe "$@"; }
settle() { sleep 1; }  # let the load spread over the CPUs before measuring
# probe_split ARGS: the probe, with the kernel's own sched_waking/sched_switch events for it. The
# probe's figure is its timer's lateness plus the scheduler's delay; the events split the two:
# "wake-to-run" is the scheduler's part alone (sched_waking to the switch in, the interval
# perf sched latency and runqlat measure). Beside busy loops the guest's timers fire up to ~3 ms
# late at P99 whatever the scheduler (QEMU's timer thread competes with busy vCPU threads).
probe_split() {
    T=/sys/kernel/tracing
    [ -w $T/set_event_pid ] || { probe "$@"; return; }
    echo 0 > $T/tracing_on; echo > $T/trace; echo 4096 > $T/buffer_size_kb
    # This shell first (its own pid: $$ is the script's, not a subshell's), so that the probe, a
    # child of timeout, is traced from its fork on.
    read -r self _ < /proc/self/stat
    echo 1 > $T/options/event-fork; echo "$self" > $T/set_event_pid
    probe "$@" & pp=$!
    echo 1 > $T/events/sched/sched_waking/enable; echo 1 > $T/events/sched/sched_switch/enable
    echo 1 > $T/tracing_on
    wait $pp; rc=$?
    echo 0 > $T/tracing_on
    echo 0 > $T/events/sched/sched_waking/enable; echo 0 > $T/events/sched/sched_switch/enable
    echo > $T/set_event_pid; echo 0 > $T/options/event-fork
    awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+[.][0-9]+:$/) t = substr($i, 1, length($i) - 1) }
         / sched_waking: comm=bench-probe / { w = t; next }
         / sched_switch: .*next_comm=bench-probe / { if (w != "") printf "%d\n", (t - w) * 1e6; w = "" }' \
        $T/trace | sort -n | awk '{ v[NR] = $1 } END { if (!NR) exit; i = int(NR * 0.99) + 1
            if (i > NR) i = NR
            printf "wake-to-run n=%d p50_us=%d p99_us=%d max_us=%d\n", NR, v[int(NR / 2) + 1], v[i], v[NR] }'
    echo > $T/trace
    return $rc
}

# -- phases: each writes its main output to stdout (saved as raw/TAG.PHASE.out) ---------------
N=1
phase_throughput() { stress-ng --cpu 8 --cpu-method int64 --cpu-ops "$BENCH_OPS" --metrics-brief 2>&1; }
# The probe alone: the idle floor of a 10 ms timer wakeup in this guest.
phase_floor() { settle; probe_split --period-us $PERIOD_US; }
# The latency-type phases run beside 2 busy loops per CPU.
phase_latency() { busy $((2 * N)); settle; probe_split --period-us $PERIOD_US; }
phase_burst() { busy $((2 * N)); storm "$N"; settle; probe_split --period-us $PERIOD_US; }
phase_longrun() { load --workers $((2 * N)) --long-runner; settle; probe_split --period-us $PERIOD_US; }
phase_mixed() {
    load --workers "$N" --long-runner --name batch
    load --workers "$N" --run-us 2000 --sleep-us 8000 --name interactive
    settle; probe_split --work-us 500
}
phase_deadline() { busy $((2 * N)); settle; probe --frames; }
phase_ipc() { benchlat pipe "$BENCH_PIPE_N"; }
# The busy loops' CPU ticks (USER_HZ, centiseconds) so far, all of them together.
loads_ticks() {
    lt_sum=0
    for lp in $LOADS; do
        lt_v=$(pid_ticks $lp)
        lt_sum=$((lt_sum + ${lt_v:-0}))
    done
    echo $lt_sum
}
# Back-to-back launches are a chain that always wants a CPU: a scheduler can make them fast by
# giving the chain more than its share, taken from the loops beside it. The loops' CPU over the
# launches says which (launch-beside: ../parse.py, the note in ../verdicts.py). Its variables are
# its own: run_phase()'s t0, t1, c0 and c1 are globals of this shell.
phase_launch() {
    busy $((2 * N)); settle
    la_t0=$(loads_ticks); la_c0=$(now_cs)
    benchlat launch "$BENCH_LAUNCH_N" /bin/true; la_rc=$?
    la_t1=$(loads_ticks); la_c1=$(now_cs)
    echo "launch-beside loops $((2 * N)) cpus $N ticks $((la_t1 - la_t0))" \
        "window_cs $((la_c1 - la_c0))"
    return $la_rc
}
phase_messaging() { perf bench sched messaging -g 4 -l "$BENCH_MSG_LOOPS" 2>&1; }
# The standard tool run: SCHED_OTHER, one thread per CPU, 10 ms period. The histogram (1 us
# buckets up to 100 ms, later ones overflow) gives P50/P99; only its non-empty rows are kept,
# the full table would flood the console dump.
phase_cyclictest() {
    busy $((2 * N)); settle
    cyclictest --policy=other -q -m -t "$N" -i $PERIOD_US -D "$BENCH_CYC_D" -h 100000 2>&1 \
        | awk '/^#/ { print; next } { s = 0; for (i = 2; i <= NF; i++) s += $i; if (s > 0) print }'
}
# The same run, beside whatever load the caller started (the admin and oversub phases).
cyclictest_hist() {
    cyclictest --policy=other -q -m -t "$N" -i $PERIOD_US -D "$BENCH_CYC_D" -h 100000 2>&1 \
        | awk '/^#/ { print; next } { s = 0; for (i = 2; i <= NF; i++) s += $i; if (s > 0) print }'
}
phase_hackbench() { busy $((2 * N)); settle; hackbench -P -g "$BENCH_HB_GROUPS" -l "$BENCH_HB_LOOPS" 2>&1; }
# -- admin: what an administrator sets (cgroup cpu.weight / cpu.max, nice, SCHED_IDLE) -------
# Raw counters only; ../admin.py turns them into figures. Output lines:
#   admin-count FIG LABEL BEFORE AFTER   a counter over FIG's window (usage_usec, schedstat ns,
#                                        uptime centiseconds for LABEL "window_cs")
#   admin-begin FIG / admin-end FIG      a tool's own output (cyclictest histogram, hackbench)
#   admin-note FIG TEXT                  why FIG has no figure, or what was odd
#   admin-state PART STATE               /sys/kernel/sched_ext/state when PART ended
# Every group is removed at the end of its part (its tasks killed first), whatever happened.
CG=/sys/fs/cgroup
ADMIN_GROUPS=""
admin_cgroup_ready() {
    if [ ! -f $CG/cgroup.controllers ]; then
        mkdir -p $CG
        mount -t cgroup2 cgroup2 $CG 2>/dev/null
    fi
    [ -f $CG/cgroup.controllers ] || { echo "admin-note $1 no cgroup2 hierarchy at $CG"; return 1; }
    grep -qw cpu $CG/cgroup.subtree_control || echo +cpu > $CG/cgroup.subtree_control 2>/dev/null
    grep -qw cpu $CG/cgroup.subtree_control && return 0
    echo "admin-note $1 cannot enable the cpu controller (controllers: $(cat $CG/cgroup.controllers))"
    return 1
}
# cg_new FIG NAME [FILE VALUE]: a group under the root; a write the kernel refuses is a note.
cg_new() {
    local g=$CG/bench-$2
    mkdir -p $g || { echo "admin-note $1 mkdir $g failed"; return 1; }
    ADMIN_GROUPS="$ADMIN_GROUPS $g"
    [ -z "$3" ] && return 0
    echo "$4" > $g/$3 2>/dev/null || echo "admin-note $1 writing '$4' to $2/$3 was refused"
    echo "admin-set $1 $2 $3 $(cat $g/$3 2>/dev/null | tr ' ' '_')"
}
# in_cg NAME CMD...: CMD in the background inside group NAME (the shell joins it, then execs).
in_cg() {
    local g=$CG/bench-$1; shift
    sh -c 'echo $$ > "$0/cgroup.procs" || { echo "admin-note - could not join $0"; exit 1; }
           exec "$@"' "$g" "$@" &
    LOADS="$LOADS $!"
}
# cg_hogs NAME N: N busy loops in group NAME.
cg_hogs() { local n=$2; while [ "$n" -gt 0 ]; do in_cg "$1" benchlat spin nice 0; n=$((n - 1)); done; }
cg_usage() { awk '$1 == "usage_usec" { print $2 }' $CG/bench-$1/cpu.stat 2>/dev/null || echo 0; }
# Kill what is left in the groups, reap the loads, remove the groups (children before parents).
cg_cleanup() {
    local g p t
    for g in $ADMIN_GROUPS; do
        [ -f $g/cgroup.kill ] && echo 1 > $g/cgroup.kill 2>/dev/null
        for p in $(cat $g/cgroup.procs 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    done
    unload
    for g in $ADMIN_GROUPS; do
        t=0
        until rmdir $g 2>/dev/null || [ ! -d $g ]; do
            if [ $t -ge 10 ]; then
                echo "admin-note cleanup $g not removed: $(wc -l < $g/cgroup.procs) tasks left"
                break
            fi
            sleep 1; t=$((t + 1))
        done
    done
    ADMIN_GROUPS=""
}
# admin_window FIG LABEL1 READER1 LABEL2 READER2 [SECONDS]: both counters over one window of
# SECONDS (default BENCH_D). The admin functions keep their variables local: run_phase's
# t0/c0/t1/c1 are globals.
admin_window() {
    local a0 b0 w0 a1 b1 w1
    settle
    a0=$($3); b0=$($5); w0=$(now_cs)
    sleep "${6:-$BENCH_D}"
    a1=$($3); b1=$($5); w1=$(now_cs)
    echo "admin-count $1 $2 $a0 $a1"
    echo "admin-count $1 $4 $b0 $b1"
    echo "admin-count $1 window_cs $w0 $w1"
}
# Summed schedstat run time (ns) of the PIDs in a variable named $1.
sched_ns() {
    local p ps_list
    eval "ps_list=\$$1"
    for p in $ps_list; do cut -d' ' -f1 /proc/$p/schedstat 2>/dev/null; done \
        | awk '{ s += $1 } END { printf "%.0f\n", s }'
}
# spin_set VAR N ARGS: N `benchlat spin ARGS` hogs in the root group, their PIDs in VAR.
spin_set() {
    local var=$1 n=$2 pids=""
    shift 2
    while [ "$n" -gt 0 ]; do benchlat spin "$@" & pids="$pids $!"; LOADS="$LOADS $!"; n=$((n - 1)); done
    eval "$var=\"$pids\""
}
admin_cyclictest() {
    echo "admin-begin $1"
    cyclictest_hist
    echo "admin-end $1"
}
admin_weight() {
    admin_cgroup_ready weight || return 0
    cg_new weight w100 cpu.weight 100 && cg_new weight w300 cpu.weight 300 || { cg_cleanup; return 0; }
    cg_hogs w100 $((2 * N)); cg_hogs w300 $((2 * N))
    admin_window weight w100 "cg_usage w100" w300 "cg_usage w300"
    cg_cleanup
}
admin_cpumax() {
    admin_cgroup_ready cpumax || return 0
    cg_new cpumax capped cpu.max "50000 100000" && cg_new cpumax free || { cg_cleanup; return 0; }
    cg_hogs capped $((2 * N)); cg_hogs free $((2 * N))
    admin_window cpumax capped "cg_usage capped" free "cg_usage free"
    cg_cleanup
}
admin_nice() {
    spin_set NICE0 $((2 * N)) nice 0; spin_set NICE19 $((2 * N)) nice 19
    # Nice 19 hogs get ~1.5 % of the CPU: a BENCH_D window holds a few dozen of their runs and
    # weighs the hogs' first seconds (new tasks, not yet classified) as much as the steady
    # share a long nice 19 job gets. The longer window still holds the start.
    admin_window nice nice0 "sched_ns NICE0" nice19 "sched_ns NICE19" "$BENCH_BESIDE_D"
    unload
    spin_set NICE19 $((2 * N)) nice 19; settle
    admin_cyclictest nicelat
    unload
}
admin_idle() {
    spin_set IDLE $((2 * N)) idle; settle
    admin_cyclictest idlelat
    unload
    spin_set PLAIN $((2 * N)) nice 0; spin_set IDLE $((2 * N)) idle
    admin_window idleshare plain "sched_ns PLAIN" idle "sched_ns IDLE"
    unload
}
# A build-shaped load (the stress matrix's build workload: make -j over generated gzip/sha256sum
# steps, build-load.sh's tree; the guest has no compiler) in a cpu.weight=20 group, hackbench in
# the root group.
admin_build() {
    local src=/tmp/bench-build u0 w0
    admin_cgroup_ready build || return 0
    build_tree $src 300
    cg_new build light cpu.weight 20 || { cg_cleanup; return 0; }
    in_cg light sh -c "while :; do make -C $src -s clean && make -C $src -s -j$((2 * N)) all; done"
    settle; settle
    u0=$(cg_usage light); w0=$(now_cs)
    echo "admin-begin build"
    hackbench -P -g "$BENCH_HB_GROUPS" -l "$BENCH_HB_LOOPS" 2>&1
    echo "admin-end build"
    echo "admin-count build light $u0 $(cg_usage light)"
    echo "admin-count build window_cs $w0 $(now_cs)"
    cg_cleanup
    rm -rf $src
}
# After each part, the sched_ext state: a scheduler the kernel ejects mid-phase (its watchdog
# on a starved SCHED_IDLE hog) keeps the figures of the parts it finished attached.
phase_admin() {
    local part
    for part in weight cpumax nice idle build; do
        admin_$part
        echo "admin-state $part $(sx_state)"
    done
    echo "admin-done"
}
# -- frames and audio: what gamers and audio users feel beside a build (issue #33) -----------
# The tool alone first, for BENCH_D (the floor), then beside bench-soak's build load
# (build-load.sh: make -j over generated steps and a fork/exec loop of `true` per CPU) for
# BENCH_BESIDE_D. Output, parsed by ../felt.py:
#   felt-begin PART / the tool's JSON / felt-end PART    PART: floor, build
#   felt-state PART STATE                                 sched_ext's state when PART ended
#   build-load builds=B objects=O steps=S execs=E         what the build got done meanwhile
# The game runs as Steam launches one, SteamGameId in its environment (480: Spacewar, Steam's
# test app), which is how gaming mode finds a game; its 2 s warm-up covers the daemon's scan.
STEAM_GAME_ID=480
felt_frames() {
    env SteamGameId=$STEAM_GAME_ID timeout -s TERM $(($1 + 120)) \
        pandemonium-tools frames --duration-s "$1" --warmup-s 2
}
felt_audio() { timeout -s TERM $(($1 + 120)) pandemonium-tools audio --duration-s "$1"; }
felt_part() { # PART SECONDS TOOL
    local rc
    echo "felt-begin $1"
    "felt_$3" "$2"; rc=$?
    echo "felt-end $1"
    echo "felt-state $1 $(sx_state)"
    return $rc
}
# felt TOOL: both parts; fails when either tool did.
felt() {
    local rc1 rc2
    felt_part floor "$BENCH_D" "$1"; rc1=$?
    build_load_start "$N"; settle; settle
    felt_part build "$BENCH_BESIDE_D" "$1"; rc2=$?
    build_load_stop
    [ $rc1 -eq 0 ] && return $rc2
    return $rc1
}
phase_frames() { felt frames; }
phase_audio() { felt audio; }
# -- oversub: oversubscribed parallel runtimes (issue #34) --------------------------------------
# 2 coopbench processes at once, each with a thread per CPU, for each way of waiting, then 3 at
# once for libgomp's two waits; output, parsed by ../oversub.py: oversub-begin PART / one JSON
# line per process / oversub-end PART, and oversub-state PART STATE. PART: omp-active-1 (one
# process alone: k of them run back to back take k times as long, the best a scheduler can do),
# omp-active, omp-passive, yield-1 (one process alone, the yield barrier's yardstick), yield,
# omp-active-3, omp-passive-3; last omp-active-lat, cyclictest's histogram beside 2 active ones
# (oversub-note PART TEXT when a process ended before cyclictest did).
oversub_part() { # PART PROCESSES COMMAND...
    local part=$1 k=$2 pids="" i=0 p
    shift 2
    echo "oversub-begin $part"
    while [ $i -lt "$k" ]; do
        "$@" & pids="$pids $!"
        i=$((i + 1))
    done
    for p in $pids; do wait "$p"; done
    echo "oversub-end $part"
    echo "oversub-state $part $(sx_state)"
}
# --coop-learn learns coopbench from its behaviour first: unmeasured yield pairs until the
# scheduler logs that BPF has the name (learned now, or from the procdb of an earlier run; at
# most 6), so the parts measure the learned recognition.
oversub_learn() {
    local i=0
    while [ $i -lt 6 ] && ! grep -q 'coop-learn: recognising "coopbench"' "$R/raw/$tag.sched.log"; do
        oversub_part learn 2 coopbench yield $1 48 $N > /dev/null
        i=$((i + 1)); sleep 1
    done
    echo "oversub-learned $i $(grep -c 'coop-learn: recognising "coopbench"' "$R/raw/$tag.sched.log")"
}
# cyclictest beside K active-wait processes that outlast it (#34: the cooperative treatment must
# not cost interactive wakeups what the plain scheduler gives them). Each process has far more
# regions than the window needs and is killed when cyclictest is done; its report is dropped.
oversub_latency() { # PART PROCESSES
    local part=$1 k=$2 pids="" i=0 p
    echo "oversub-begin $part"
    while [ $i -lt "$k" ]; do
        env OMP_NUM_THREADS=$N OMP_WAIT_POLICY=active \
            coopbench omp $((BENCH_COOP_REGIONS * 200)) 48 > /dev/null 2>&1 &
        pids="$pids $!"; LOADS="$LOADS $!"; i=$((i + 1))
    done
    settle
    cyclictest_hist
    for p in $pids; do  # an exited process is a zombie until unload reaps it
        case $(cut -d' ' -f3 /proc/$p/stat 2>/dev/null) in
            R|S|D) ;; *) echo "oversub-note $part a coopbench process ended before cyclictest" ;;
        esac
    done
    unload
    echo "oversub-end $part"
    echo "oversub-state $part $(sx_state)"
}
phase_oversub() {
    local r=$BENCH_COOP_REGIONS
    [ "$sched" = pandemonium-learn ] && oversub_learn "$r"
    oversub_part omp-active-1 1 env OMP_NUM_THREADS=$N OMP_WAIT_POLICY=active coopbench omp $r 48
    oversub_part omp-active 2 env OMP_NUM_THREADS=$N OMP_WAIT_POLICY=active coopbench omp $r 48
    oversub_part omp-passive 2 env OMP_NUM_THREADS=$N OMP_WAIT_POLICY=passive coopbench omp $r 48
    oversub_part yield-1 1 coopbench yield $r 48 $N
    oversub_part yield 2 coopbench yield $r 48 $N
    oversub_part omp-active-3 3 env OMP_NUM_THREADS=$N OMP_WAIT_POLICY=active coopbench omp $r 48
    oversub_part omp-passive-3 3 env OMP_NUM_THREADS=$N OMP_WAIT_POLICY=passive coopbench omp $r 48
    oversub_latency omp-active-lat 2
}
# Idle and load windows for the scheduler's own cost (bench-power).
phase_idle() { sleep "$BENCH_D"; echo idle; }
phase_busy() { load --workers $((2 * N)); sleep "$BENCH_D"; echo busy; }
# No RAPL PMU (any TCG guest) is this phase's finding, not its failure: the host reads why from
# perf's own words, and the progress line says ok instead of perf's exit status 129.
phase_rapl() {
    out=$(perf stat -a -e power/energy-pkg/ sleep "$BENCH_D" 2>&1); rc=$?
    echo "$out"
    case $out in *"Cannot find PMU"*|*"event syntax error"*) return 0 ;; esac
    return $rc
}
phase_hogs() { load --workers $((4 * N)); settle; probe; }
phase_recovery() { load --workers $((2 * N)); storm "$N"; sleep "$BENCH_D"; unload; load --workers $((2 * N)); settle; probe; }
phase_pinned() { pandemonium-tools stress --workers $((2 * N)) --pin --long-runner --duration-s "$BENCH_D"; }
phase_forkthread() {
    perf stat -e task-clock,context-switches,cpu-migrations,cycles,instructions,cache-misses \
        perf bench sched messaging -t -g 4 -l "$BENCH_MSG_LOOPS" 2>&1
}
phase_telemetry() { load --workers $((2 * N)); sleep "$BENCH_D"; echo telemetry; }
phase_bpfstats() {
    T=/sys/kernel/tracing
    echo 1 > /proc/sys/kernel/bpf_stats_enabled
    echo > $T/trace
    for e in sched_ext sched/sched_switch sched/sched_wakeup; do
        [ -e $T/events/$e/enable ] && echo 1 > $T/events/$e/enable
    done
    # Contended spinlocks (lock:contention_begin, all CPUs) over the load: under single-threaded
    # TCG the spinner's PAUSE hands the emulator to the other vCPUs, so each one costs the
    # caller a round of them in guest time, and a callback's ns per call with it.
    if perf stat -a -x, -e lock:contention_begin -o /tmp/bench-lockstat true > /dev/null 2>&1; then
        perf stat -a -x, -e lock:contention_begin -o /tmp/bench-lockstat \
            perf bench sched messaging -g 4 -l "$BENCH_MSG_LOOPS" 2>&1
        echo "lock_contentions $(grep 'lock:contention_begin' /tmp/bench-lockstat | cut -d, -f1)"
    else
        perf bench sched messaging -g 4 -l "$BENCH_MSG_LOOPS" 2>&1
    fi
    for e in sched_ext sched/sched_switch sched/sched_wakeup; do
        [ -e $T/events/$e/enable ] && echo 0 > $T/events/$e/enable
    done
    # run_cnt / run_time_ns of the scheduler's BPF programs (struct_ops callbacks included), each
    # named by its JIT symbol: /proc/kallsyms lists bpf_prog_<prog_tag>_<function> (the driver
    # turned bpf_jit_kallsyms on before any scheduler loaded), and fdinfo has the prog_tag.
    grep ' bpf_prog_' /proc/kallsyms 2>/dev/null | awk '{print $3}' > /tmp/bench-bpfsyms
    for f in /proc/${SCHED_PID:-none}/fdinfo/*; do
        grep -q '^prog_type' "$f" 2>/dev/null || continue
        # Not $tag: sh has no locals, and the run loop's $tag names the run's files after this.
        ptag=$(awk '/^prog_tag:/ {print $2}' "$f")
        name=$(grep -m1 "^bpf_prog_${ptag}_" /tmp/bench-bpfsyms)
        name=${name#bpf_prog_${ptag}_}
        echo "bpfprog name=${name:--} $(grep -E '^(prog_type|prog_id|run_time_ns|run_cnt):' "$f" | tr '\n' ' ')"
    done
    # The attach that this scheduler run began with (attach()), and the guest's CPUs and nodes.
    echo "attach_cs ${ATTACH_CS:--}"
    echo "cpus_online $(ncpu) nodes $(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)" \
        "cpu0_siblings $(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list 2>/dev/null || echo -)"
    # Event counts (the ring buffer keeps the most recent events only; the counts say which).
    grep -v '^#' $T/trace | awk '{print "trace " $5}' | sort | uniq -c
    echo 0 > /proc/sys/kernel/bpf_stats_enabled
}

run_phase() { # TAG CORES ITER SCHED PHASE K
    OUT=$R/raw/$1.$5
    c0=$(sched_cost); t0=$(now_cs)
    "phase_$5" > "$OUT.out" 2>&1; rc=$?
    t1=$(now_cs); c1=$(sched_cost)
    # The kernel may have ejected the scheduler mid-phase (watchdog stall, error exit): the
    # numbers were then partly measured under EEVDF, so the phase counts as failed (rc 200).
    if [ -n "$SCHED_PID" ] && [ "$(sx_state)" != enabled ]; then
        sleep 1  # the scheduler prints the kernel's exit reason as it goes
        why=$(grep -m1 'error:' $R/raw/$1.sched.log || grep -m1 -i exit $R/raw/$1.sched.log)
        event ejected "$1: during $5: $why"
        rc=200
    fi
    unload
    step_done "$6" "$1" "$5" "$2 $3 $4 $5 $rc $t0 $t1 $c0 $c1"
}

{
    echo "kernel $(uname -r)"
    echo "cpus_present $(ncpu)"
    echo "scheduler $(scx_pandemonium --version 2>&1 | head -1)"
    echo "stress-ng $(stress-ng --version 2>&1 | head -1)"
    echo "perf $(perf --version 2>&1 | head -1)"
    echo "cyclictest $(cyclictest --help 2>&1 | head -1)"
    echo "externals ${BENCH_EXTERNALS:--}"
    echo "$BENCH_EXTERNALS" | tr ';' '\n' | while IFS= read -r e; do
        [ -n "$e" ] || continue
        bin=${e#*=}; bin=${bin%% *}
        echo "version_${e%%=*} $(timeout 10 "$bin" --version 2>&1 | head -1)"
    done
} > $R/env.txt
save 0 env.txt
# BPF programs get a /proc/kallsyms symbol (bpf_prog_<tag>_<name>) only while this is on when
# they load: phase_bpfstats names each program by it.
[ -w /proc/sys/net/core/bpf_jit_kallsyms ] && echo 1 > /proc/sys/net/core/bpf_jit_kallsyms

# The first quota in a boot turns the kernel's cfs bandwidth static key on, and the last one
# removed turns it off: text patching, which under multi-threaded TCG oopsed the guest (int3 in
# put_prev_entity, where the key's branch sits) twice in a row as admin_cpumax set its quota
# beside busy loops. A quota on an empty group, set before any load and kept for the boot,
# patches once while the guest is idle and never again.
case " $BENCH_PHASES " in
*" admin "*)
    admin_cgroup_ready keypin > /dev/null && mkdir -p $CG/bench-keypin \
        && echo "1000000 1000000" > $CG/bench-keypin/cpu.max 2>/dev/null \
        || event keypin-failed "no quota kept for the boot: admin_cpumax may patch kernel text under load"
    ;;
esac

nphases=0
for ph in $BENCH_PHASES; do nphases=$((nphases + 1)); done
total=0
for run in $BENCH_RUNS; do total=$((total + nphases)); done
echo "BENCH-START $total"
k=0
ri=0
cur=""
for run in $BENCH_RUNS; do
    cores=${run%%:*}; rest=${run#*:}; iter=${rest%%:*}; sched=${rest#*:}
    tag="c$cores-i$iter-$sched"
    ri=$((ri + 1))
    # A whole run or nothing: a scheduler run's phases share one attach, so a run an earlier
    # boot only partly finished runs again from its start. Step numbers stay those of the plan.
    if run_done_before $ri; then
        echo "BENCH-RESUME-SKIP $ri $tag steps $((k + 1))-$((k + nphases))"
        k=$((k + nphases)); continue
    fi
    if [ -n "$ABORT" ]; then event skipped "$tag: an earlier scheduler did not stop"; continue; fi
    [ "$cores" = "$cur" ] || { set_cores "$cores"; cur=$cores; N=$(ncpu); }
    if ! attach "$tag" "$sched"; then
        detach "$tag"
        # Every phase gets a row that says why (status 201, the reason as its output).
        t=$(now_cs)
        for ph in $BENCH_PHASES; do
            k=$((k + 1))
            echo "$WHY" > "$R/raw/$tag.$ph.out"
            step_done $k "$tag" "$ph" "$cores $iter $sched $ph 201 $t $t - - - - - -"
            echo "BENCH-STEP $k $total $cores $iter $sched $ph not-attached"
        done
        save $k "raw/$tag.sched.log"
        continue
    fi
    for ph in $BENCH_PHASES; do
        k=$((k + 1))
        if [ -n "$SCHED_PID" ] && [ "$(sx_state)" != enabled ]; then
            event detached "$tag: sched_ext state $(sx_state) before phase $ph"
        fi
        run_phase "$tag" "$cores" "$iter" "$sched" "$ph" $k
        echo "BENCH-STEP $k $total $cores $iter $sched $ph $rc"
    done
    detach "$tag"
    # A --features profile build prints its own timing as it exits (src/bpf/profile.bpf.h): onto
    # the bpfstats phase's output, beside the kernel's figures for the same run. The phase cleared
    # the trace buffer as it began, so the lines are this scheduler's.
    case " $BENCH_PHASES " in
    *" bpfstats "*)
        prof=$(sed -n 's/.*pandemonium profile: /profile /p' /sys/kernel/tracing/trace 2>/dev/null)
        if [ -n "$prof" ]; then
            echo "$prof" >> "$R/raw/$tag.bpfstats.out"
            save $k "raw/$tag.bpfstats.out"
        fi
        ;;
    esac
    # The scheduler's own log (bench-sys reads its telemetry) and a wedged one's kernel stack.
    save $k "raw/$tag.sched.log"
    save $k "raw/$tag.stack"
done
dmesg | grep -i -E 'sched_ext|scx|rcu.*stall|hung' | tail -50 > $R/dmesg.txt
echo "BENCH-DONE"
[ -z "$ABORT" ]
