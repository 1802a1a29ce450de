/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Shared between the BPF scheduler and the Rust daemon: build.rs has bindgen generate the Rust side
 * from this file (src/bpf_intf.rs includes it), so there is nothing to keep in step by hand. The
 * structs are plain data with no implicit padding (name any pad, as task_class_entry does): Rust
 * copies them byte for byte in and out of maps (bytemuck::Pod).
 */
#ifndef __PANDEMONIUM_INTF_H
#define __PANDEMONIUM_INTF_H

#ifndef __VMLINUX_H__
/* bindgen and other userspace readers do not have vmlinux.h's fixed-width names. */
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long s64;
#endif

enum pandemonium_consts {
	MAX_CPUS = 1024,
	/* One eighth of MAX_CPUS keeps the per-CPU rank rows verifier-bounded at 128 slots. */
	MAX_AFFINITY_CANDIDATES = MAX_CPUS >> 3,
	MAX_NODES = 64,
	/* TASK_COMM_LEN: compositor and procdb keys are kernel comm names. */
	COMM_LEN = 16,
	/* Processes of the foreground game the daemon boosts at once (gaming mode, src/games/). */
	MAX_GAME_PROCS = 1024,
	NR_LAT_BUCKETS = 32,
	NR_SLEEP_BUCKETS = 32,
	AFFINITY_SENTINEL = 0xffffffffu,
};

/*
 * The CoDel target oscillator's fixed constants (codel.bpf.h). src/codel.rs replays the same step
 * in Rust with these values, so a change here is a change to the tested dynamics too.
 */
enum codel_consts {
	CODEL_MAX_IMPULSES = 16, /* rescues counted per step; a burst beyond this kicks no harder */
	CODEL_KICK_SHIFT = 3,	 /* one rescue kicks the velocity by c_eq >> 3 */
	CODEL_VCAP_SHIFT = 2,	 /* |velocity| <= (max - floor) >> 2 per tick */
};

/* User DSQ ids. Per-CPU DSQs use the CPU id itself (0 .. MAX_CPUS-1). */
enum pandemonium_dsq {
	NODE_DSQ_BASE = 1u << 16,  /* + node: INTERACTIVE / LAT_CRITICAL overflow, vtime-ordered */
	BATCH_DSQ_BASE = 1u << 17, /* + node: BATCH and immature overflow, vtime-ordered */
	BW_THROTTLED_DSQ = 1u << 18, /* tasks of cgroups over their cpu.max quota, FIFO */
	COOP_DSQ_BASE = 1u << 19,  /* + node: --coop groups' tasks, FIFO (coop.bpf.h) */
};

/*
 * --coop (coop.bpf.h): the time a cooperative group holds its node's CPUs before the next group
 * queued there gets them. USF / SCHED_COOP's per-process quantum; below every starvation rescue
 * age (20 ms at least, src/topology/params.rs), so a rotation never looks like a stall.
 */
enum coop_consts {
	COOP_QUANTUM_NS = 20000000,
	/* coop_comms values: a --coop name, and a name the procdb learned (src/coop_learn.rs). */
	COOP_FORCED = 1,
	COOP_LEARNED = 2,
	/* A thread's mate events between two writes into its process's struct coop_proc. */
	COOP_FLUSH = 16,
	/*
	 * A learned name's process gets the treatment once its own threads showed this many mate
	 * events (two flushes: one is any thread's startup) while one of them found no idle CPU.
	 */
	COOP_PROOF = 32,
	/*
	 * Co-running, the evidence of a team whose waits spin (OMP_WAIT_POLICY=active): a BATCH
	 * thread's runs that ended still runnable (its CPU went to another task) are counted, and
	 * added into its process's entry every COOP_SPIN_FLUSH of them. The process earns the
	 * treatment by COOP_PROOF such runs, COOP_PROOF_SPINNERS flushes that came from another
	 * thread than the one before (two or more threads were cut short, none of them sleeping:
	 * they were runnable at once), and at most one sleep per COOP_SLEEP_RATIO of those runs.
	 */
	COOP_SPIN_FLUSH = 8,
	COOP_PROOF_SPINNERS = 4,
	COOP_SLEEP_RATIO = 4,
};

/*
 * --coop-learn: one process's evidence of cooperation (coop_procs, keyed by tgid), written by its
 * threads every COOP_FLUSH mate events (coop_learn.bpf.h). The daemon reads the counters once a
 * second (src/coop_learn.rs) and deletes an entry to withdraw the treatment.
 */
struct coop_proc {
	u64 mates;   /* wakeups of a thread by a thread of the same process, and sched_yield()s */
	u64 crowded; /* enqueues of its threads that found no idle CPU */
	u64 spins;   /* its BATCH threads' runs that ended still runnable, without a yield */
	u64 sleeps;  /* the sleeps of those threads, added with their spins */
	u32 granted; /* BPF set it: a learned name that showed its behaviour; its threads are TF_COOP */
	u32 spinners; /* flushes of spins by another thread than the previous one */
	u32 last_spinner; /* the thread whose spins were added last */
	u32 _pad0;
};

enum pandemonium_tier {
	TIER_BATCH = 0,
	TIER_INTERACTIVE = 1,
	TIER_LAT_CRITICAL = 2,
	NR_TIERS = 3,
};

/* A CPU's size on a hybrid machine (rodata cpu_size_ro); every CPU is BIG on a symmetric one. */
enum cpu_size {
	CPU_SIZE_BIG = 0,
	CPU_SIZE_MID = 1,
	CPU_SIZE_LITTLE = 2,
};

enum affinity_mode {
	AFFINITY_OFF = 0,
	AFFINITY_WEAK = 1,
	AFFINITY_STRONG = 2,
};

/*
 * The range BPF accepts of each knob, also the widest rails the daemon writes within
 * (src/tuning/rails.rs says why each bound is where it is). BPF clamps whatever is in the map to
 * these before a decision reads it, so a bad write (a slice of 0 or SCX_SLICE_INF, a threshold of
 * 0 or U64_MAX) cannot become a stall.
 */
enum knob_limits {
	KNOB_SLICE_MIN_NS = 250000,
	KNOB_SLICE_MAX_NS = 8000000,
	KNOB_PREEMPT_MIN_NS = 100000,
	KNOB_PREEMPT_MAX_NS = 8000000,
	KNOB_LAG_SCALE_MIN = 1,
	KNOB_LAG_SCALE_MAX = 16,
	KNOB_BATCH_SLICE_MIN_NS = 2000000,
	KNOB_BATCH_SLICE_MAX_NS = 80000000,
	KNOB_BURST_SLICE_MIN_NS = 100000,
	KNOB_BURST_SLICE_MAX_NS = 4000000,
	KNOB_LAT_CRI_HIGH_MIN = 8,
	KNOB_LAT_CRI_HIGH_MAX = 256,
	KNOB_LAT_CRI_LOW_MIN = 1,
	KNOB_LAT_CRI_LOW_MAX = 64,
};

/*
 * Knobs BPF reads on every decision (one-entry array map): each field's one home. Writers: the
 * adaptive loop (src/adaptive.rs, from src/tuning/: regime baselines, experts, inside the mode's
 * rails) writes them whole every second; with --no-adaptive, the mode's values
 * (src/tuning/mode.rs) once at start and at a power-profile switch. Defaults:
 * TuningKnobs::defaults() (src/bpf_intf.rs). Range: enum knob_limits, clamped by BPF
 * (refresh_knobs()). The stats' knob_* fields print them. What topology derives is struct
 * topo_params.
 */
struct tuning_knobs {
	/* Slice cap of INTERACTIVE and LAT_CRITICAL tasks, which run 2x / 1.5x their average
	 * burst up to it (task_slice()); ns, KNOB_SLICE_*. */
	u64 slice_ns;
	/* How long interactive work may wait before a BATCH runner yields to it (preempt.bpf.h),
	 * and the slice a BATCH task starts with while such work waits; ns, KNOB_PREEMPT_*. */
	u64 preempt_thresh_ns;
	/* Multiple of topo_params.lag_cap_ns a waking task may bank as vtime credit
	 * (task_vtime()): larger favours sleepers more; a count, KNOB_LAG_SCALE_*. */
	u64 lag_scale;
	/* A nice 0 BATCH task's slice, shrunk by weight for lighter ones (task_slice()); ns,
	 * KNOB_BATCH_SLICE_*. */
	u64 batch_slice_ns;
	/* The interactive slice cap in place of slice_ns while longrun_mode is set; ns,
	 * KNOB_BURST_SLICE_*. */
	u64 burst_slice_ns;
	/* Behaviour score (classify.bpf.h: wake rate x switch rate / runtime) from which a task
	 * is LAT_CRITICAL; KNOB_LAT_CRI_HIGH_*. */
	u64 lat_cri_thresh_high;
	/* Score from which a task is INTERACTIVE rather than BATCH; kept below the high
	 * threshold by BPF; KNOB_LAT_CRI_LOW_*. */
	u64 lat_cri_thresh_low;
	/* enum affinity_mode: how strongly a wakeup stays on its L2 domain (placement.bpf.h);
	 * anything past AFFINITY_STRONG reads as AFFINITY_WEAK. */
	u64 affinity_mode;
	/*
	 * powersave's packing (pack_on_busy()), 0 or 1. A knob, not rodata, because --autopower
	 * switches between auto and powersave while the program runs.
	 */
	u64 pack;
};

/*
 * Parameters derived from the topology's mixing time tau (src/topology/params.rs: each one's
 * ratio to tau and its clamp, the why beside them), written by the daemon before attach and
 * after a hotplug; the knob writes never touch them. The startup log prints them.
 */
struct topo_params {
	/* CoDel's interval: a batch DSQ's head must wait this long to count as a stall; ns. */
	u64 sojourn_interval_ns;
	/* Age at which a dispatch serves its node's overflow DSQ head before its own DSQ
	 * (DISP_OVERFLOW_RESCUE); ns. */
	u64 overflow_rescue_ns;
	/* Age at which it does so before anything but the wait bound, keep_prev included
	 * (DISP_STARVATION_RESCUE); ns. */
	u64 starvation_rescue_ns;
	/* CoDel's stall target moves between these (codel.bpf.h); ns. */
	u64 codel_target_floor_ns;
	u64 codel_target_max_ns;
	/* Where CoDel's target rests without stalls; ns, 0: the middle of [floor, max]. */
	u64 codel_eq_ns;
	/* How far ahead of the clock a task's vtime may be queued, in nice 0 units
	 * (task_vtime()); ns of vtime. */
	u64 vtime_ceiling_ns;
	/* How far behind the clock a queued task's vtime may be (the credit a sleeper banks is
	 * this times lag_scale), and how far ahead an interactive task may run before it queues
	 * as BATCH (outran_share()); ns of vtime. */
	u64 lag_cap_ns;
	/* How long the batch DSQ must stay non-empty before longrun_mode is set; ns. */
	u64 longrun_thresh_ns;
	/* CPUs a placement may try along the affinity rank: for a queue slot or a runner to
	 * preempt (spill), and for an idle CPU near the waker (affinity). */
	u32 spill_search_budget;
	u32 affinity_search_budget;
	/* Tasks a CPU's own DSQ holds before placement spills to the node's (1 or 2). */
	u32 pcpu_dsq_depth;
	/* preempt_thresh_ns is shifted left by this while longrun_mode is set (batch work then
	 * keeps its CPU longer). */
	u32 longrun_preempt_shift;
	/* CoDel target oscillator's damping and spring, as shifts (codel.bpf.h). */
	u32 damping_shift;
	u32 spring_shift;
	u32 wake_wide_factor; /* CPUs of the largest LLC: the kernel's wake_wide() factor */
	u32 _pad0;	      /* 9 u64 + 7 u32: named, so equality and Pod see no hidden bytes */
};

/* Per-CPU counters (per-CPU array map, one entry); Rust sums across CPUs and diffs per second. */
struct pandemonium_stats {
	u64 nr_dispatches;
	u64 nr_idle_hits;
	u64 nr_shared;
	u64 nr_pcpu;
	u64 nr_spills;
	u64 nr_packed;
	u64 nr_preempt;
	u64 nr_keep_running;
	u64 nr_hard_kicks;
	u64 nr_soft_kicks;
	u64 nr_enq_wakeup;
	u64 nr_enq_requeue;
	u64 nr_steals;
	u64 nr_overflow_rescue;
	u64 nr_starvation_rescue;
	u64 nr_wait_rescue;
	u64 nr_bw_throttled;
	u64 nr_offline_drain;
	u64 nr_rank_offline_skips;
	u64 nr_pinned;
	u64 nr_offline_placements;
	u64 nr_offline_keeps;
	u64 nr_offline_kicks;
	u64 nr_stranded_rescues;
	u64 nr_yield_kept;
	u64 nr_yield_handoffs;
	u64 nr_coop_dispatches;
	u64 nr_coop_rotations;
	u64 nr_coop_fillers;
	u64 nr_coop_yield_handoffs;
	u64 nr_coop_mate_preempts;
	u64 nr_coop_grants; /* --coop-learn: processes of a learned name given the treatment */
	u64 l2_hit[NR_TIERS];
	u64 l2_miss[NR_TIERS];
	u64 wake_lat_sum_ns;
	u64 wake_lat_cnt;
	u64 wake_lat_max_ns;
};

/*
 * The longest queue wait since load and whose it was (one entry): the wait bound's witness, which
 * the per-CPU maximum alone cannot name. Written only when a wait beats it.
 */
struct longest_wait {
	u64 ns;
	u64 cgid;	   /* the group it was charged in (an autogroup's key has bit 63 set) */
	u64 weight;	   /* the weight its vtime was charged by, NICE_0_WEIGHT a nice 0 task */
	u32 pid;
	u8 tier;
	u8 policy;	   /* SCHED_NORMAL 0, SCHED_BATCH 3, SCHED_IDLE 5 */
	u8 rescued;	   /* the wait bound's scan ran it */
	u8 _pad0;
	u8 comm[COMM_LEN];
};

/* Per-CPU log2 histograms (bucket i holds values in [2^i, 2^(i+1)) ns); Rust drains them. */
struct pandemonium_hist {
	u64 wake_lat[NR_TIERS][NR_LAT_BUCKETS];
	u64 sleep[NR_SLEEP_BUCKETS];
};

/* One row of the affinity rank map: other CPUs by ascending effective resistance. */
struct affinity_row {
	u32 cpus[MAX_AFFINITY_CANDIDATES];
};

/* Key and value of the task-class maps (compositor boost, procdb observations and predictions). */
struct comm_key {
	u8 comm[COMM_LEN]; /* u8: bindgen maps char to c_char, signed on x86; comm is bytes */
};

struct task_class_entry {
	u8 tier;
	u8 confident;
	u16 _pad0;
	u32 samples;
	u64 avg_runtime_ns;
};

/*
 * An autogroup's pseudo-group in cg_ctxs is keyed 1 << AUTOGROUP_KEY_SHIFT | its id
 * (autogroup.bpf.h): no kernfs inode number has the top bit set.
 */
enum autogroup_consts {
	AUTOGROUP_KEY_SHIFT = 63,
};

/*
 * One cgroup's state (cg_ctxs hash map, keyed by the cgroup id, its kernfs inode number, or an
 * autogroup's key; the root cgroup has none): cgroup.bpf.h keeps the weights, bandwidth.bpf.h the cpu.max quota and
 * runtime_ns, which the daemon reads for the per-group CPU share in its statistics.
 */
struct cg_ctx {
	u64 id;
	u64 parent_id;	     /* 0 for a top-level group */
	u64 runnable_weight; /* task weights of this group's runnable tasks */
	u64 child_weight;    /* cpu.weight of this group's active children */
	u64 active_weight;   /* what this group added to its parent's child_weight */
	u64 active;
	u64 share;	     /* flattened weight in NICE_0_WEIGHT units; 0: not computed yet */
	u64 share_at;
	u64 runtime_ns;	     /* CPU time of its own tasks (not its children's), ns */
	u64 bw_quota_ns;     /* cpu.max quota per period, 0: unlimited (bandwidth.bpf.h) */
	u64 bw_period_ns;
	u64 bw_period_at;    /* start of the current period */
	u64 bw_used;	     /* CPU time charged in it, overrun of earlier periods included */
	u64 throttled;
	/*
	 * The group's virtual clock, ns of vtime: its tasks' runs charged at the group's share,
	 * kept no further than a lag cap behind vtime_now. A new task of the group starts at it.
	 */
	u64 vtime;
	u32 weight;	     /* cpu.weight, 1..10000 */
	u32 level;
	u32 idle;	     /* cpu.idle: its tasks are treated as SCHED_IDLE */
	u32 idle_eff;	     /* it or an ancestor is idle (updated with the share) */
};

#endif /* __PANDEMONIUM_INTF_H */
