/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --coop COMM: the threads of a process whose leader's comm the administrator named form a
 * cooperative group (issue #34), as USF / SCHED_COOP runs an OpenMP team or a BLAS pool:
 *   - a group's threads wait in their node's coop DSQ, FIFO, and never preempt a runner there:
 *     a thread keeps its CPU until it blocks, yields, or its group's quantum ends;
 *   - the group that holds a node's quantum (COOP_QUANTUM_NS) runs first on each of its CPUs
 *     that dispatches, so its threads run together and a spinner at a barrier does not burn its
 *     slice while the thread it waits for is queued behind it (time-slicing split a team across
 *     the CPUs: libgomp's active wait took 1.3-4.8 s where one process alone takes under 1 s);
 *   - when the quantum ends, or the group has nothing queued, the next group queued there takes
 *     the node's CPUs as each one dispatches: groups rotate whole;
 *   - sched_yield() with a mate queued gives the CPU to that mate first.
 * Work outside the groups is untouched: wakers that are not in the group preempt a group's
 * runner as any BATCH runner, and every step of the dispatch waterfall before DISP_COOP (the
 * wait bound, the rescues, the CPUs' own and the interactive DSQs) goes first. A quantum's
 * group goes before the batch overflow while the quantum lasts; once it has ended, BATCH work
 * whose vtime is due before the groups' takes the CPU first (outside_due()). The wait bound
 * scans the coop DSQ as it does the others.
 */
#ifndef __PANDEMONIUM_COOP_BPF_H
#define __PANDEMONIUM_COOP_BPF_H

/* How far into a coop DSQ a dispatch or a yield looks for a group's task. */
#define COOP_SCAN 16

/* Per node: tgid + 1 of the group holding the quantum (0: none yet), and since when. */
u64 coop_owner[MAX_NODES];
u64 coop_quantum_at[MAX_NODES];
/* First-insertion stamps, for the helpers the coop DSQs share with the others (no age rule). */
u64 coop_dsq_since[MAX_NODES];

/* tgid + 1 of @p's cooperative group, 0 when it has none: a group id that is never 0. */
static __always_inline u64 coop_group(const struct task_struct *p, const struct task_ctx *tctx)
{
	return (tctx->flags & TF_COOP) ? (u64)p->tgid + 1 : 0;
}

/*
 * select_cpu() for a group's thread: an idle CPU by the kernel's order (the last CPU, its LLC,
 * its node), else the coop DSQ from enqueue(). None of the other wakeup paths: each can take a
 * busy CPU (the waker's, a claimed runner) whose runner may be a mate.
 */
static __noinline s32 coop_select(struct task_struct *p, struct task_ctx *tctx, s32 prev_cpu,
				u64 wake_flags)
{
	struct tuning_knobs *k = knobs();
	struct topo_params *tp = topo();
	bool is_idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);

	if (is_idle && tp) {
		STAT_INC(nr_idle_hits);
		task_vtime(p, tctx, SCX_ENQ_WAKEUP, k, tp);
		insert_local(p, tctx, cpu, task_slice(tctx, k), 0);
	}
	return cpu;
}

/*
 * enqueue() for a group's thread that found no idle CPU: FIFO, no preemption. This and
 * coop_select() are not inlined: in a branch the verifier drops without --coop, a call leaves the
 * rest of the program's code as it was.
 */
static __noinline void coop_enqueue(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
				    u64 slice, u64 enq_flags)
{
	u32 node = cpu_node(cpu);
	u64 now = bpf_ktime_get_ns();

	mark_enqueued(tctx, now, coop_dsq(node), enq_flags);
	scx_bpf_dsq_insert(p, coop_dsq(node), slice, enq_flags);
	mark_shared_since(&coop_dsq_since[node & (MAX_NODES - 1)], now);
}

/*
 * running(): a thread of the group holding the quantum runs to the quantum's end, whatever its
 * tier's slice: an interactive slice (a passive waiter's, a new thread's) would end its run
 * mid-region. Another group's thread runs a preemption threshold at most while the quantum
 * lasts (a filler, dispatch_coop()). And the proof that mates never preempt each other: a
 * thread that starts where a mate was cut short (coop_stopping()) counts one, and the gate's coop
 * layer holds the count at 0.
 */
static __always_inline void coop_running(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
					 u64 now)
{
	u32 n = cpu_node(cpu) & (MAX_NODES - 1);
	u64 g = coop_group(p, tctx), at = coop_quantum_at[n];
	struct cpu_ctx *c = cpu_ctx(cpu);

	/* The thread itself again (a higher class took the CPU a moment) is no mate. */
	if (g && c->run_group == g && c->cut_pid != p->pid)
		STAT_INC(nr_coop_mate_preempts);
	c->run_group = 0;
	if (!g || now - at >= COOP_QUANTUM_NS)
		return;
	if (g == coop_owner[n])
		p->scx.slice = at + COOP_QUANTUM_NS - now;
	else if (p->scx.slice > knobs()->preempt_thresh_ns)
		p->scx.slice = knobs()->preempt_thresh_ns;
}

/*
 * stopping(), before the runner is unpublished: a group's thread that stops still runnable,
 * without a yield, before it ran the slice it started with (coop_slice, set in running() once
 * runner_started() has shortened it for interactive work, and zeroed when the tick cuts it for
 * such work) was preempted: a kick or a preempting insertion zeroes the slice, so the slice left
 * cannot tell. A runner a waker claimed (claim_runner() unpublished it) was cut for that waker,
 * not for a mate, whatever then runs here: another CPU may have run the waker first. Its CPU
 * remembers its group until the next task starts there, or until a higher class takes it
 * (cpu_release()).
 */
static __always_inline void coop_stopping(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
					  u64 used, bool runnable)
{
	u64 g = coop_group(p, tctx);
	struct cpu_ctx *c = cpu_ctx(cpu);
	bool claimed = c->run_kind == RUN_NONE && !tctx->wait_rescued;

	c->run_group = g && runnable && !tctx->yielded && !claimed && used < tctx->coop_slice ? g : 0;
	c->cut_pid = p->pid;
}

/*
 * sched_yield() by a group's thread while its node's coop DSQ holds work ends its run, as USF's
 * does (yield_cpu() would keep it running while only the coop DSQ holds work):
 *   - a thread of the group holding the quantum hands the CPU to a queued mate
 *     (dispatch_coop() takes the group named in coop_yield_to first): a spin-yield barrier's
 *     waiter lets the thread it waits for run in its place;
 *   - with no mate queued (they run on the other CPUs), or from any other group's thread, the
 *     CPU goes by dispatch_coop()'s order: the holder's queued threads, else another group's as
 *     a filler. Kept running instead, the waiter spun on a CPU another group's thread could have
 *     used: two spin-yield processes at 2 vCPUs took 4.2 s against 2.7-3.7 s without --coop.
 */
static __always_inline bool coop_yield(struct task_struct *p)
{
	struct task_ctx *tctx = task_ctx(p);
	s32 cpu = scx_bpf_task_cpu(p);
	u32 n = cpu_node(cpu) & (MAX_NODES - 1);
	u64 dsq = coop_dsq(n), g;
	struct task_struct *q;
	u32 seen = 0;

	if (!tctx || !(g = coop_group(p, tctx)) || scx_bpf_dsq_nr_queued(dsq) <= 0)
		return false;
	p->scx.slice = 0;
	tctx->yielded = 1;
	if (g == coop_owner[n] && bpf_ktime_get_ns() - coop_quantum_at[n] < COOP_QUANTUM_NS) {
		bpf_for_each(scx_dsq, q, dsq, 0) {
			if (++seen > COOP_SCAN)
				break;
			if ((u64)q->tgid + 1 != g)
				continue;
			cpu_ctx(cpu)->coop_yield_to = g;
			STAT_INC(nr_coop_yield_handoffs);
			return true;
		}
	}
	STAT_INC(nr_yield_handoffs);
	return true;
}

/*
 * Moves the first of the head tasks of @dsq that @cpu may run and that is of @group (@other:
 * of any other group) to @cpu's local DSQ; the group it moved, 0 if none.
 */
static __always_inline u64 coop_take(s32 cpu, u64 dsq, u64 group, bool other)
{
	struct task_struct *p;
	u32 seen = 0;
	u64 g;

	bpf_for_each(scx_dsq, p, dsq, 0) {
		if (++seen > COOP_SCAN)
			break;
		g = (u64)p->tgid + 1;
		if ((g == group) == other || !bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			continue;
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0))
			return g;
	}
	return 0;
}

/* The quantum left to @cpu's node's holder, 0 once it has ended. */
static __always_inline u64 coop_left(s32 cpu, u64 now)
{
	u64 at = coop_quantum_at[cpu_node(cpu) & (MAX_NODES - 1)];

	return now - at < COOP_QUANTUM_NS ? at + COOP_QUANTUM_NS - now : 0;
}

/*
 * Once a quantum has ended: is work outside the groups due before the coop DSQ's head, by vtime?
 * That work is the batch overflow's head, and @prev_due (coop_prev_due()): the runner that just
 * used its slice here, which waits in no DSQ yet. Groups taking every ended quantum while BATCH
 * work waited left that work the rescues alone: two busy loops beside a learned 2-thread spinner
 * at 2 CPUs got under half their fair share. A group's thread is charged its quantum as any
 * run, so groups and other work now take turns by weight, a whole quantum at a time.
 */
static __always_inline bool outside_due(s32 cpu, u32 node, u64 dsq, u64 prev_due)
{
	struct task_struct *p;
	u64 head = 0, out = prev_due;

	bpf_for_each(scx_dsq, p, dsq, 0) {
		head = p->scx.dsq_vtime;
		break;
	}
	/* A head bound to other CPUs is not this one's to run: the CPU would idle past the groups. */
	bpf_for_each(scx_dsq, p, batch_dsq(node), 0) {
		if (bpf_cpumask_test_cpu(cpu, p->cpus_ptr) &&
		    (!out || time_before(p->scx.dsq_vtime, out)))
			out = p->scx.dsq_vtime;
		break;
	}
	return out && time_before(out, head);
}

/* dispatch_coop()'s answers besides 0 (nothing for this CPU). */
enum coop_disp {
	COOP_MOVED = 1,	    /* a group's thread is in the local DSQ */
	COOP_KEEP_PREV = 2, /* the holder's thread that ran here goes on */
};

/*
 * DISP_COOP, in order:
 *   - a mate a yield named (coop_yield()), or the next queued thread of the group holding the
 *     quantum;
 *   - the holder's thread that ran here (@prev_group: its group, 0 if none, or it blocked or
 *     yielded), whose slice ended before the quantum (a preemption threshold while interactive
 *     work waited near, runner_started()): it goes on, as a team keeps its CPUs for the quantum;
 *   - while the quantum lasts, another group's thread as a filler for a preemption threshold
 *     (coop_running()): the holder's threads all run elsewhere or wait, and a filler that took
 *     the quantum held the CPU 20 ms from the holder's thread once it woke; a holder that took
 *     the quantum whenever a CPU found nothing of it queued split both teams, one CPU each;
 *   - once the quantum has ended, BATCH work due before the groups (outside_due()) goes first;
 *     else the next group queued here takes the quantum, else the holder anew.
 * A global function, verified once on its own and only when --coop is given: inlined, its DSQ
 * walks grew the dispatch program's verified instructions by over a fifth.
 */
__noinline int dispatch_coop(s32 cpu, u64 prev_group, u64 prev_due, u64 now)
{
	u32 node = cpu_node(cpu), n = node & (MAX_NODES - 1);
	u64 dsq = coop_dsq(node), owner = coop_owner[n], g;
	bool live = owner && coop_left(cpu, now);
	struct cpu_ctx *c = cpu_ctx(cpu);
	u64 want = c->coop_yield_to;

	if (want)
		c->coop_yield_to = 0;
	if (scx_bpf_dsq_nr_queued(dsq) <= 0)
		return live && prev_group == owner ? COOP_KEEP_PREV : 0;
	if (want && coop_take(cpu, dsq, want, false)) {
		g = want;
	} else if (live && coop_take(cpu, dsq, owner, false)) {
		g = owner;
	} else if (live && prev_group == owner) {
		return COOP_KEEP_PREV;
	} else if (live) {
		if (!(g = coop_take(cpu, dsq, owner, true)))
			return 0;
		STAT_INC(nr_coop_fillers);
	} else {
		if (outside_due(cpu, node, dsq, prev_due))
			return 0;
		g = coop_take(cpu, dsq, owner, true);
		if (!g && !(g = coop_take(cpu, dsq, owner, false)))
			return 0;
		if (g != owner)
			STAT_INC(nr_coop_rotations);
		coop_owner[n] = g;
		coop_quantum_at[n] = now;
	}
	if (scx_bpf_dsq_nr_queued(dsq) == 0)
		coop_dsq_since[n] = 0;
	STAT_INC(nr_coop_dispatches);
	return COOP_MOVED;
}

/* dispatch_coop()'s @prev_group. */
static __always_inline u64 coop_prev_group(struct task_struct *prev)
{
	struct task_ctx *t;

	if (!prev || !(prev->scx.flags & SCX_TASK_QUEUED) || !(t = task_ctx(prev)) || t->yielded)
		return 0;
	return coop_group(prev, t);
}

/*
 * dispatch_coop()'s @prev_due: the vtime at which @prev (runnable, in no group) is due, its run
 * so far charged; 0 if none, or while @cpu's node's quantum lasts (dispatch_coop() reads it only
 * once the quantum has ended, and most dispatches come before that).
 */
static __always_inline u64 coop_prev_due(struct task_struct *prev, s32 cpu, u64 now)
{
	struct task_ctx *t;

	if (!prev || !(prev->scx.flags & SCX_TASK_QUEUED) || !(t = task_ctx(prev)) ||
	    (t->flags & TF_COOP) || t->yielded || !t->last_run_at || coop_left(cpu, now))
		return 0;
	return prev->scx.dsq_vtime + charge_vtime(now - t->last_run_at, t->weight);
}

/*
 * COOP_KEEP_PREV: @prev runs to the quantum's end, and a cut from here on counts
 * (coop_stopping()).
 */
static __always_inline void coop_keep_prev(struct task_struct *prev, s32 cpu, u64 now)
{
	struct task_ctx *t = task_ctx(prev);
	u64 left = coop_left(cpu, now);

	prev->scx.slice = left > MIN_SLICE_NS ? left : MIN_SLICE_NS;
	if (t) {
		u64 ran = now - t->last_run_at;

		t->coop_slice = ran + prev->scx.slice;
		runner_kept(prev, t, cpu, charge_vtime(ran, t->weight));
	}
	STAT_INC(nr_keep_running);
}

#endif /* __PANDEMONIUM_COOP_BPF_H */
