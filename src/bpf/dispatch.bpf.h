/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The dispatch waterfall. The order is the design: cache-hot work first, but an aged overflow DSQ
 * or a CPU that went offline with work in its DSQ is always served before anything can starve.
 */
#ifndef __PANDEMONIUM_DISPATCH_BPF_H
#define __PANDEMONIUM_DISPATCH_BPF_H

/*
 * Clears a shared DSQ's age @old once the DSQ is found empty. A task inserted between the count
 * and the clear found the age still set (insert_pcpu()): the second count sees it and sets the
 * age again, so work in a CPU's DSQ never sits behind an age of 0.
 */
static __always_inline void clear_since(u64 dsq, u64 *since, u64 old)
{
	if (__sync_val_compare_and_swap(since, old, 0) == old && old &&
	    scx_bpf_dsq_nr_queued(dsq) > 0)
		mark_shared_since(since, bpf_ktime_get_ns());
}

/* After a move out of a shared DSQ: empty -> clear the age, else restart it at now. */
static __always_inline void refresh_since(u64 dsq, u64 *since)
{
	u64 old = *since;

	if (scx_bpf_dsq_nr_queued(dsq) == 0)
		clear_since(dsq, since, old);
	else
		__sync_val_compare_and_swap(since, old, bpf_ktime_get_ns());
}

static __always_inline bool move_shared(u64 dsq, u64 *since)
{
	if (!scx_bpf_dsq_move_to_local(dsq, 0))
		return false;
	refresh_since(dsq, since);
	return true;
}

/*
 * A shared DSQ's head is the least vtime still owed a turn there: the virtual clock is at least
 * that far. running() alone moves the clock by at most a batch slice per start, and a task in a
 * group runs at a fraction of a nice 0 task's weight, so each of its runs costs many batch slices
 * of vtime: the clock fell behind the queue until the ceiling (in each task's own units, lowest
 * for the heaviest) clipped every charge, and the heaviest group's tasks, clipped most, ran
 * ahead (nested groups a / b1 / b2 at 4 vCPUs got 0.58 / 0.08 / 0.34 of 0.5 / 0.1 / 0.4).
 */
static __always_inline void clock_to_head(u64 head)
{
	if (time_before(vtime_now, head))
		vtime_now = head;
}

/* How far into a shared DSQ a dispatching CPU looks for a task that last ran on it. */
#define LOCAL_FIRST_SCAN 4

/*
 * move_shared(), but the first of the DSQ's few head tasks that last ran on @cpu goes before the
 * head. Taking the head alone moved every task to whichever CPU asked next: a message-passing
 * load then migrated on nearly every wakeup and lost its caches each time. The scan is short, so
 * vtime order holds within a few tasks. The rescues use move_shared(): an aged DSQ's oldest
 * task is the one owed a CPU.
 */
static __always_inline bool move_shared_near(u64 dsq, u64 *since, s32 cpu)
{
	u64 window = knobs()->batch_slice_ns, head = 0;
	struct task_struct *p;
	u32 seen = 0;

	if (scx_bpf_dsq_nr_queued(dsq) <= 0)
		return false;
	bpf_for_each(scx_dsq, p, dsq, 0) {
		if (++seen > LOCAL_FIRST_SCAN)
			break;
		/*
		 * Only a task as due as the head: a light task waits far behind in vtime (a nice 19
		 * one 272 ms after one tick), and taking it here for its cache would hand it the
		 * CPU its weight does not buy.
		 */
		if (seen == 1)
			head = p->scx.dsq_vtime;
		else if (time_before(head + window, p->scx.dsq_vtime))
			break;
		if (scx_bpf_task_cpu(p) == cpu &&
		    scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0)) {
			refresh_since(dsq, since);
			clock_to_head(head);
			return true;
		}
	}
	if (!move_shared(dsq, since))
		return false;
	clock_to_head(head);
	return true;
}

static __always_inline bool aged(u64 since, u64 now, u64 thresh)
{
	return since && now - since >= thresh;
}

/*
 * Serves the older of the two overflow DSQs of @node once it is older than @thresh, and the other
 * one too when both are: serving only the older side let long-runners starve behind a stream of
 * interactive tasks at 2 CPUs in the upstream design. The batch DSQ is aged only @batch_grace
 * later: its head waits a whole batch slice in the ordinary rotation, and with the rescue age
 * below that slice every dispatch found it "aged" and ran a busy loop ahead of a preempted or
 * just-woken interactive task, which then waited for the tick.
 */
static __always_inline bool service_aged_overflow(s32 cpu, u32 node, u64 thresh, u64 batch_grace)
{
	u32 n = node & (MAX_NODES - 1);
	u64 now = bpf_ktime_get_ns();
	u64 ni = node_dsq_since[n], nb = batch_dsq_since[n];
	bool ai = aged(ni, now, thresh), ab = aged(nb, now, thresh + batch_grace);
	bool served = false;

	if (!ai && !ab)
		return false;
	if (ai && (!ab || !time_before(nb, ni))) {
		served = move_shared(node_dsq(node), &node_dsq_since[n]);
		if (ab)
			served |= move_shared(batch_dsq(node), &batch_dsq_since[n]);
	} else {
		served = move_shared(batch_dsq(node), &batch_dsq_since[n]);
		/* The interactive task now waits locally behind a BATCH slice: tick() cuts it short. */
		if (ai && move_shared(node_dsq(node), &node_dsq_since[n])) {
			served = true;
			cpu_ctx(cpu)->local_urgent = 1;
		}
	}
	return served;
}

/* move_shared() for a per-CPU DSQ: its age decides when other CPUs may steal from it. */
static __always_inline bool move_pcpu(s32 cpu)
{
	return move_shared(cpu, &cpu_ctx(cpu)->pcpu_since);
}

/*
 * Moves every task of @dsq whose runqueue is @cpu's into @cpu's local DSQ (see cpu_offline()),
 * then restarts the DSQ's age as a dispatch that took work from it would.
 */
static __always_inline void evict_to_local(u64 dsq, u64 *since, s32 cpu)
{
	struct task_struct *p;
	bool moved = false;

	if (scx_bpf_dsq_nr_queued(dsq) <= 0)
		return;
	bpf_for_each(scx_dsq, p, dsq, 0) {
		if (scx_bpf_task_cpu(p) == cpu &&
		    scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL_ON | cpu, 0))
			moved = true;
	}
	if (moved)
		refresh_since(dsq, since);
}

/*
 * stranded_scan() (main.bpf.c) found @stranded_cpu's own DSQ unserved: see there. A global
 * function, verified once on its own: inlined at the head of the waterfall, its DSQ walk would be
 * verified again along every path of the waterfall after it.
 */
__noinline int rescue_stranded(void)
{
	s32 c = stranded_cpu;

	if (c < 0 || __sync_val_compare_and_swap(&stranded_cpu, c, -1) != c)
		return 0;
	evict_to_local(c & (MAX_CPUS - 1), &cpu_ctx(c)->pcpu_since, c);
	scx_bpf_kick_cpu(c, SCX_KICK_IDLE);
	STAT_INC(nr_stranded_rescues);
	return 1;
}

/* Tasks stranded in the per-CPU DSQ of a CPU that went offline are pulled by any live CPU. */
static __always_inline bool drain_offline(void)
{
	u32 i;

	if (!nr_offline_cpus)
		return false;
	bpf_for(i, 0, MAX_CPUS) {
		if (i >= nr_cpu_ids_ro)
			break;
		if (!cpu_ctx(i)->drain || scx_bpf_dsq_nr_queued(i) <= 0)
			continue;
		if (move_pcpu(i)) {
			STAT_INC(nr_offline_drain);
			return true;
		}
	}
	return false;
}

/*
 * The wait bound. Vtime shares CPU by weight, and a light task's turn comes after the heavier
 * ones have caught up with its charge: a SCHED_IDLE task that ran one tick is due after 341
 * ticks of each nice 0 task beside it, seconds under a build, past the kernel's 5 s watchdog.
 * So whatever its vtime, a task that has waited MAX_WAIT_NS in a DSQ is run next by a CPU that
 * may run it. Light tasks sit at the tail of a vtime-ordered DSQ, so each scan looks at the last
 * few; one CPU per node scans every WAIT_SCAN_NS (each CPU its own DSQ), and each scan runs at
 * most one task, so the bound holds while fewer than 1 / WAIT_SCAN_NS tasks a second per node
 * outwait it. With a batch slice (80 ms at most) before the next dispatch, no runnable task waits
 * longer than about 2.1 s. Each rescue runs a task out of vtime order, so the bound is kept well
 * above a light task's ordinary wait (a nice 19 loop beside a few nice 0 ones per CPU waits
 * seconds between turns under EEVDF too), or the rescues would become its share.
 */
#define MAX_WAIT_NS (2000 * MSEC_NS)
#define WAIT_SCAN_NS (20 * MSEC_NS)
#define WAIT_SCAN_DEPTH 8

u64 wait_scan_at[MAX_NODES];

/* @rev: the DSQ is vtime-ordered, its light tasks at the tail; a FIFO's oldest are at its head. */
static __always_inline bool run_outwaited(u64 dsq, u64 *since, s32 cpu, u64 now, bool rev)
{
	struct task_struct *p;
	struct task_ctx *t;
	u32 seen = 0;

	if (scx_bpf_dsq_nr_queued(dsq) <= 0)
		return false;
	bpf_for_each(scx_dsq, p, dsq, rev ? SCX_DSQ_ITER_REV : 0) {
		if (++seen > WAIT_SCAN_DEPTH)
			break;
		t = task_ctx(p);
		if (!t || !t->enqueue_at || now - t->enqueue_at < MAX_WAIT_NS ||
		    !bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			continue;
		/*
		 * A rescued run cut short by the first waker or tick (a light task is BATCH, the
		 * first thing either preempts) could end before the task did any work, and it would
		 * wait the whole bound again.
		 */
		t->wait_rescued = 1;
		if (!scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0)) {
			t->wait_rescued = 0;
			continue;
		}
		/* The head's age is untouched; an emptied DSQ has none. */
		if (scx_bpf_dsq_nr_queued(dsq) == 0)
			clear_since(dsq, since, *since);
		STAT_INC(nr_wait_rescue);
		return true;
	}
	return false;
}

/*
 * The wait bound's scan of @cpu's node's coop DSQ (--coop): a FIFO, its oldest at the head. A
 * global function, verified on its own and only with --coop: inlined, the dispatch program's
 * register allocation changed around it and it verified a third more instructions with the
 * option off.
 */
__noinline int coop_wait_bound(s32 cpu)
{
	u32 node = cpu_node(cpu);

	return run_outwaited(coop_dsq(node), &coop_dsq_since[node & (MAX_NODES - 1)], cpu,
			     bpf_ktime_get_ns(), false);
}

static __always_inline bool wait_bound(s32 cpu, u32 node)
{
	u32 n = node & (MAX_NODES - 1);
	u64 now = bpf_ktime_get_ns(), at = wait_scan_at[n];
	struct cpu_ctx *c = cpu_ctx(cpu);

	if (now - c->wait_scan_at >= WAIT_SCAN_NS) {
		c->wait_scan_at = now;
		if (run_outwaited(cpu, &c->pcpu_since, cpu, now, true))
			return true;
	}
	if (now - at < WAIT_SCAN_NS || __sync_val_compare_and_swap(&wait_scan_at[n], at, now) != at)
		return false;
	return run_outwaited(batch_dsq(node), &batch_dsq_since[n], cpu, now, true) ||
	       run_outwaited(node_dsq(node), &node_dsq_since[n], cpu, now, true) ||
	       (coop_on_ro && coop_wait_bound(cpu));
}

/*
 * Which step of the waterfall gave the CPU its next task, in order; -d/--debug prints it beside
 * each long wait (trace_slow_ro).
 */
enum disp_step {
	DISP_NONE,		/* nothing queued: the CPU idles or its runner goes on */
	DISP_WAIT_BOUND,	/* a task past the wait bound (wait_bound()) */
	DISP_STARVATION_RESCUE,	/* an overflow DSQ older than the starvation age */
	DISP_DRAIN_OFFLINE,	/* the own DSQ of a CPU that went offline */
	DISP_KEEP_PREV,		/* @prev keeps the CPU (keep_prev(), preempt.bpf.h) */
	DISP_OWE_LOCAL,		/* own DSQ, owed after a rescue served the overflow */
	DISP_OVERFLOW_RESCUE,	/* an overflow DSQ older than the rescue age */
	DISP_CODEL_RESCUE,	/* the overflow, whatever its age: this CPU's waits stalled */
	DISP_OWN_PCPU,		/* own per-CPU DSQ, cache-hot */
	DISP_STEAL_AGED,	/* a nearby CPU's DSQ, work older than a preemption threshold */
	DISP_NODE_DSQ,		/* the node's interactive overflow */
	DISP_STEAL_INTERACTIVE,	/* a nearby CPU's DSQ whose head is not BATCH, any age */
	DISP_COOP,		/* --coop: the node's cooperative groups (dispatch_coop()) */
	DISP_BATCH_DSQ,		/* the node's batch overflow */
	DISP_STEAL_ANY,		/* a nearby CPU's DSQ, anything */
	DISP_OTHER_NODE,	/* other nodes' overflow DSQs */
	DISP_KEEP_RUNNING,	/* dispatch(), after the waterfall found nothing */
};

static __always_inline enum disp_step dispatch_waterfall(s32 cpu, struct task_struct *prev)
{
	struct topo_params *tp = topo();
	struct tuning_knobs *k = knobs();
	u32 node = cpu_node(cpu), i;
	s32 victim, queued = -1;

	if (!tp)
		return DISP_NONE;

	/* Safety nets first: neither bound can be gated by anything below. */
	if (wait_bound(cpu, node))
		return DISP_WAIT_BOUND;
	if (service_aged_overflow(cpu, node, tp->starvation_rescue_ns, 0)) {
		STAT_INC(nr_starvation_rescue);
		cpu_ctx(cpu)->owe_local = 1;
		return DISP_STARVATION_RESCUE;
	}
	/* The call only when a scan found one: dispatch() is the hottest path we have. */
	if (stranded_cpu >= 0)
		rescue_stranded();
	if (drain_offline())
		return DISP_DRAIN_OFFLINE;
	if (prev && keep_prev(prev, cpu, node, k, tp))
		return DISP_KEEP_PREV;
	/*
	 * With batch slices longer than the rescue threshold, the overflow is aged again at every
	 * dispatch; alternating with the own DSQ keeps a woken interactive task queued here from
	 * waiting behind one rescued hog after another.
	 */
	if (cpu_ctx(cpu)->owe_local) {
		cpu_ctx(cpu)->owe_local = 0;
		if (move_pcpu(cpu))
			return DISP_OWE_LOCAL;
	}
	if (k && service_aged_overflow(cpu, node, tp->overflow_rescue_ns, k->batch_slice_ns)) {
		STAT_INC(nr_overflow_rescue);
		codel_note_rescue();
		cpu_ctx(cpu)->owe_local = 1;
		return DISP_OVERFLOW_RESCUE;
	}
	/*
	 * CoDel: this CPU's waits stayed above the target for a whole interval. Serving the shared
	 * overflow now, whatever its age, hands the queued work to a CPU that is about to be free.
	 */
	if (codel_cpu(cpu)->stalled) {
		codel_cpu(cpu)->stalled = 0;
		if (service_aged_overflow(cpu, node, 1, k ? k->batch_slice_ns : 0)) {
			STAT_INC(nr_overflow_rescue);
			codel_note_rescue();
			cpu_ctx(cpu)->owe_local = 1;
			return DISP_CODEL_RESCUE;
		}
	}

	/* DISP_OWN_PCPU: what was placed on this CPU goes first, cache-hot. */
	if (move_pcpu(cpu))
		return DISP_OWN_PCPU;

	/*
	 * DISP_STEAL_AGED: steal from the nearest per-CPU DSQs by R_eff, within the tau-derived
	 * budget, work that has waited there a preemption threshold: younger work is left to its own
	 * CPU, where a consumer queued behind its producer reads a batch (see enqueue()).
	 */
	victim = rank_walk(NULL, cpu, tp->spill_search_budget, RANK_WANT_QUEUED,
			   k ? k->preempt_thresh_ns : 0, tp, &queued);
	if (victim >= 0 && move_pcpu(victim)) {
		STAT_INC(nr_steals);
		return DISP_STEAL_AGED;
	}

	/* DISP_NODE_DSQ, then DISP_BATCH_DSQ: the node overflow DSQs, interactive before batch. */
	if (move_shared_near(node_dsq(node), &node_dsq_since[node & (MAX_NODES - 1)], cpu))
		return DISP_NODE_DSQ;
	/*
	 * DISP_STEAL_INTERACTIVE: interactive work of any age queued on a nearby CPU goes before a
	 * BATCH task here. A producer's consumers queue on the producer's CPU (enqueue()); taking a
	 * busy loop from the batch DSQ instead left them to that one CPU until they had waited a
	 * preemption threshold, and busy loops beside them took more than twice the CPU they get
	 * under the fair class.
	 */
	if (queued >= 0 && pcpu_head_interactive(queued) && move_pcpu(queued)) {
		STAT_INC(nr_steals);
		return DISP_STEAL_INTERACTIVE;
	}
	/* The call only with --coop: the verifier then leaves it out of this program. */
	if (coop_on_ro) {
		/* One clock read for the three: a dispatch takes microseconds, a quantum 20 ms. */
		u64 now = bpf_ktime_get_ns();
		int r = dispatch_coop(cpu, coop_prev_group(prev), coop_prev_due(prev, cpu, now), now);

		if (r == COOP_KEEP_PREV && prev)
			coop_keep_prev(prev, cpu, now);
		if (r)
			return DISP_COOP;
	}
	if (move_shared_near(batch_dsq(node), &batch_dsq_since[node & (MAX_NODES - 1)], cpu))
		return DISP_BATCH_DSQ;
	/*
	 * DISP_STEAL_ANY: rather than go idle, steal per-CPU work of any age. The walk above found
	 * the nearest; its owner may have taken that work since, and then the row is walked again.
	 */
	if (queued >= 0 &&
	    (move_pcpu(queued) ||
	     ((queued = rank_pick(NULL, cpu, tp->spill_search_budget, RANK_WANT_QUEUED, 0, tp)) >= 0 &&
	      move_pcpu(queued)))) {
		STAT_INC(nr_steals);
		return DISP_STEAL_ANY;
	}

	/*
	 * DISP_OTHER_NODE: the other nodes' overflow DSQs, those whose age says they hold work. A
	 * lookup of each made a dispatch that finds nothing, the common one on an idle CPU of a big
	 * machine, two hash lookups per other node (a quarter of its cost at 4 nodes). A node DSQ's
	 * age can be lost (insert_shared() reads before it swaps); such work is then left to its own
	 * node's CPUs, which count their DSQs, until the next insert there sets the age again.
	 */
	bpf_for(i, 0, MAX_NODES) {
		u32 n = i & (MAX_NODES - 1);

		if (i >= nr_nodes_ro)
			break;
		if (i == node)
			continue;
		if ((node_dsq_since[n] && move_shared_near(node_dsq(i), &node_dsq_since[n], cpu)) ||
		    (batch_dsq_since[n] && move_shared_near(batch_dsq(i), &batch_dsq_since[n], cpu)))
			return DISP_OTHER_NODE;
	}
	return DISP_NONE;
}

#endif /* __PANDEMONIUM_DISPATCH_BPF_H */
