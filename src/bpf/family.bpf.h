/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A fork/exit chain is charged as one task. A shell looping over a short command is a chain of
 * new tasks, each of which started at the clock, ran a few milliseconds and exited, so no link
 * ever ran past its share (outran_share()); and as each link started it dragged the clock along
 * (advance_vtime_now(), clock_to_head()), so the chain as a whole never got ahead of the clock
 * either, while the BATCH work beside it fell behind, and every requeue floored that work back
 * up to the clock. 4 busy loops beside 2 such loops at 2 CPUs got 10-16 % of the CPU (74-87 %
 * under the fair class), and a CPU-bound program launched beside them took 4-5x as long as under
 * it.
 *
 * Here a parent woken from its child's exit takes up the vtime the child reached, and is a link
 * (the kin mark) until it next sleeps; a child a link forks starts at its parent's vtime and is a
 * link too. The chain's vtime then advances by what all its links ran, and what it is measured
 * against is the head of the batch DSQ, the least vtime the BATCH work beside it is owed, which
 * the chain cannot drag: more than two shared batch slices ahead of it (chain_ahead()), a link
 * queues with the BATCH work in vtime order, preempts none of it and gets no handoff.
 *
 * Only links are held so close to the head. Busy loops in a fair rotation wait one or two batch
 * slices behind the clock and a BATCH task woken from a long sleep its whole credit (lag cap x
 * lag scale), so any task near the clock looked ahead of such a head: held to it, frame tasks
 * beside busy loops waited in the batch DSQ (P99 24-34 ms against 5-8). A task that runs more
 * than it sleeps is measured against the furthest vtime BATCH work started at, with a
 * preemption threshold of room (outran_batch()). A shell that sleeps between commands (a
 * terminal waiting for input) loses the mark at that sleep, so a program launched from it starts
 * at the clock as any new task does.
 */
#ifndef __PANDEMONIUM_FAMILY_BPF_H
#define __PANDEMONIUM_FAMILY_BPF_H

/*
 * A wakeup's vtime (task_vtime(), handoff_cpu(): the task is in no DSQ, so its dsq_vtime may be
 * written): raised to what an exited child reached.
 */
static __always_inline u64 family_vtime(struct task_struct *p, struct task_ctx *tctx)
{
	if (time_before(p->scx.dsq_vtime, tctx->family_vt)) {
		p->scx.dsq_vtime = tctx->family_vt;
		tctx->kin = 1;
	}
	return p->scx.dsq_vtime;
}

/* enable() of @p, forked by @parent: a link's child starts where the link is, and is one. */
static __always_inline u64 family_start_vtime(struct task_struct *p, struct task_ctx *tctx,
					      struct task_struct *parent, u64 start)
{
	struct task_ctx *ptctx;
	u64 vt = parent->scx.dsq_vtime;

	if (p->real_parent != parent || !(ptctx = task_ctx(parent)) || !ptctx->kin)
		return start;
	tctx->kin = 1;
	return time_before(start, vt) ? vt : start;
}

/*
 * A process exits (its group leader, sched_process_exit): its parent takes up the vtime it
 * reached, with its last run, which no stopping() has charged yet. Only a child of the parent's
 * cgroup and weight: another group's vtime runs at its own share (charge_task()), and a lighter
 * child's, charged up to 68x a nice 0 one's, would push its parent past the work it waits beside.
 * A child that slept stays near the clock, so its exit costs its parent little.
 */
static __always_inline void family_note_exit(struct task_struct *p, u64 now)
{
	struct task_struct *parent;
	struct task_ctx *tctx, *ptctx;
	u64 vt;

	if (p->pid != p->tgid || !(tctx = task_ctx(p)))
		return;
	parent = p->real_parent;
	if (!parent || !(ptctx = task_ctx(parent)) || ptctx->cgid != tctx->cgid ||
	    tctx->weight < ptctx->weight)
		return;
	vt = p->scx.dsq_vtime;
	if (tctx->last_run_at && now > tctx->last_run_at)
		vt += charge_vtime(now - tctx->last_run_at, tctx->weight);
	if (time_before(ptctx->family_vt, vt))
		ptctx->family_vt = vt;
}

/*
 * outran_share() for a link: is @vtime more than two shared batch slices ahead of the head of
 * @node's batch DSQ? The head waits about one rotation of the BATCH work (a slice each), so a
 * link near the clock is one slice ahead of it; one more and the chain has had its turn. The
 * mark bounds how long a held link waits: it queues behind every BATCH task below its vtime, and
 * those run it off a slice at a time. A lag cap and a whole batch slice above the head (44 ms at
 * 2 CPUs) held back-to-back launches beside two busy loops per CPU 68-82 ms at their P99, against
 * the fair class's 24-35; two shared slices hold them 29-33.
 *
 * A global function, verified once on its own: inlined, its DSQ walk was verified again along
 * every path of enqueue() and dispatch() that reach it (a quarter more instructions each).
 */
__noinline int chain_ahead(u64 vtime, u32 node)
{
	struct tuning_knobs *k = knobs();
	u64 dsq = batch_dsq(node);
	s32 waiting = scx_bpf_dsq_nr_queued(dsq);
	struct task_struct *q;
	int ahead = 0;

	if (!k || waiting <= 0)
		return 0;
	bpf_for_each(scx_dsq, q, dsq, 0) {
		ahead = time_before(q->scx.dsq_vtime + 2 * shared_batch_slice(k, waiting), vtime);
		break;
	}
	return ahead;
}

#endif /* __PANDEMONIUM_FAMILY_BPF_H */
