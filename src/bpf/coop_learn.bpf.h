/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --coop-learn: a cooperative group recognised by what its threads do, not by its name
 * (issue #34). The evidence, per process (coop_procs):
 *   - mates: a BATCH thread woken by a thread of its own process (a futex barrier, a condition
 *     variable, a pool's job queue), or a BATCH thread's sched_yield() (a spin-yield barrier);
 *   - crowded: a thread's enqueue found no idle CPU, so its process had more runnable threads
 *     than the CPUs it could get.
 * The hot paths only bump a counter in the task's own context; every COOP_FLUSH mate events
 * the thread adds both into its process's entry. The daemon reads the entries once a second and
 * learns, per command, the names whose processes showed both (src/coop_learn.rs, the procdb),
 * and writes them into coop_comms as COOP_LEARNED. A name so learned buys nothing by itself: a
 * process of that name joins the groups only once its own threads showed COOP_PROOF mate
 * events and a crowded enqueue, and the daemon deletes its entry (withdrawing the treatment)
 * when its mate events stop.
 */
#ifndef __PANDEMONIUM_COOP_LEARN_BPF_H
#define __PANDEMONIUM_COOP_LEARN_BPF_H

/*
 * Adds @tctx's counts into its process's entry and grants the treatment when the process's name
 * is learned and its own threads earned it. A process of one thread is no team: its yields
 * (a spin-yield loop) count, but there is no mate to run beside.
 */
static __noinline void coop_flush(struct task_struct *p, struct task_ctx *tctx)
{
	struct coop_proc fresh = {}, *e;
	u32 tgid = p->tgid;
	struct comm_key key;
	u8 *v;

	e = bpf_map_lookup_elem(&coop_procs, &tgid);
	if (!e) {
		bpf_map_update_elem(&coop_procs, &tgid, &fresh, BPF_NOEXIST);
		if (!(e = bpf_map_lookup_elem(&coop_procs, &tgid)))
			return;
	}
	__sync_fetch_and_add(&e->mates, tctx->coop_mates);
	__sync_fetch_and_add(&e->crowded, tctx->coop_crowd);
	tctx->coop_mates = 0;
	tctx->coop_crowd = 0;
	if (e->granted) {
		tctx->flags |= TF_COOP;
		return;
	}
	if (e->mates < COOP_PROOF || !e->crowded || BPF_CORE_READ(p, signal, nr_threads) < 2)
		return;
	leader_comm(p, &key);
	v = bpf_map_lookup_elem(&coop_comms, &key);
	if (!v || *v != COOP_LEARNED)
		return;
	if (!__sync_val_compare_and_swap(&e->granted, 0, 1))
		STAT_INC(nr_coop_grants);
	tctx->flags |= TF_COOP;
}

/*
 * One mate event of @p: a counter, and every COOP_FLUSH of them a write to its process. Only a
 * BATCH thread's count: a team's threads compute between their waits, and the treatment they
 * get (no wakeup preemption, FIFO) is what CPU-bound work can take. Threads that pass messages
 * in short bursts wake each other as often while crowded: hackbench -T, counted too, was
 * learned as a group within 20 s beside busy loops, and is not with this test. A libgomp team
 * whose regions are short enough to score as interactive (coopbench's passive waits) is not
 * seen either, and loses nothing by it: --coop gave it 1.00x EEVDF's makespan.
 */
static __always_inline void coop_note_mate(struct task_struct *p, struct task_ctx *tctx)
{
	if (tctx->tier == TIER_BATCH && ++tctx->coop_mates >= COOP_FLUSH)
		coop_flush(p, tctx);
}

/*
 * select_cpu(): the waker is current. A fork's wakeup is not a wait on a mate (every thread
 * starts so), nor is a task waking itself.
 */
static __always_inline void coop_note_wake(struct task_struct *p, struct task_ctx *tctx,
					   u64 wake_flags)
{
	struct task_struct *w = bpf_get_current_task_btf();

	if (!(wake_flags & SCX_WAKE_FORK) && w->tgid == p->tgid && w->pid != p->pid)
		coop_note_mate(p, tctx);
}

#endif /* __PANDEMONIUM_COOP_LEARN_BPF_H */
