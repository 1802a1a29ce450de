/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Maps, global state and the small accessors every other part of the scheduler uses.
 */
#ifndef __PANDEMONIUM_STATE_BPF_H
#define __PANDEMONIUM_STATE_BPF_H

#define MSEC_NS 1000000ULL
#define USEC_NS 1000ULL
/* A nice 0 task's weight: the unit of every weight here (weight.bpf.h). */
#define NICE_0_WEIGHT 1024

/* Written by the daemon before load (rodata): the machine as it was at start. */
const volatile u32 nr_cpu_ids_ro = 1;
const volatile u32 nr_nodes_ro = 1;
const volatile u16 cpu_node_ro[MAX_CPUS];
/* L2 domain id of each CPU (any id shared by exactly the CPUs of one L2). */
const volatile u16 cpu_l2_ro[MAX_CPUS];
/*
 * Hybrid machines only (big and little cores): each CPU's enum cpu_size. On a symmetric machine
 * hybrid_ro stays 0 and the verifier drops every size-aware branch as dead code.
 */
const volatile u8 hybrid_ro;
const volatile u8 cpu_size_ro[MAX_CPUS];
/*
 * -d/--debug: every wait from a DSQ insertion to running() longer than the overflow rescue age is
 * printed to the trace pipe, with the DSQ the task waited in and the dispatch step that ran it, so
 * a rare long wait names its own path. Off (0), the verifier drops every branch that reads it.
 */
const volatile u8 trace_slow_ro;
/*
 * --coop given (coop.bpf.h). Off (0), the verifier drops every branch that reads it, so the
 * programs verify and run as without the feature.
 */
const volatile u8 coop_on_ro;
/*
 * --coop-learn (coop_learn.bpf.h): count each process's mate wakeups, yields and crowded
 * enqueues, and give a learned name's process the treatment once it shows them. Implies
 * coop_on_ro. Off (0), the counting is dropped by the verifier.
 */
const volatile u8 coop_learn_ro;

/*
 * A u32-indexed array map, the kind the daemon reads and writes through the skeleton: one slot
 * for a single record (the PERCPU ones the daemon sums over CPUs), or one slot per CPU.
 */
#define U32_ARRAY_MAP(_name, _map_type, _value, _entries)	\
	struct {						\
		__uint(type, _map_type);			\
		__uint(max_entries, _entries);			\
		__type(key, u32);				\
		__type(value, _value);				\
	} _name SEC(".maps")

U32_ARRAY_MAP(knobs_map, BPF_MAP_TYPE_ARRAY, struct tuning_knobs, 1);
U32_ARRAY_MAP(topo_map, BPF_MAP_TYPE_ARRAY, struct topo_params, 1);
U32_ARRAY_MAP(stats_map, BPF_MAP_TYPE_PERCPU_ARRAY, struct pandemonium_stats, 1);
U32_ARRAY_MAP(hist_map, BPF_MAP_TYPE_PERCPU_ARRAY, struct pandemonium_hist, 1);
U32_ARRAY_MAP(longest_wait, BPF_MAP_TYPE_ARRAY, struct longest_wait, 1);
U32_ARRAY_MAP(affinity_rank, BPF_MAP_TYPE_ARRAY, struct affinity_row, MAX_CPUS);

/* comm -> 1: compositors, LAT_CRITICAL while they behave interactively. Filled by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct comm_key);
	__type(value, u8);
} compositor_map SEC(".maps");

/*
 * tgid -> 1: the processes of a game Steam launched, every thread LAT_CRITICAL. Filled by the
 * daemon in gaming mode alone (src/games/); empty otherwise.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_GAME_PROCS);
	__type(key, u32);
	__type(value, u8);
} game_tgids SEC(".maps");

/*
 * comm -> COOP_FORCED: --coop names; a process whose leader has one is a cooperative group
 * (coop.bpf.h). comm -> COOP_LEARNED: a name the procdb learned (--coop-learn); its process is a
 * group only once it shows the behaviour itself (coop_learn.bpf.h).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct comm_key);
	__type(value, u8);
} coop_comms SEC(".maps");

/* tgid -> its evidence (--coop-learn). LRU: a process that exits leaves its entry to age out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, struct coop_proc);
} coop_procs SEC(".maps");

struct task_ctx {
	u64 enqueue_at;    /* first DSQ insertion since it last ran, 0 once it runs (wait bound, latency) */
	u64 last_run_at;   /* start of the current run, for runtime accounting */
	u64 sleep_at;      /* when the task last went to sleep, 0 if it did not */
	u64 last_wake_at;  /* previous wakeup, for the wakeup frequency */
	u64 last_stop_at;  /* previous context switch out, for the switch rate */
	u64 waited_wake;   /* queue waits since last_wake_at: not the task's own rhythm */
	u64 waited_stop;   /* queue waits since last_stop_at: not the task's own rhythm */
	u64 awake_runtime; /* run time since the last wakeup: one burst */
	u64 avg_runtime;   /* EWMA of burst length */
	u64 runtime_dev;   /* EWMA of |burst - avg| */
	u64 flips_decay_at; /* when wakee_flips was last halved */
	u32 wake_freq;     /* EWMA, Hz */
	u32 csw_rate;      /* EWMA, Hz */
	u32 samples;       /* bursts recorded; below MATURE_SAMPLES the task is immature */
	u32 last_wakee;    /* pid this task woke last */
	u32 wakee_flips;   /* how often it woke a different task than the last, halved each second */
	s32 last_cpu;
	u8 tier;
	u8 flags;          /* enum task_flags */
	u8 sync_wake;      /* select_cpu saw a wakeup whose waker keeps running: enqueue reads it */
	u8 enq_tier;       /* trace_slow_ro only: the tier it was queued with */
	u8 cg_idle;        /* its cgroup (or an ancestor) has cpu.idle set */
	u8 wait_rescued;   /* the wait bound picked it: its next run is not cut short (dispatch.bpf.h) */
	u8 yielded;        /* sched_yield() gave its CPU up: not kept until it runs (yield.bpf.h) */
	u8 kin;            /* a link of a fork/exit chain, until it next sleeps (family.bpf.h) */
	u64 cgid;          /* its cgroup's id, 0 in the root cgroup */
	u64 cnt_cgid;      /* the group whose runnable_weight holds cnt_w */
	u64 cnt_w;         /* weight it added to that sum while runnable, 0 if none */
	u64 weight;        /* effective weight at the last charge (weight.bpf.h) */
	u64 bw_at;         /* when its CPU time was last charged to cpu.max (bandwidth.bpf.h) */
	u64 bw_until;      /* throttled: when its group's period ends */
	u64 bw_vtime;      /* throttled: the vtime it goes back to its overflow DSQ with */
	u64 enq_dsq;       /* trace_slow_ro only: the DSQ of the last insertion */
	u64 enq_flags;     /* trace_slow_ro only: that insertion's enqueue flags */
	u64 coop_slice;    /* --coop: the slice its current run started with (coop.bpf.h) */
	u64 family_vt;     /* the furthest vtime a child of it exited at (family.bpf.h) */
	u32 coop_mates;    /* --coop-learn: mate wakeups and yields since its last flush */
	u32 coop_crowd;    /* --coop-learn: enqueues that found no idle CPU since then */
	u32 coop_spins;    /* --coop-learn: runs that ended runnable, not yielding, since then */
	u32 coop_sleeps;   /* --coop-learn: sleeps since then */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctx_stor SEC(".maps");

struct cpu_ctx {
	/*
	 * What runs here and nobody has claimed yet (enum run_kind): a waking task that is not
	 * BATCH may take the CPU from a BATCH task, and from any other task whose deadline comes
	 * after the waker's. 32 bits because the claim is a compare-and-swap.
	 */
	u32 run_kind;
	u8 online;
	u8 owe_local;	 /* last dispatch served the overflow: the own DSQ goes first next time */
	u8 local_urgent; /* interactive work was queued locally behind a rescued BATCH task */
	u8 drain;	 /* went offline while running: its own DSQ may still hold tasks */
	u8 disp_step;	 /* trace_slow_ro only: the enum disp_step of this CPU's last dispatch */
	u64 run_deadline; /* dsq_vtime + slice of the task that started running here */
	u64 pcpu_since;   /* since when this CPU's own DSQ has held work (0: empty) */
	u64 wait_scan_at; /* last scan of its own DSQ for a task past the wait bound */
	u64 run_group;	  /* --coop: tgid + 1 of a group whose thread was cut short here, 0: none */
	s32 cut_pid;	  /* --coop: that thread */
	u64 coop_yield_to; /* --coop: a group whose runner here yielded to a queued mate */
} __attribute__((aligned(64)));

enum run_kind {
	RUN_NONE,  /* idle, or the runner was claimed already */
	RUN_BATCH,
	RUN_OTHER,
};

/* Indexed by CPU id masked to MAX_CPUS, so the verifier sees a bounded offset. */
struct cpu_ctx cpu_ctxs[MAX_CPUS];

/* The most advanced vtime of any task that started running: the "now" of the virtual clock. */
u64 vtime_now;

/*
 * CPUs that went offline after load, whose per-CPU DSQ may still hold tasks; dispatch drains them.
 * CPUs that were never online (possible but absent, common on laptops and VMs) are not counted:
 * nothing was ever queued there, and counting them made every dispatch scan all of them.
 */
u32 nr_offline_cpus;

/*
 * A CPU whose own DSQ has not been served for STRANDED_NS (stranded_scan()), or -1: the next
 * dispatch on any CPU moves that DSQ's tasks to the CPU's local DSQ (rescue_stranded()).
 * strand_scan_at: when a tick last scanned.
 */
s32 stranded_cpu = -1;
u64 strand_scan_at;

/*
 * First-insertion timestamps of the shared overflow DSQs, one per node and kind, maintained with
 * CAS so racing CPUs neither lose an age nor reset a fresh one. 0 = empty.
 */
u64 node_dsq_since[MAX_NODES];
u64 batch_dsq_since[MAX_NODES];

/*
 * Per node, the furthest vtime a BATCH task started its turn at (batch_started()): how far the
 * BATCH work has been served. Unlike vtime_now, which whatever runs drags along, only BATCH
 * turns move it, so the interactive tiers can be measured against it (outran_share()).
 */
u64 batch_clock[MAX_NODES];

/*
 * The knobs every decision reads: a clamped copy of knobs_map, refreshed from the map by the tick
 * (refresh_knobs()). A global, not the map: no lookup on the hot paths, and no value the daemon
 * (or anyone with the map's fd) writes is ever read unclamped.
 */
struct tuning_knobs knobs_cur;
u64 knobs_at;

static __always_inline struct tuning_knobs *knobs(void)
{
	return &knobs_cur;
}

static __always_inline u64 clamp_u64(u64 v, u64 lo, u64 hi)
{
	return v < lo ? lo : (v > hi ? hi : v);
}

/* The daemon writes knobs once a second at most; a tick picks a write up within this. */
#define KNOB_REFRESH_NS (10 * MSEC_NS)

/*
 * knobs_map -> knobs_cur, each field clamped to enum knob_limits and the cross-knob invariants the
 * decisions rely on restored (the longrun slice no longer than the slice, the INTERACTIVE score
 * band not empty). Racing readers see each field old or new, never out of range.
 */
static __always_inline void refresh_knobs(u64 now)
{
	struct tuning_knobs *k = &knobs_cur, *m;
	u32 zero = 0;
	u64 v;

	knobs_at = now;
	m = bpf_map_lookup_elem(&knobs_map, &zero);
	if (!m)
		return;
	k->slice_ns = clamp_u64(m->slice_ns, KNOB_SLICE_MIN_NS, KNOB_SLICE_MAX_NS);
	k->preempt_thresh_ns = clamp_u64(m->preempt_thresh_ns, KNOB_PREEMPT_MIN_NS,
					 KNOB_PREEMPT_MAX_NS);
	k->lag_scale = clamp_u64(m->lag_scale, KNOB_LAG_SCALE_MIN, KNOB_LAG_SCALE_MAX);
	k->batch_slice_ns = clamp_u64(m->batch_slice_ns, KNOB_BATCH_SLICE_MIN_NS,
				      KNOB_BATCH_SLICE_MAX_NS);
	v = clamp_u64(m->burst_slice_ns, KNOB_BURST_SLICE_MIN_NS, KNOB_BURST_SLICE_MAX_NS);
	k->burst_slice_ns = v < k->slice_ns ? v : k->slice_ns;
	k->lat_cri_thresh_high = clamp_u64(m->lat_cri_thresh_high, KNOB_LAT_CRI_HIGH_MIN,
					   KNOB_LAT_CRI_HIGH_MAX);
	v = clamp_u64(m->lat_cri_thresh_low, KNOB_LAT_CRI_LOW_MIN, KNOB_LAT_CRI_LOW_MAX);
	k->lat_cri_thresh_low = v < k->lat_cri_thresh_high ? v : k->lat_cri_thresh_high - 1;
	k->affinity_mode = m->affinity_mode <= AFFINITY_STRONG ? m->affinity_mode : AFFINITY_WEAK;
	k->pack = m->pack ? 1 : 0;
}

static __always_inline struct topo_params *topo(void)
{
	u32 zero = 0;
	return bpf_map_lookup_elem(&topo_map, &zero);
}

static __always_inline struct pandemonium_stats *stats(void)
{
	u32 zero = 0;
	return bpf_map_lookup_elem(&stats_map, &zero);
}

#define STAT_INC(field)                                   \
	do {                                              \
		struct pandemonium_stats *__s = stats();  \
		if (__s)                                  \
			__s->field++;                     \
	} while (0)

static __always_inline struct task_ctx *task_ctx(const struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctx_stor, (struct task_struct *)p, 0, 0);
}

static __always_inline struct cpu_ctx *cpu_ctx(s32 cpu)
{
	return &cpu_ctxs[cpu & (MAX_CPUS - 1)];
}

static __always_inline bool cpu_is_online(s32 cpu)
{
	return cpu >= 0 && (u32)cpu < nr_cpu_ids_ro && cpu_ctx(cpu)->online;
}

/*
 * scx_bpf_kick_cpu() bounces through an irq_work queued on the CPU we run on. A CPU past
 * ops.cpu_offline may lose the self-IPI that runs it; the work then stays on that CPU's list
 * after it comes back, and every later irq_work queued there (including RCU Tasks' wakeup of
 * its grace-period kthread) waits forever. Such a CPU no longer kicks: the tasks it places are
 * found by the dispatch steps of the CPUs that stay.
 */
static __always_inline void kick_cpu(s32 cpu, u64 flags)
{
	if (!cpu_ctx(bpf_get_smp_processor_id())->online || !cpu_is_online(cpu))
		return;
	scx_bpf_kick_cpu(cpu, flags);
}

static __always_inline u32 cpu_node(s32 cpu)
{
	u32 node = cpu_node_ro[cpu & (MAX_CPUS - 1)];
	return node < MAX_NODES ? node : 0;
}

static __always_inline u8 cpu_size(s32 cpu)
{
	return cpu_size_ro[cpu & (MAX_CPUS - 1)];
}

static __always_inline bool same_l2(s32 a, s32 b)
{
	return cpu_l2_ro[a & (MAX_CPUS - 1)] == cpu_l2_ro[b & (MAX_CPUS - 1)];
}

static __always_inline u64 node_dsq(u32 node)
{
	return NODE_DSQ_BASE + node;
}

static __always_inline u64 batch_dsq(u32 node)
{
	return BATCH_DSQ_BASE + node;
}

/* share_batch_slice(): a batch slice is shared down to this fraction of it. */
#define BATCH_SHARE_MIN_DIV 8

/* The slice a BATCH task runs while @waiting (> 0) others wait in its node's batch DSQ. */
static __always_inline u64 shared_batch_slice(const struct tuning_knobs *k, u32 waiting)
{
	u64 s = k->batch_slice_ns / (waiting + 1), floor = k->batch_slice_ns / BATCH_SHARE_MIN_DIV;

	return s > floor ? s : floor;
}

static __always_inline u64 coop_dsq(u32 node)
{
	return COOP_DSQ_BASE + node;
}

/* Bucket counts are powers of two, so the final mask is both the clamp and the verifier's bound. */
static __always_inline u32 log2_bucket(u64 v, u32 nr_buckets)
{
	u32 b = v ? 63 - __builtin_clzll(v) : 0;

	if (b >= nr_buckets)
		b = nr_buckets - 1;
	return b & (nr_buckets - 1);
}

static __always_inline u32 tier_idx(u8 tier)
{
	return tier < NR_TIERS ? tier : TIER_INTERACTIVE;
}

#endif /* __PANDEMONIUM_STATE_BPF_H */
