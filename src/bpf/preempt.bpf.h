/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Preemption: who may take a CPU from the task running on it, and when a running task's slice is
 * cut short. The policy, in the order a task meets it:
 *   - A waking or new task that is not BATCH, and whose waker does not keep running, takes a CPU
 *     from a BATCH runner at once (its own CPU first, then the nearest by R_eff; on a hybrid
 *     machine a big CPU's first), else from a runner whose virtual deadline comes after its own
 *     (EEVDF's test), but not from the waker running on it. Each CPU publishes what runs there
 *     (cpu_ctx.run_kind, run_deadline) and a compare-and-swap gives it to one waker. That CPU is
 *     kicked, and the task, unless bound to one CPU, waits in the node DSQ for whichever CPU
 *     gets there first.
 *   - A BATCH task that starts while interactive work waits near it runs a preemption threshold,
 *     not a batch slice.
 *   - At the tick, a BATCH runner yields when interactive work has waited a preemption threshold
 *     in its node's DSQ (a quarter of one while a LAT_CRITICAL task waits); once it has run a
 *     threshold, also when interactive work heads its own DSQ or has waited a threshold at the
 *     head of a nearby CPU's; and at once when a rescue queued interactive work behind it.
 *   - At the end of its slice, a task that is not BATCH keeps the CPU while only BATCH work waits;
 *     a LAT_CRITICAL one also while its burst is under two slices, whatever waits.
 *   - A task the wait bound rescued is never preempted: it runs its slice out.
 */
#ifndef __PANDEMONIUM_PREEMPT_BPF_H
#define __PANDEMONIUM_PREEMPT_BPF_H

/*
 * Claims @cpu's running task as the one a waking task preempts: a BATCH task always, any other
 * only when its virtual deadline (vtime + slice) comes after @deadline, the waker's (0: BATCH
 * only). That is EEVDF's wakeup test: among sleepers that all banked the same capped credit, the
 * one with the short burst (a periodic probe beside a fork storm's parents) goes first. The
 * compare-and-swap lets exactly one of several simultaneous wakers take it, the others look
 * further. (Declared in placement.bpf.h, whose rank_pick() looks for such a runner.)
 */
static __always_inline bool claim_runner(s32 cpu, u64 deadline)
{
	struct cpu_ctx *c = cpu_ctx(cpu);
	u32 kind = c->run_kind;

	if (kind == RUN_NONE ||
	    (kind == RUN_OTHER && (!deadline || !time_before(deadline, c->run_deadline))))
		return false;
	/*
	 * Nor does the deadline test take the CPU from the task that is waking us there (a wakeup
	 * in task context runs on its waker's CPU): a game's main thread that releases its workers
	 * one futex wake at a time was preempted by the first, and the others stayed asleep until
	 * it ran again. A BATCH waker is still taken, and timer and interrupt wakeups preempt as
	 * before.
	 */
	if (deadline && cpu == bpf_get_smp_processor_id() && bpf_in_task())
		return false;
	return __sync_val_compare_and_swap(&c->run_kind, kind, RUN_NONE) == kind;
}

/*
 * A batch slice is long so that CPU-bound work keeps its caches, which only pays while nobody
 * waits for the CPU. With others queued behind it, each of them waited a whole 20 ms slice per
 * task ahead: a build's compile step or a server's worker woken CPU-bound sat 20-40 ms behind
 * two busy loops per CPU, where the fair class rotates every few milliseconds. The slice is
 * shared among the BATCH tasks waiting on this node, down to an eighth of it. A cooperative
 * group's thread keeps its group's quantum (coop_running()): its mates wait in the groups' queue.
 */
static __always_inline void share_batch_slice(struct task_struct *p,
					      const struct tuning_knobs *k, u32 node)
{
	s32 waiting = scx_bpf_dsq_nr_queued(batch_dsq(node));
	u64 s;

	/* The common case beside no other BATCH work: no division. */
	if (waiting <= 0)
		return;
	s = shared_batch_slice(k, waiting);
	if (p->scx.slice > s)
		p->scx.slice = s;
}

/*
 * What a waker may claim from @cpu's runner from now on (claim_runner()), and the deadline its
 * test reads. No waker claims a wait-bound rescue (run_outwaited()).
 */
static __always_inline void publish_runner(struct task_ctx *tctx, s32 cpu, u64 deadline)
{
	struct cpu_ctx *c = cpu_ctx(cpu);

	c->run_deadline = deadline;
	if (tctx->wait_rescued)
		c->run_kind = RUN_NONE;
	else
		c->run_kind = tctx->tier == TIER_BATCH ? RUN_BATCH : RUN_OTHER;
}

/*
 * running(): publish_runner(), and the slice a BATCH task starts with.
 *
 * A BATCH task that gets a CPU while interactive work waits in the node DSQ (an overflow rescue,
 * or the only thing this CPU's dispatch found first) or in a nearby CPU's own DSQ (too young to
 * steal yet) runs one preemption threshold, not a whole batch slice: it makes progress without
 * holding the waiters for 20 ms.
 */
static __always_inline void runner_started(struct task_struct *p, struct task_ctx *tctx, s32 cpu)
{
	struct tuning_knobs *k;
	struct topo_params *tp;

	publish_runner(tctx, cpu, p->scx.dsq_vtime + p->scx.slice);
	if (tctx->tier != TIER_BATCH || tctx->wait_rescued || !(k = knobs()) || !(tp = topo()))
		return;
	if (p->scx.slice > k->preempt_thresh_ns &&
	    (scx_bpf_dsq_nr_queued(node_dsq(cpu_node(cpu))) > 0 ||
	     rank_pick(NULL, cpu, tp->spill_search_budget, RANK_WANT_QUEUED, 0, tp) >= 0))
		p->scx.slice = k->preempt_thresh_ns;
	else if (!(tctx->flags & TF_COOP))
		share_batch_slice(p, k, cpu_node(cpu));
}

/*
 * A runner that goes on with a new slice but no running() (keep_prev(), coop_keep_prev(),
 * DISP_KEEP_RUNNING) is published again. A waker may have claimed it and then run on another
 * CPU first: left unpublished, the CPU could not be claimed until its runner stopped, and a
 * pinned wakeup there queued behind it: behind a --coop group's thread, kept for its 20 ms
 * quantum, for most of that quantum. The deadline is where the runner's vtime is now (@charged:
 * what its run so far costs, which stopping() has not added yet) plus the new slice: with the
 * stale one, a waker whose deadline came after it would wait out the whole new slice.
 */
static __always_inline void runner_kept(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
					u64 charged)
{
	publish_runner(tctx, cpu, p->scx.dsq_vtime + p->scx.slice + charged);
}

/*
 * Is the task at the head of @cpu's own DSQ anything but BATCH? Such a task was placed on that
 * CPU at wakeup and waits for it alone: tick_preempt() ends a BATCH slice there for it (without
 * that it waits out the whole 20 ms slice), and other CPUs take it before BATCH work
 * (DISP_STEAL_INTERACTIVE).
 */
static __always_inline bool pcpu_head_interactive(s32 cpu)
{
	struct task_struct *w;
	struct task_ctx *wctx;

	/* The common case on a busy CPU: nothing queued here, no iterator to set up. */
	if (scx_bpf_dsq_nr_queued(cpu) <= 0)
		return false;
	bpf_for_each(scx_dsq, w, cpu, 0) {
		wctx = task_ctx(w);
		return wctx && wctx->tier != TIER_BATCH;
	}
	return false;
}

/*
 * @p takes @victim, whose runner the caller claimed (claim_runner(), claim_big_batch()).
 */
static __always_inline void preempt_on(struct task_struct *p, struct task_ctx *tctx, s32 victim,
				       u64 slice, u64 enq_flags)
{
	insert_local(p, tctx, victim, slice, enq_flags | SCX_ENQ_PREEMPT);
	/*
	 * SCX_ENQ_PREEMPT into another CPU's local DSQ does not reliably end its runner's slice
	 * (traced: most such wakeups waited out the victim's whole batch slice, none on the
	 * waker's own CPU). The kick does.
	 */
	if (victim != bpf_get_smp_processor_id())
		kick_cpu(victim, SCX_KICK_PREEMPT);
	STAT_INC(nr_hard_kicks);
}

/*
 * @p takes @victim's runner (claimed by the caller) without being bound to @victim: it queues in
 * @victim's node DSQ at its vtime and @victim is kicked, so whichever CPU of the node reaches a
 * scheduling point first runs it. Placed in @victim's local DSQ, it waited for @victim alone:
 * beside a build at 2 vCPUs an audio thread (a 5.33 ms period, 0.5 ms of work) so placed waited
 * past its deadline after one wakeup in five, though the other CPU went through schedule() with
 * every short process the build ran.
 */
static __always_inline void preempt_shared(struct task_struct *p, struct task_ctx *tctx,
					   s32 victim, u64 slice, u64 vtime, u64 enq_flags)
{
	queue_interactive(p, tctx, cpu_node(victim), slice, vtime, enq_flags);
	kick_cpu(victim, SCX_KICK_PREEMPT);
	STAT_INC(nr_hard_kicks);
}

/*
 * Placement by preemption: a waking (or new) task that is not BATCH takes a CPU from a BATCH task
 * right away, the one it last ran on first, else the nearest by R_eff: under saturation an
 * interactive wakeup gets a CPU within one context switch, which is all the idle floor allows;
 * waiting for a tick or a BATCH slice to end is what the fair class does not make it do. With no
 * BATCH runner in reach, it takes the CPU of a runner whose deadline comes after its own: a fork
 * storm keeps every CPU busy with short INTERACTIVE tasks, and a periodic task queued behind
 * them would wait for the next tick (4 ms at HZ=250) where EEVDF preempts at once.
 */
static __always_inline s32 claim_victim(struct task_struct *p, s32 cpu, u64 deadline,
					struct topo_params *tp)
{
	if (cpu_is_online(cpu) && bpf_cpumask_test_cpu(cpu, p->cpus_ptr) &&
	    claim_runner(cpu, deadline))
		return cpu;
	if (p->nr_cpus_allowed > 1)
		return rank_pick(p, cpu, tp->spill_search_budget, RANK_WANT_RUNNER, deadline, tp);
	return -1;
}

/*
 * enqueue(): @p preempts a runner (claim_victim()) and is placed there; false if it does not.
 * Once it has asked outran_share(), the answer goes to @held (else left as it was), so that
 * enqueue()'s placement after a failed preemption does not ask again.
 */
static __always_inline bool try_wakeup_preempt(struct task_struct *p, struct task_ctx *tctx,
					       s32 cpu, u64 slice, u64 vtime, u64 enq_flags,
					       bool sync, struct topo_params *tp, int *held)
{
	s32 victim;

	/*
	 * A producer waking its consumer (a pipe, a socket: a synchronous wakeup by a waker that
	 * keeps running) does not preempt: the consumer then reads a batch instead of one message
	 * per context switch, and neither side migrates for every message. Timer, interrupt and
	 * exit wakeups (cyclictest, a frame loop, a parent reaping its child) still preempt.
	 */
	if (tctx->tier == TIER_BATCH || sync ||
	    (!(enq_flags & SCX_ENQ_WAKEUP) && tctx->last_run_at))
		return false;
	/*
	 * Past its share (outran_share(): a busy loop not yet classified, a new task of a group
	 * that ran ahead) it queues with the BATCH work by vtime (enqueue()) and takes no CPU
	 * from it.
	 */
	*held = outran_share(p, tctx, 0, cpu_node(cpu), tp);
	if (*held)
		return false;
	/* A CPU past cpu_offline must not send IPIs (see kick_cpu()). */
	if (!cpu_ctx(bpf_get_smp_processor_id())->online)
		return false;
	victim = claim_victim(p, cpu, 0, tp);
	if (victim < 0)
		victim = claim_victim(p, cpu, vtime + slice, tp);
	if (victim < 0)
		return false;
	/*
	 * A task bound to one CPU (cyclictest -a, a pinned audio thread) waits for that CPU, as
	 * does every task on a machine of one CPU: no other CPU could take it from the node DSQ,
	 * where a rescue, or a runner that the deadline test took the CPU from but whose vtime
	 * comes first, could run before it (1 vCPU beside a build, 3 runs each: the game's 1 % low
	 * 95.5-100.4 fps that way, 99.7-101.4 in the local DSQ).
	 */
	if (nr_cpu_ids_ro > 1 && p->nr_cpus_allowed > 1 && !is_migration_disabled(p)) {
		preempt_shared(p, tctx, victim, slice, vtime, enq_flags);
		return true;
	}
	preempt_on(p, tctx, victim, slice, enq_flags);
	return true;
}

/*
 * On a hybrid machine with no big CPU idle for a LAT_CRITICAL or INTERACTIVE wakeup, a big CPU
 * running BATCH work, its runner claimed: the wakeup preempts it rather than take an idle little
 * CPU, and the BATCH task, requeued by the preemption, finds that little CPU in enqueue(). A
 * lone runner is never requeued, so a BATCH task that once spilled to a big CPU otherwise kept it
 * while the interactive work it should make way for ran on the little ones: in the gate's hybrid
 * layer a 1 ms sleeper beside one such task woke on a big CPU for 56 % of its wakeups.
 */
static __always_inline s32 claim_big_batch(const struct task_struct *p,
					   const struct task_ctx *tctx, s32 cpu,
					   struct topo_params *tp)
{
	if (!hybrid_ro || tctx->tier == TIER_BATCH)
		return -1;
	if (cpu_size(cpu) == CPU_SIZE_BIG && cpu_is_online(cpu) &&
	    bpf_cpumask_test_cpu(cpu, p->cpus_ptr) && claim_runner(cpu, 0))
		return cpu;
	return rank_pick(p, cpu, tp->spill_search_budget, RANK_WANT_RUNNER_BIG, 0, tp);
}

/*
 * tick(): a BATCH task yields its CPU once an interactive task has waited in the node DSQ longer
 * than preempt_thresh_ns (4x sooner while a LAT_CRITICAL one is among them), or once it has itself
 * run that long while an interactive task waits in this CPU's own DSQ; that CPU's next dispatch
 * then serves its own DSQ before any overflow rescue.
 */
static __always_inline void tick_preempt(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
					 struct tuning_knobs *k, struct topo_params *tp, u64 now)
{
	u32 node = cpu_node(cpu);
	u64 since, thresh;
	bool ran_thresh;
	s32 victim;

	/* A wait-bound rescue runs out its slice (run_outwaited()). */
	if (tctx->tier != TIER_BATCH || tctx->wait_rescued)
		return;
	if (cpu_ctx(cpu)->local_urgent) {
		cpu_ctx(cpu)->local_urgent = 0;
		p->scx.slice = 0;
		STAT_INC(nr_preempt);
		return;
	}
	thresh = k->preempt_thresh_ns;
	/* Thin topologies protect BATCH runners longer during longrun, or they would thrash. */
	if (longrun_mode)
		thresh <<= tp->longrun_preempt_shift;
	ran_thresh = tctx->last_run_at && now - tctx->last_run_at >= thresh;
	if (ran_thresh && pcpu_head_interactive(cpu)) {
		p->scx.slice = 0;
		cpu_ctx(cpu)->owe_local = 1;
		STAT_INC(nr_preempt);
		return;
	}
	/*
	 * Consumers queued on their producer's CPU (enqueue()) wait for it alone while this CPU runs
	 * a busy loop for a whole batch slice: once they have waited a preemption threshold, this
	 * CPU yields and DISP_STEAL_AGED steals them. A BATCH head there may be pinned and is no
	 * reason to yield.
	 */
	if (ran_thresh &&
	    (victim = rank_pick(NULL, cpu, tp->spill_search_budget, RANK_WANT_QUEUED, thresh,
				tp)) >= 0 && pcpu_head_interactive(victim)) {
		p->scx.slice = 0;
		STAT_INC(nr_preempt);
		return;
	}
	since = node_dsq_since[node & (MAX_NODES - 1)];
	if (!since)
		return;
	if (latcrit_waiting)
		thresh >>= 2;
	if (now - since < thresh)
		return;
	p->scx.slice = 0;
	latcrit_waiting = 0;
	STAT_INC(nr_preempt);
}

/*
 * DISP_KEEP_PREV: @prev is not BATCH and ran out of slice, and nothing but BATCH work waits here
 * or for a steal (the starvation cap before it has had its turn), or @prev is LAT_CRITICAL within
 * two slices of its burst: it keeps the CPU with a new slice. The kernel asks dispatch() before
 * it requeues @prev, so without this a busy loop took the CPU and @prev waited in the overflow
 * for the next tick or longer, in the middle of a burst whose wakeup had been served at once.
 * EEVDF lets a sleeper's lag finish its burst the same way. A hog that is not BATCH yet turns
 * BATCH within a few slices (classify()). Not after a sched_yield() that found work queued
 * (yield_cpu()): that work is what @prev yielded to.
 */
static __always_inline bool keep_prev(struct task_struct *prev, s32 cpu, u32 node,
				      struct tuning_knobs *k, struct topo_params *tp)
{
	struct task_ctx *tctx;
	u64 now = bpf_ktime_get_ns(), ran, charged, slice;

	if (!k || !(prev->scx.flags & SCX_TASK_QUEUED) || !(tctx = task_ctx(prev)) ||
	    tctx->tier == TIER_BATCH || tctx->yielded || !may_keep_running(tctx, now))
		return false;
	slice = task_slice(tctx, k);
	ran = tctx->last_run_at ? now - tctx->last_run_at : 0;
	charged = charge_vtime(ran, tctx->weight);
	/*
	 * A kept task is neither classified nor charged until it stops, so a burst past the
	 * CPU-bound mark, or past the share its weight buys, goes back to be judged and queued by
	 * vtime: kept whenever only BATCH work waited, a new busy loop stayed INTERACTIVE and ran
	 * ahead of every BATCH task, whatever its nice.
	 */
	if (tctx->awake_runtime + ran > cpu_bound_thresh_ns(k) ||
	    outran_share(prev, tctx, charged, node, tp))
		return false;
	/*
	 * A LAT_CRITICAL burst is not cut by what waits, up to twice its slice (3x its average
	 * burst), as the fair class lets a task run out its slice before a waker's earlier deadline
	 * takes the CPU. Cut at a tick past its slice and requeued, an audio thread beside a build
	 * (0.5 ms of work a 5.33 ms period, 2 vCPUs) was preempted in 141-492 of ~3,700 periods,
	 * against 4-8 under the fair class, and ran over 2 ms in 45-246 (EEVDF 10-18); kept, 21-26
	 * and 17-21, its waits unchanged.
	 */
	if ((tctx->tier != TIER_LAT_CRITICAL ||
	     tctx->awake_runtime + ran >= 2 * slice) &&
	    (scx_bpf_dsq_nr_queued(cpu) > 0 || scx_bpf_dsq_nr_queued(node_dsq(node)) > 0 ||
	     rank_pick(NULL, cpu, tp->spill_search_budget, RANK_WANT_QUEUED, k->preempt_thresh_ns,
		       tp) >= 0))
		return false;
	prev->scx.slice = slice;
	runner_kept(prev, tctx, cpu, charged);
	STAT_INC(nr_keep_running);
	return true;
}

#endif /* __PANDEMONIUM_PREEMPT_BPF_H */
