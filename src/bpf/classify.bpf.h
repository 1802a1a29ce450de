/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Behavioral classification. Integer math only: every average is an EWMA by shifts, every rate
 * is a wakeup or switch frequency in Hz, and the score divides by runtime in ~1 ms units so a
 * task that runs 50 us and one that runs 900 us are both "short".
 */
#ifndef __PANDEMONIUM_CLASSIFY_BPF_H
#define __PANDEMONIUM_CLASSIFY_BPF_H

#define NSEC_PER_SEC 1000000000ULL
#define EWMA_SHIFT 3			/* new sample weighs 1/8 */
#define MAX_FREQ_HZ 100000		/* caps a burst of back-to-back events */
#define MAX_AWAKE_RUN_NS NSEC_PER_SEC	/* keeps products far from u64 overflow */
#define MATURE_SAMPLES 8
#define PUBLISH_EVERY 16		/* samples between task_profiles updates */
/*
 * A burst-sized slice still has to outlast a tick's interrupt and softirq inside the burst. At
 * 50 us a pipe pair on one CPU (bursts of 20-30 us) lost the CPU on one tick in three, and the
 * preempted side went to the idle CPU and back, a migration per round trip. Work that waits
 * behind such a task preempts it anyway (claim_runner()).
 */
#define MIN_SLICE_NS (250 * USEC_NS)
#define RT_UNIT_SHIFT 20		/* runtime unit for the score: 2^20 ns ~ 1.05 ms */
#define HIPRIO_KTHREAD_PRIO 110		/* static_prio of nice -10 */

/* Why a task is pinned to a tier regardless of its score. */
enum task_flags {
	TF_COMPOSITOR = 1 << 0,
	TF_KWORKER = 1 << 1,
	TF_HIPRIO_KTHREAD = 1 << 2,
	TF_GAME = 1 << 3,
	TF_COOP = 1 << 4, /* a thread of a --coop process (coop.bpf.h) */
};

/* comm -> mature profile; the daemon reads it (procdb) and so does the gate's classify layer. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct comm_key);
	__type(value, struct task_class_entry);
} task_profiles SEC(".maps");

/* comm -> confident class learned by the daemon (procdb): new tasks start from it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct comm_key);
	__type(value, struct task_class_entry);
} procdb_warm SEC(".maps");

/* Set while a LAT_CRITICAL task waits in a shared DSQ: tick() preempts BATCH 4x sooner. */
u32 latcrit_waiting;

/*
 * Set while the batch DSQ has stayed non-empty past longrun_thresh_ns: sustained CPU-bound work.
 * Interactive slices then use burst_slice_ns; the daemon reads it (affinity weak, base batch).
 */
u32 longrun_mode;

static __always_inline u64 ewma(u64 avg, u64 sample)
{
	return avg - (avg >> EWMA_SHIFT) + (sample >> EWMA_SHIFT);
}

/*
 * A rate's EWMA starts at its first observation (0 means none yet). From 0 a rate read 1/8 of
 * itself after one sample and under half after five, so the score (a product of two rates) read
 * 1/64 of the task's rhythm at first: a periodic probe whose start ended in one long sleep scored
 * BATCH on its first burst, and its next wakeup waited in the batch DSQ behind busy loops.
 */
static __always_inline u32 rate_ewma(u32 avg, u32 sample)
{
	return avg ? ewma(avg, sample) : sample;
}

static __always_inline u64 freq_of(u64 interval_ns)
{
	u64 f = NSEC_PER_SEC / (interval_ns > 1000 ? interval_ns : 1000);

	return f < MAX_FREQ_HZ ? f : MAX_FREQ_HZ;
}

static __always_inline bool task_mature(const struct task_ctx *tctx)
{
	return tctx->samples >= MATURE_SAMPLES;
}

/* An INTERACTIVE task whose bursts outgrow 4 slices is CPU-bound, whatever its wake rate. */
static __always_inline u64 cpu_bound_thresh_ns(const struct tuning_knobs *k)
{
	return k->slice_ns << 2;
}

static __always_inline void read_comm(const struct task_struct *p, struct comm_key *key)
{
	__builtin_memset(key, 0, sizeof(*key));
	bpf_probe_read_kernel_str(key->comm, sizeof(key->comm), p->comm);
}

/* The comm of @p's process leader, where --coop and the procdb name a program. */
static __always_inline void leader_comm(const struct task_struct *p, struct comm_key *key)
{
	__builtin_memset(key, 0, sizeof(*key));
	bpf_probe_read_kernel_str(key->comm, sizeof(key->comm), p->group_leader->comm);
}

/* --coop-learn: @p's process proved itself (coop_learn.bpf.h). */
static __always_inline bool coop_granted(const struct task_struct *p)
{
	u32 tgid = p->tgid;
	struct coop_proc *e = bpf_map_lookup_elem(&coop_procs, &tgid);

	return e && e->granted;
}

/* Flags that do not depend on behavior. comm changes on exec, so callers re-check now and then. */
static __always_inline void refresh_identity(const struct task_struct *p, struct task_ctx *tctx)
{
	struct comm_key key;
	u32 tgid;
	u8 flags = 0;

	if (p->flags & PF_WQ_WORKER)
		flags |= TF_KWORKER;
	else if ((p->flags & PF_KTHREAD) && p->static_prio <= HIPRIO_KTHREAD_PRIO)
		flags |= TF_HIPRIO_KTHREAD;
	read_comm(p, &key);
	if (bpf_map_lookup_elem(&compositor_map, &key))
		flags |= TF_COMPOSITOR;
	/* By process, not comm: a game's threads have generic names (RenderThread, vkd3d_queue). */
	tgid = p->tgid;
	if (bpf_map_lookup_elem(&game_tgids, &tgid))
		flags |= TF_GAME;
	/*
	 * By the process's name: libgomp and BLAS pools name their threads after the program, but
	 * a runtime may rename its workers (pthread_setname_np), and the group is the process.
	 */
	if (coop_on_ro) {
		u8 *v;

		leader_comm(p, &key);
		v = bpf_map_lookup_elem(&coop_comms, &key);
		/* A learned name is no group until its process shows it (coop_learn.bpf.h). */
		if (v && (*v == COOP_FORCED || (coop_learn_ro && coop_granted(p))))
			flags |= TF_COOP;
	}
	tctx->flags = flags;
}

static __always_inline u8 min_tier(u8 a, u8 b)
{
	return a < b ? a : b;
}

static __always_inline u8 classify(const struct task_struct *p, const struct task_ctx *tctx,
				   const struct tuning_knobs *k)
{
	u64 rt_units = (tctx->avg_runtime >> RT_UNIT_SHIFT) + (tctx->runtime_dev >> (RT_UNIT_SHIFT + 1)) + 1;
	u64 score = (u64)tctx->wake_freq * tctx->csw_rate / rt_units;
	u8 tier;

	/* Storage and crypto kthreads at high priority must not compete with interactive work. */
	if (tctx->flags & TF_HIPRIO_KTHREAD)
		return TIER_BATCH;

	if (score >= k->lat_cri_thresh_high)
		tier = TIER_LAT_CRITICAL;
	else if (score >= k->lat_cri_thresh_low)
		tier = TIER_INTERACTIVE;
	else
		tier = TIER_BATCH;
	if (tier == TIER_INTERACTIVE && tctx->avg_runtime > cpu_bound_thresh_ns(k))
		tier = TIER_BATCH;
	/*
	 * A compositor's name or a game's environment is the task's own word, which any process can
	 * give: it lifts a task that already behaves interactively (frame-paced bursts) to
	 * LAT_CRITICAL, and nothing else. A flagged task that runs CPU-bound is BATCH like any other
	 * and gets its weight's share: a spinning Xwayland, or a process renamed Xorg, must not take
	 * the CPU from everyone else.
	 */
	if ((tctx->flags & (TF_COMPOSITOR | TF_GAME)) && tier == TIER_INTERACTIVE)
		tier = TIER_LAT_CRITICAL;
	/* Workqueue workers run the kernel's deferred work that interactive tasks wait on. */
	if ((tctx->flags & TF_KWORKER) && tier == TIER_BATCH)
		tier = TIER_INTERACTIVE;
	return min_tier(tier, admin_tier_cap(p, tctx));
}

static __always_inline void record_runtime(struct task_ctx *tctx, u64 sample)
{
	u64 dev = sample > tctx->avg_runtime ? sample - tctx->avg_runtime : tctx->avg_runtime - sample;

	if (!tctx->samples) {
		tctx->avg_runtime = sample;
		tctx->runtime_dev = 0;
	} else {
		tctx->avg_runtime = ewma(tctx->avg_runtime, sample);
		tctx->runtime_dev = ewma(tctx->runtime_dev, dev);
	}
	tctx->samples++;
}

static __always_inline void publish_profile(const struct task_struct *p, struct task_ctx *tctx)
{
	struct task_class_entry e = {};
	struct comm_key key;

	if (!task_mature(tctx) || tctx->samples % PUBLISH_EVERY)
		return;
	read_comm(p, &key);
	e.tier = tctx->tier;
	e.samples = tctx->samples;
	e.avg_runtime_ns = tctx->avg_runtime;
	bpf_map_update_elem(&task_profiles, &key, &e, BPF_ANY);
}

/*
 * enable(): a process the daemon has learned as interactive starts in its tier (LAT_CRITICAL
 * instead of the default INTERACTIVE), but immature: its slice and its classification come
 * from its own bursts. enable() runs at fork, when the child still has its parent's comm, and
 * one comm covers unlike tasks. So a BATCH profile is not applied: a periodic task started from
 * a shell whose "sh" was learned BATCH would wait in the batch DSQ. Nor is the runtime
 * average: a CPU worker forked by a short-burst parent would start with the parent's slice of
 * a few hundred microseconds, and throughput fell as the procdb filled. The tier alone costs
 * neither. What it can cost plain work is bounded by outran_share().
 */
static __always_inline void warm_start(const struct task_struct *p, struct task_ctx *tctx)
{
	struct task_class_entry *e;
	struct comm_key key;

	read_comm(p, &key);
	e = bpf_map_lookup_elem(&procdb_warm, &key);
	if (!e || !e->confident || e->tier >= NR_TIERS || e->tier == TIER_BATCH)
		return;
	/* What the procdb learned never overrides what the administrator set. */
	tctx->tier = min_tier(e->tier, admin_tier_cap(p, tctx));
}

/*
 * The interval since @since less the queue waits in it (@waited): the rates are the task's own
 * rhythm of runs and sleeps. Counted with the waits, a task that waited long got a lower rate
 * and a lower score, so it waited in the batch DSQ, longer still: beside two busy loops per CPU,
 * message-passing workers (hackbench) fell into that loop in one gate of two and waited 50-540 ms
 * per wakeup behind the loops' batch slices, taking up to 2x the fair class's time.
 */
static __always_inline u64 own_interval(u64 now, u64 since, u64 waited)
{
	u64 d = now - since;

	return waited < d ? d - waited : 0;
}

/* running(): a queue wait ended; the rates leave it out (own_interval()). */
static __always_inline void note_queue_wait(struct task_ctx *tctx, u64 lat)
{
	tctx->waited_wake += lat;
	tctx->waited_stop += lat;
}

/* runnable(): a wakeup after a sleep feeds the wakeup frequency. */
static __always_inline void note_wakeup(struct task_ctx *tctx, u64 now)
{
	if (tctx->last_wake_at)
		tctx->wake_freq = rate_ewma(tctx->wake_freq,
					    freq_of(own_interval(now, tctx->last_wake_at,
								 tctx->waited_wake)));
	tctx->waited_wake = 0;
	tctx->last_wake_at = now;
}

/*
 * The first sleep ends a program's start (exec, dynamic linking, its init), which is one long
 * burst cut only by preemptions, each recorded: a periodic task whose start took 100 ms of CPU
 * was mature and BATCH with a long average by the time it first slept, and while that average
 * decayed its short wakeups waited in the batch DSQ behind a fork storm.
 * From here on the task is judged by what it does between sleeps, as a new one is: immature,
 * INTERACTIVE, and its first wakeup rate is that of this sleep.
 */
static __always_inline void start_over(const struct task_struct *p, struct task_ctx *tctx, u64 now)
{
	tctx->samples = 0;
	tctx->avg_runtime = 0;
	tctx->runtime_dev = 0;
	tctx->awake_runtime = 0;
	tctx->wake_freq = 0;
	tctx->csw_rate = 0;
	tctx->waited_wake = 0;
	tctx->last_wake_at = now;
	if (tctx->tier == TIER_BATCH && !(tctx->flags & TF_HIPRIO_KTHREAD))
		tctx->tier = min_tier(TIER_INTERACTIVE, admin_tier_cap(p, tctx));
}

/*
 * stopping(): a context switch. A sleep ends one burst of runtime; a preemption only counts
 * when the burst already exceeds the average, so a CPU hog's average keeps climbing and its
 * stale wake rate decays instead of waiting for a sleep that never comes.
 */
static __always_inline void note_stop(const struct task_struct *p, struct task_ctx *tctx,
				      const struct tuning_knobs *k, u64 used, bool runnable, u64 now)
{
	u8 tier;

	if (tctx->last_stop_at)
		tctx->csw_rate = rate_ewma(tctx->csw_rate,
					   freq_of(own_interval(now, tctx->last_stop_at,
								tctx->waited_stop)));
	tctx->waited_stop = 0;
	tctx->last_stop_at = now;

	tctx->awake_runtime += used;
	if (tctx->awake_runtime > MAX_AWAKE_RUN_NS)
		tctx->awake_runtime = MAX_AWAKE_RUN_NS;

	if (!runnable && !tctx->last_wake_at) {
		start_over(p, tctx, now);
		return;
	}
	if (!runnable) {
		record_runtime(tctx, tctx->awake_runtime);
		tctx->awake_runtime = 0;
	} else if (tctx->awake_runtime > tctx->avg_runtime) {
		record_runtime(tctx, tctx->awake_runtime);
		tctx->wake_freq -= tctx->wake_freq >> EWMA_SHIFT;
	} else {
		return;
	}
	if (!(tctx->samples % (2 * PUBLISH_EVERY)))
		refresh_identity(p, tctx);
	tier = classify(p, tctx, k);
	/*
	 * A task that has not slept since it started keeps its tier against a BATCH verdict until
	 * its averages mean something: a program's start (exec, dynamic linking, its init) is one
	 * burst with no wakeup behind it, so it always scored BATCH, and a program launched under
	 * load waited behind the busy loops' batch slices. A hog turns BATCH after MATURE_SAMPLES
	 * slices. A task that sleeps and wakes is judged by that rhythm as soon as it has one, two
	 * bursts: holding a message-passing load's senders INTERACTIVE until maturity let them
	 * preempt their own receivers. One burst is not a rhythm: its rates span the sleep that
	 * ended the program's start, however long that was (a periodic task scored BATCH on its
	 * first burst after a long first sleep).
	 */
	if (tier != TIER_BATCH || task_mature(tctx) || (tctx->last_wake_at && tctx->samples >= 2) ||
	    (tctx->flags & TF_HIPRIO_KTHREAD))
		tctx->tier = tier;
	/* The hold above is for behaviour not yet known; the administrator's word needs none. */
	tctx->tier = min_tier(tctx->tier, admin_tier_cap(p, tctx));
	publish_profile(p, tctx);
}

#endif /* __PANDEMONIUM_CLASSIFY_BPF_H */
