#!/bin/sh
# The benchmarks' build-shaped load, sourced by every guest driver that runs one (busybox sh):
#   bench-stress's build workload (../stress/driver.sh wl_build) and through it bench-soak's build
#   phase (../soak/soak.sh ph_build); the bench admin phase's weighted build and the bench
#   frames and audio phases (../bench/guest/driver.sh).
# The guest has no compiler: a "compile" step is busybox gzip piped into sha256sum over a small
# generated source, two short processes a step, and the "link" hashes every object. Defines
# functions only; the host adds it to the guest as /usr/local/bin/build-load.sh.

# build_tree DIR STEPS: DIR/s/f1.c .. fSTEPS.c (seq output, longer with the index), DIR/o, and
# a Makefile whose `all` compiles each source to o/ and links the objects into prog.
build_tree() {
    rm -rf "$1"
    mkdir -p "$1/s" "$1/o"
    for i in $(seq "$2"); do seq $((i * 7)) > "$1/s/f$i.c"; done
    {
        printf 'SRC := $(wildcard s/*.c)\nOBJ := $(SRC:s/%%.c=o/%%.o)\n'
        printf 'all: prog\nprog: $(OBJ)\n\tcat $^ | sha256sum > $@\n'
        printf 'o/%%.o: s/%%.c\n\tgzip -c $< | sha256sum > $@\n'
        printf 'clean:\n\trm -f o/*.o prog\n'
    } > "$1/Makefile"
}

# build_once DIR JOBS: one clean build of DIR's tree with make -jJOBS.
build_once() { make -C "$1" -s clean && make -C "$1" -s -j"$2" all; }

# build_load_start CPUS: bench-soak's build phase as one background load: builds of
# BUILD_LOAD_STEPS (60, ~11 s at 2 vCPUs under TCG) steps with make -j(2 x CPUS), one after
# another, beside CPUS fork/exec loops of `true`. All in one session of their own (setsid), so
# build_load_stop ends every process of it, make's children included. Counters under
# BUILD_LOAD_DIR: a line per finished build, a line per 100 execs of `true`.
build_load_start() {
    BUILD_LOAD_DIR=${BUILD_LOAD_DIR:-/tmp/build-load}
    build_tree "$BUILD_LOAD_DIR/tree" "${BUILD_LOAD_STEPS:-60}"
    : > "$BUILD_LOAD_DIR/builds"
    : > "$BUILD_LOAD_DIR/execs"
    rm -f "$BUILD_LOAD_DIR/pgid"
    # The session's leader writes its own pid: the group to signal, whether or not setsid had
    # to fork to lead it.
    setsid sh -c '
        echo $$ > "$0/pgid"
        while :; do
            make -C "$0/tree" -s clean && make -C "$0/tree" -s -j"$1" all && echo >> "$0/builds"
        done > /dev/null 2>&1 &
        n=$2
        while [ "$n" -gt 0 ]; do
            (i=0; while :; do
                /bin/busybox true; i=$((i + 1)); [ $((i % 100)) -ne 0 ] || echo >> "$0/execs"
            done) &
            n=$((n - 1))
        done
        wait' "$BUILD_LOAD_DIR" $((2 * $1)) "$1" &
    BUILD_LOAD_PID=$!
    t=0
    while [ ! -s "$BUILD_LOAD_DIR/pgid" ] && [ $t -lt 100 ]; do sleep 0.1; t=$((t + 1)); done
}

# build_load_stop: SIGTERM to the load's session, then one line of what it got done:
#   build-load builds=B objects=O steps=S execs=E
# (O: objects of the build in progress; S = B x steps + O, the compile steps run).
build_load_stop() {
    [ -n "$BUILD_LOAD_PID" ] || return 0
    pg=$(cat "$BUILD_LOAD_DIR/pgid" 2>/dev/null)
    [ -n "$pg" ] && kill -TERM -"$pg" 2>/dev/null
    wait "$BUILD_LOAD_PID" 2>/dev/null
    b=$(wc -l < "$BUILD_LOAD_DIR/builds" | tr -d ' ')
    o=$(ls "$BUILD_LOAD_DIR/tree/o" 2>/dev/null | wc -l | tr -d ' ')
    e=$(wc -l < "$BUILD_LOAD_DIR/execs" | tr -d ' ')
    echo "build-load builds=$b objects=$o steps=$((b * ${BUILD_LOAD_STEPS:-60} + o))" \
        "execs=$((e * 100))"
    BUILD_LOAD_PID=
    rm -rf "$BUILD_LOAD_DIR"
}
