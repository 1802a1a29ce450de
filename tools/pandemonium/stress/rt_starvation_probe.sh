#!/bin/sh
# Guest script: CPU time a SCHED_OTHER task pinned beside a SCHED_FIFO hog gets under EEVDF, then
# under scx_pandemonium. Shows whether the kernel serves ext tasks under RT load (its sched_ext
# deadline server, 6.19+) or not (6.18: the ext task starves and the kernel ejects the scheduler).
# usage: ./pandemonium.py vm --cpus 2 [--kernel latest] --tool chrt \
#            --add tools/pandemonium/stress/rt_starvation_probe.sh -- /usr/local/bin/rt_starvation_probe.sh
echo "rt_runtime_us $(cat /proc/sys/kernel/sched_rt_runtime_us) rt_period_us $(cat /proc/sys/kernel/sched_rt_period_us)"
mount -t debugfs none /sys/kernel/debug 2>/dev/null
echo "debugfs sched: $(ls /sys/kernel/debug/sched/ | tr '\n' ' ')"
last=$(($(nproc)-1))
cput() { cut -d' ' -f14,15 /proc/$1/stat | awk '{print $1+$2}'; }
probe() {
  taskset -c $last sh -c 'while :; do :; done' &
  C=$!
  sleep 1
  taskset -c $last chrt -f 50 sh -c 'while :; do :; done' &
  H=$!
  sleep 1; a=$(cput $C); sleep 8; b=$(cput $C)
  echo "$1: SCHED_OTHER task on cpu$last beside a FIFO hog got $((b-a)) ticks (10 ms) of CPU in 8 s"
  kill $H $C; wait $H $C 2>/dev/null
}
probe EEVDF
scx_pandemonium > /tmp/sched.log 2>&1 &
P=$!
i=0; while [ "$(cat /sys/kernel/sched_ext/state)" != enabled ] && [ $i -lt 300 ]; do sleep 1; i=$((i+1)); done
probe pandemonium
echo "sched_ext state $(cat /sys/kernel/sched_ext/state)"
kill -INT $P; wait $P; echo "sched rc $?"; tail -3 /tmp/sched.log
dmesg | grep -i "sched_ext\|stall" | tail -5
