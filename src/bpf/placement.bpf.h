/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where a runnable task goes: vtime bounds, per-CPU DSQs behind a depth gate with a spill along
 * the affinity rank, and the shared overflow DSQs.
 */
#ifndef __PANDEMONIUM_PLACEMENT_BPF_H
#define __PANDEMONIUM_PLACEMENT_BPF_H

/* How far behind vtime_now a task that did not sleep may be: tighter for the urgent tiers. */
static __always_inline u64 awake_lag_cap(const struct task_ctx *tctx, const struct topo_params *tp)
{
	switch (tctx->tier) {
	case TIER_LAT_CRITICAL:
		return tp->lag_cap_ns / 2;
	case TIER_INTERACTIVE:
		return tp->lag_cap_ns * 3 / 4;
	default:
		return tp->lag_cap_ns;
	}
}

/*
 * Bounds the deadline a task is queued with: a sleeper may bank at most lag_cap * lag_scale of
 * credit, a task that stayed runnable only its tier's awake cap (floor), and nothing may be
 * pushed so far ahead that it waits behind everything forever (ceiling).
 */
static __always_inline u64 task_vtime(struct task_struct *p, struct task_ctx *tctx,
				      u64 enq_flags, struct tuning_knobs *k,
				      struct topo_params *tp)
{
	u64 vtime = enq_flags & SCX_ENQ_WAKEUP ? family_vtime(p, tctx) : p->scx.dsq_vtime;
	u64 now = vtime_now;
	u64 lag = enq_flags & SCX_ENQ_WAKEUP ? tp->lag_cap_ns * k->lag_scale
					     : awake_lag_cap(tctx, tp);
	/*
	 * The ceiling is in the task's own vtime units: a nice 19 task is charged 68x a nice 0
	 * one's vtime for the same run, and a ceiling common to both clipped that charge.
	 */
	u64 ceiling = charge_vtime(tp->vtime_ceiling_ns, tctx->weight);

	if (now > lag && time_before(vtime, now - lag))
		vtime = now - lag;
	if (time_before(now + ceiling, vtime))
		vtime = now + ceiling;
	p->scx.dsq_vtime = vtime;
	return vtime;
}

/*
 * running() of a BATCH task: the BATCH work of @node has been served up to @vtime. A turn the
 * wait bound gave out of vtime order (a nice 19 task is charged 68x a nice 0 one's vtime) says
 * nothing of how far the others were served. Racing CPUs may lose an update; the clock then
 * lags by a turn, which only holds the interactive tiers a little sooner.
 */
static __always_inline void batch_started(const struct task_ctx *tctx, u64 vtime, u32 node)
{
	u64 *clock = &batch_clock[node & (MAX_NODES - 1)];

	if (tctx->tier == TIER_BATCH && !tctx->wait_rescued && time_before(*clock, vtime))
		*clock = vtime;
}

/*
 * Is @vtime, that of a task that runs more than it sleeps, past its share of what the BATCH work
 * of @node got while some of it waits: more than a preemption threshold ahead of the furthest
 * vtime a BATCH turn started at (batch_clock)? A task that sleeps briefly and often (1.5 ms of
 * work every 2 ms scores as interactive as a compositor) is what runs, so it drags the clock with
 * it and never fell behind it: busy loops beside four such tasks at 2 CPUs got a fifth to a
 * quarter of their share. The batch clock moves only as BATCH work gets its turns, so such a task gets its
 * weight's share and only its latency is better.
 *
 * The room is small because a held task queues behind every BATCH turn below its vtime: the
 * further ahead it may run, the longer it then waits. A CPU-bound schbench worker beside busy
 * loops woke with a P99 of 37-49 ms with half a lag cap of room, 18-20 ms with a shared batch
 * slice and 14-22 ms with a preemption threshold (EEVDF 10-18). Only tasks that run more than they
 * sleep: held for every task, a game beside a build (2 busy loops and a fork loop per CPU) fell
 * from 82 to 25 fps at its 1 % low and an audio period missed a fifth of its deadlines (the
 * frame's workers and the period were held as well). So a task that sleeps at least as long as
 * it runs keeps its tier's priority beside BATCH work: at most half a CPU of it per task. A new
 * task is not held before its bursts say what it is, as a program launched during a build must
 * not queue behind it.
 */
static __always_inline bool outran_batch(const struct task_ctx *tctx, u64 vtime, u32 node)
{
	return task_mature(tctx) && tctx->avg_runtime * tctx->wake_freq > NSEC_PER_SEC / 2 &&
	       time_before(batch_clock[node & (MAX_NODES - 1)] + knobs()->preempt_thresh_ns,
			   vtime) &&
	       scx_bpf_dsq_nr_queued(batch_dsq(node)) > 0;
}

/*
 * Has the task run past what its weight buys? Its vtime (with @pending, the charge of a run not
 * yet stopped) is more than the lag cap ahead of the clock, or past its share of the BATCH
 * work's turns (outran_batch()), or, for a link of a fork/exit chain, ahead of the BATCH work
 * waiting on @node by more than two shared batch slices (chain_ahead()). The interactive tiers
 * go before BATCH work only while they have not: a task that behaves interactively sleeps and
 * stays near the clock, so this takes nothing from it, but a new busy loop (INTERACTIVE until
 * classified, or LAT_CRITICAL for a dozen slices after a short first sleep) would run ahead of
 * every BATCH task whatever its nice or cgroup weight. Past any mark it queues with the BATCH
 * work, in vtime order.
 */
static __always_inline bool outran_share(const struct task_struct *p,
					 const struct task_ctx *tctx, u64 pending, u32 node,
					 const struct topo_params *tp)
{
	u64 vtime = p->scx.dsq_vtime + pending;

	return time_before(vtime_now + tp->lag_cap_ns, vtime) ||
	       outran_batch(tctx, vtime, node) || (tctx->kin && chain_ahead(vtime, node));
}

/*
 * LAT_CRITICAL gets 1.5x and INTERACTIVE 2x its average burst, so it can finish a burst in one
 * go but cannot sit on a CPU; both are capped by slice_ns. Immature tasks get the cap until their
 * average means something. BATCH gets the long batch slice that throughput wants.
 */
static __always_inline u64 task_slice(const struct task_ctx *tctx, const struct tuning_knobs *k)
{
	u64 cap = longrun_mode ? k->burst_slice_ns : k->slice_ns, s;

	/*
	 * A BATCH task lighter than nice 0 runs a slice shrunk by its weight, as its vtime charge
	 * grows: it then waits about a batch slice's worth of the others' runs between turns,
	 * instead of the 68x of it that a nice 19 task's whole batch slice would cost it.
	 */
	if (tctx->tier == TIER_BATCH) {
		if (tctx->weight >= NICE_0_WEIGHT)
			return k->batch_slice_ns;
		s = k->batch_slice_ns * tctx->weight / NICE_0_WEIGHT;
		return s > MIN_SLICE_NS ? s : MIN_SLICE_NS;
	}
	if (!task_mature(tctx))
		return cap;
	s = tctx->tier == TIER_LAT_CRITICAL ? tctx->avg_runtime * 3 / 2 : tctx->avg_runtime * 2;
	if (s < MIN_SLICE_NS)
		s = MIN_SLICE_NS;
	/* The daemon's cap wins over the floor (its burst slice rail goes down to 100 us). */
	return s < cap ? s : cap;
}

/*
 * A task queued again before it ran (sent back through enqueue() when a higher class took its
 * CPU, or by a property change) keeps its first stamp: the wait bound counts the whole wait, not
 * the part since the last move.
 */
static __always_inline void mark_enqueued(struct task_ctx *tctx, u64 now, u64 dsq,
					  u64 enq_flags)
{
	if (!tctx->enqueue_at)
		tctx->enqueue_at = now;
	if (trace_slow_ro) {
		tctx->enq_tier = tctx->tier;
		tctx->enq_dsq = dsq;
		tctx->enq_flags = enq_flags;
	}
}

static __always_inline void mark_shared_since(u64 *since, u64 now)
{
	if (!*since)
		__sync_val_compare_and_swap(since, 0, now);
}

static __always_inline void insert_shared(struct task_struct *p, struct task_ctx *tctx, u64 dsq,
					  u64 *since, u64 slice, u64 vtime, u64 enq_flags)
{
	u64 now = bpf_ktime_get_ns();

	mark_enqueued(tctx, now, dsq, enq_flags);
	scx_bpf_dsq_insert_vtime(p, dsq, slice, vtime, enq_flags);
	mark_shared_since(since, now);
	STAT_INC(nr_shared);
}

static __always_inline void insert_node(struct task_struct *p, struct task_ctx *tctx, u32 node,
					u64 slice, u64 vtime, u64 enq_flags)
{
	insert_shared(p, tctx, node_dsq(node), &node_dsq_since[node & (MAX_NODES - 1)], slice,
		      vtime, enq_flags);
}

/*
 * insert_node() for a task waiting its turn: while a LAT_CRITICAL one waits, tick_preempt() ends
 * a BATCH slice after a quarter of the preemption threshold.
 */
static __always_inline void queue_interactive(struct task_struct *p, struct task_ctx *tctx,
					      u32 node, u64 slice, u64 vtime, u64 enq_flags)
{
	insert_node(p, tctx, node, slice, vtime, enq_flags);
	if (tctx->tier == TIER_LAT_CRITICAL)
		latcrit_waiting = 1;
}

static __always_inline void insert_batch(struct task_struct *p, struct task_ctx *tctx, u32 node,
					 u64 slice, u64 vtime, u64 enq_flags)
{
	insert_shared(p, tctx, batch_dsq(node), &batch_dsq_since[node & (MAX_NODES - 1)], slice,
		      vtime, enq_flags);
}

/*
 * The tasks in @cpu's own DSQ, counted only where its age says it holds work: an age of 0 says
 * it is empty (insert_pcpu() keeps it exact enough to trust). Spills and steals on a big machine
 * pass up to 16 CPUs, and counting each was a hash lookup even for the empty ones.
 */
static __always_inline s32 pcpu_nr_queued(s32 cpu)
{
	return cpu_ctx(cpu)->pcpu_since ? scx_bpf_dsq_nr_queued(cpu) : 0;
}

/* The depth is at least 1, so an empty DSQ always has room. */
static __always_inline bool pcpu_has_room(s32 cpu, struct topo_params *tp)
{
	return pcpu_nr_queued(cpu) < (s32)tp->pcpu_dsq_depth;
}

static __always_inline void insert_pcpu(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
					u64 slice, u64 vtime, u64 enq_flags)
{
	u64 now = bpf_ktime_get_ns();

	mark_enqueued(tctx, now, cpu, enq_flags);
	scx_bpf_dsq_insert_vtime(p, cpu, slice, vtime, enq_flags);
	/*
	 * A locked swap even when the age is set (mark_shared_since() reads first): it orders the
	 * insert before the read of the age, so a dispatch that clears the age and then counts the
	 * DSQ (clear_since()) either sees this task or leaves the age 0 for this swap to set. A CPU's
	 * DSQ holding work then never reads as empty by its age, which the steal walks and the
	 * stranded scan trust (rank_walk(), stranded_scan()). The node DSQs' ages keep the cheaper
	 * read: every CPU of a node inserts there, and a lost age only delays a rescue.
	 */
	__sync_val_compare_and_swap(&cpu_ctx(cpu)->pcpu_since, 0, now);
	STAT_INC(nr_pcpu);
	/* Must stay 0: the gate checks that no placement ever targets a CPU known to be offline. */
	if (!cpu_is_online(cpu))
		STAT_INC(nr_offline_placements);
}

/*
 * A CPU that is idle and claimed (or one the kernel is about to run @p on) takes @p straight into
 * its local DSQ: going through the per-CPU DSQ would let the dispatch waterfall serve an aged
 * overflow first, and the task that woke the CPU would wait behind a whole BATCH slice.
 */
static __always_inline void insert_local(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
					 u64 slice, u64 enq_flags)
{
	mark_enqueued(tctx, bpf_ktime_get_ns(), SCX_DSQ_LOCAL_ON | cpu, enq_flags);
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, slice, enq_flags);
}

enum rank_want {
	RANK_WANT_ROOM,   /* per-CPU DSQ below the depth gate (spill) */
	RANK_WANT_QUEUED, /* per-CPU DSQ holding work (steal) */
	RANK_WANT_IDLE,   /* idle CPU, claimed on success (WAKE_SYNC search) */
	RANK_WANT_RUNNER, /* CPU whose runner claim_runner() takes (preemption) */
	RANK_WANT_IDLE_BIG,    /* idle CPU_SIZE_BIG CPU, claimed (hybrid machines) */
	RANK_WANT_IDLE_LITTLE, /* idle CPU_SIZE_LITTLE CPU, claimed (hybrid machines) */
	RANK_WANT_RUNNER_BIG,  /* CPU_SIZE_BIG CPU whose runner claim_runner() takes (hybrid) */
};

/* Takes @cpu's runner for a waker with deadline @deadline (RANK_WANT_RUNNER): preempt.bpf.h. */
static __always_inline bool claim_runner(s32 cpu, u64 deadline);

/*
 * Walks @cpu's affinity row (nearest by R_eff first) for the first CPU that has what @want asks.
 * Offline CPUs and CPUs outside @p's mask are skipped without spending @budget, so hotplug
 * leftovers in the rank never shrink the search. One bpf_for loop keeps verification linear.
 *
 * RANK_WANT_QUEUED with @queued (constant NULL everywhere else, so the verifier sees none of
 * this): *@queued, -1 on entry, gets the nearest CPU holding work of any age, and the walk goes
 * on past it for one whose work is @deadline old. dispatch() asks both questions of one walk: a
 * CPU with nothing to run walked the same row three times, the spill budget (16 CPUs from 32 on)
 * each time, a DSQ lookup per CPU.
 */
static __always_inline s32 rank_walk(const struct task_struct *p, s32 cpu, u32 budget,
				     enum rank_want want, u64 deadline, struct topo_params *tp,
				     s32 *queued)
{
	u32 key = cpu & (MAX_CPUS - 1);
	struct affinity_row *row = bpf_map_lookup_elem(&affinity_rank, &key);
	u64 now = want == RANK_WANT_QUEUED && deadline ? bpf_ktime_get_ns() : 0;
	u32 i;

	if (!row)
		return -1;
	bpf_for(i, 0, MAX_AFFINITY_CANDIDATES) {
		u32 c;

		if (!budget)
			break;
		c = row->cpus[i & (MAX_AFFINITY_CANDIDATES - 1)];
		if (c == AFFINITY_SENTINEL)
			break;
		if (!cpu_is_online(c)) {
			STAT_INC(nr_rank_offline_skips);
			continue;
		}
		if (p && !bpf_cpumask_test_cpu(c, p->cpus_ptr))
			continue;
		/* A CPU of the wrong size is not a candidate at all: it spends no budget. */
		if (((want == RANK_WANT_IDLE_BIG || want == RANK_WANT_RUNNER_BIG) &&
		     cpu_size(c) != CPU_SIZE_BIG) ||
		    (want == RANK_WANT_IDLE_LITTLE && cpu_size(c) != CPU_SIZE_LITTLE))
			continue;
		budget--;
		switch (want) {
		case RANK_WANT_ROOM:
			if (pcpu_has_room(c, tp))
				return c;
			break;
		case RANK_WANT_QUEUED:
			/* @deadline here is a minimum age of the DSQ's work (0: any). */
			if (pcpu_nr_queued(c) <= 0)
				break;
			if (queued && *queued < 0)
				*queued = c;
			if (!deadline || now - cpu_ctx(c)->pcpu_since >= deadline)
				return c;
			break;
		case RANK_WANT_IDLE:
		case RANK_WANT_IDLE_BIG:
		case RANK_WANT_IDLE_LITTLE:
			/*
			 * A CPU with a published runner (running() to stopping()) is not idle. The
			 * read first: the claim is a kernel call that, on a machine with SMT, also
			 * updates the core's idle-sibling mask whether or not the CPU is idle, and a
			 * big machine's walk probes up to 8 CPUs.
			 */
			if (cpu_ctx(c)->run_kind == RUN_NONE && scx_bpf_test_and_clear_cpu_idle(c))
				return c;
			break;
		case RANK_WANT_RUNNER:
		case RANK_WANT_RUNNER_BIG:
			if (claim_runner(c, deadline))
				return c;
			break;
		}
	}
	return -1;
}

static __always_inline s32 rank_pick(const struct task_struct *p, s32 cpu, u32 budget,
				     enum rank_want want, u64 deadline, struct topo_params *tp)
{
	return rank_walk(p, cpu, budget, want, deadline, tp, NULL);
}

/*
 * An idle CPU sharing @cpu's L2 (at most 8 probes along the rank, which lists L2 siblings first),
 * claimed on success; @cpu itself first. -1 if none or affinity is off.
 */
static __always_inline s32 find_idle_l2_sibling(const struct task_struct *p, s32 cpu,
						const struct tuning_knobs *k)
{
	u32 key = cpu & (MAX_CPUS - 1), i;
	struct affinity_row *row;

	if (k->affinity_mode == AFFINITY_OFF || !cpu_is_online(cpu))
		return -1;
	if (bpf_cpumask_test_cpu(cpu, p->cpus_ptr) && scx_bpf_test_and_clear_cpu_idle(cpu))
		return cpu;
	row = bpf_map_lookup_elem(&affinity_rank, &key);
	if (!row)
		return -1;
	bpf_for(i, 0, 8) {
		u32 c = row->cpus[i & (MAX_AFFINITY_CANDIDATES - 1)];

		if (c == AFFINITY_SENTINEL || !same_l2(c, cpu))
			break;
		if (cpu_is_online(c) && bpf_cpumask_test_cpu(c, p->cpus_ptr) &&
		    scx_bpf_test_and_clear_cpu_idle(c))
			return c;
	}
	return -1;
}

/*
 * On a hybrid machine, an idle CPU of the size @p's tier wants, claimed on success: the biggest
 * for LAT_CRITICAL and INTERACTIVE (their latency is a big core's shorter run), the smallest for
 * BATCH, which leaves the big cores idle for the next interactive wakeup. @cpu itself first, then
 * its rank row. -1 on a symmetric machine or when no CPU of that size is idle: the caller's
 * ordinary search then takes any size.
 */
static __always_inline s32 pick_idle_sized(const struct task_struct *p,
					   const struct task_ctx *tctx, s32 cpu,
					   struct topo_params *tp)
{
	bool batch = tctx->tier == TIER_BATCH;

	if (!hybrid_ro)
		return -1;
	if (cpu_size(cpu) == (batch ? CPU_SIZE_LITTLE : CPU_SIZE_BIG) && cpu_is_online(cpu) &&
	    bpf_cpumask_test_cpu(cpu, p->cpus_ptr) && scx_bpf_test_and_clear_cpu_idle(cpu))
		return cpu;
	return rank_pick(p, cpu, tp->spill_search_budget,
			 batch ? RANK_WANT_IDLE_LITTLE : RANK_WANT_IDLE_BIG, 0, tp);
}

/*
 * powersave: a waking task whose own CPU is busy queues there rather than wake an idle core, so
 * fewer cores are awake and each sleeps longer. Only behind a runner that is not BATCH (it
 * yields within an interactive slice, where a BATCH runner holds the CPU for a batch slice) and
 * only into room below the depth gate. Compositors and a game's threads still take an idle core:
 * their frames are what a user sees. Other LAT_CRITICAL tasks pack too: the tier's score (wake
 * rate times switch rate over runtime) puts nearly every light periodic task there, and those
 * are the wakeups that keep cores awake.
 */
static __always_inline bool pack_on_busy(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
					 struct tuning_knobs *k, struct topo_params *tp)
{
	if (!k->pack || (tctx->flags & (TF_COMPOSITOR | TF_GAME)) || !cpu_is_online(cpu) ||
	    !bpf_cpumask_test_cpu(cpu, p->cpus_ptr) || cpu_ctx(cpu)->run_kind != RUN_OTHER ||
	    !pcpu_has_room(cpu, tp))
		return false;
	insert_pcpu(p, tctx, cpu, task_slice(tctx, k), task_vtime(p, tctx, SCX_ENQ_WAKEUP, k, tp), 0);
	STAT_INC(nr_packed);
	return true;
}

/*
 * Depth-gated per-CPU placement: @cpu if its DSQ has room, else the nearest sibling by R_eff with
 * room, else the node overflow DSQ. Returns the CPU that was kicked, or -1 for the node DSQ.
 */
static __always_inline s32 place_pcpu_with_spill(struct task_struct *p, struct task_ctx *tctx,
						 s32 cpu, u64 slice, u64 vtime, u64 enq_flags)
{
	struct topo_params *tp = topo();
	s32 target = -1;

	if (!tp)
		return -1;
	if (cpu_is_online(cpu) && pcpu_has_room(cpu, tp)) {
		target = cpu;
	} else {
		target = rank_pick(p, cpu, tp->spill_search_budget, RANK_WANT_ROOM, 0, tp);
		if (target >= 0)
			STAT_INC(nr_spills);
	}

	if (target < 0) {
		insert_node(p, tctx, cpu_node(cpu), slice, vtime, enq_flags);
		return -1;
	}
	insert_pcpu(p, tctx, target, slice, vtime, enq_flags);
	kick_cpu(target, SCX_KICK_IDLE);
	return target;
}

#endif /* __PANDEMONIUM_PLACEMENT_BPF_H */
