/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sched_yield(2): "others first". Without ops.yield the kernel only zeroes the slice, and a yield
 * then looks like a slice that ran out: keep_prev() handed a task that is not BATCH its CPU
 * straight back, and every yielder went back to its DSQ at a vtime that had hardly been charged,
 * ahead of what it yielded to. Spin-yield loops (OpenBLAS's thread server, MPI progress loops)
 * wait that way for a thread that is queued behind them.
 */
#ifndef __PANDEMONIUM_YIELD_BPF_H
#define __PANDEMONIUM_YIELD_BPF_H

/*
 * The vtime of the head of @dsq, or @floor if it is empty or its head is before @floor. One
 * step of the iterator: the head of a vtime-ordered DSQ is its least vtime.
 */
static __always_inline u64 dsq_head_after(u64 dsq, u64 floor)
{
	struct task_struct *p;

	if (scx_bpf_dsq_nr_queued(dsq) <= 0)
		return floor;
	bpf_for_each(scx_dsq, p, dsq, 0) {
		if (time_before(floor, p->scx.dsq_vtime))
			floor = p->scx.dsq_vtime;
		break;
	}
	return floor;
}

/*
 * @p called sched_yield() on @cpu. With nothing queued where this CPU's dispatch would look first
 * (its local DSQ, its own DSQ, its node's two overflow DSQs) it keeps its slice and runs on, as
 * EEVDF does with one task on the runqueue: a yield loop calls this millions of times a second
 * and that case must cost a few DSQ counts, not a trip through schedule(). Work queued on other
 * CPUs' own DSQs is theirs to run; a CPU with nothing else steals it anyway.
 *
 * Otherwise the slice ends and @p goes behind what waits: its vtime moves up to the heads of
 * those DSQs, so whichever of them this CPU's dispatch takes, @p queues after it, and the lag
 * that a yielder never used is forfeited rather than banked, as EEVDF forfeits a yielder's
 * vruntime. keep_prev() does not hand the CPU back while `yielded` is set.
 */
static __always_inline void yield_cpu(struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);
	u32 node = cpu_node(cpu);
	struct task_ctx *tctx;
	u64 v;

	if (scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu) <= 0 && scx_bpf_dsq_nr_queued(cpu) <= 0 &&
	    scx_bpf_dsq_nr_queued(node_dsq(node)) <= 0 &&
	    scx_bpf_dsq_nr_queued(batch_dsq(node)) <= 0) {
		STAT_INC(nr_yield_kept);
		return;
	}
	p->scx.slice = 0;
	if (!(tctx = task_ctx(p)))
		return;
	tctx->yielded = 1;
	v = dsq_head_after(cpu, p->scx.dsq_vtime);
	v = dsq_head_after(node_dsq(node), v);
	p->scx.dsq_vtime = dsq_head_after(batch_dsq(node), v);
	STAT_INC(nr_yield_handoffs);
}

#endif /* __PANDEMONIUM_YIELD_BPF_H */
