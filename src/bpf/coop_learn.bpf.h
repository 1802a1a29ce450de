/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --coop-learn: a cooperative group recognised by what its threads do, not by its name
 * (issue #34). The evidence, per process (coop_procs):
 *   - mates: a BATCH thread woken by a thread of its own process (a futex barrier, a condition
 *     variable, a pool's job queue), or a BATCH thread's sched_yield() (a spin-yield barrier);
 *   - spins and sleeps: a BATCH thread's run that ended still runnable, without a yield (its
 *     CPU went to another task), and a BATCH thread's sleep. A team whose waits spin
 *     (OMP_WAIT_POLICY=active, libgomp's default spin) neither wakes nor yields: its threads
 *     look like busy loops, one by one. What tells it from single-threaded busy loops is that
 *     two or more of its threads are cut short in turn, none of them sleeping: they are
 *     runnable at once, and the team needs them to run at once. Counted as `spinners`: the
 *     flushes of spins that came from another thread than the flush before;
 *   - crowded: a thread's enqueue found no idle CPU, so its process had more runnable threads
 *     than the CPUs it could get.
 * The hot paths only bump a counter in the task's own context; every COOP_FLUSH mate events or
 * COOP_SPIN_FLUSH spins the thread adds its counts into its process's entry. The daemon reads
 * the entries once a second and learns, per command, the names whose processes showed either
 * behaviour while crowded (src/coop_learn.rs, the procdb), and writes them into coop_comms as
 * COOP_LEARNED. A name so learned buys nothing by itself: a process of that name joins the
 * groups only once its own threads showed it (COOP_PROOF mate events, or COOP_PROOF spins from
 * COOP_PROOF_SPINNERS turns of its threads with few sleeps) and a crowded enqueue, and the
 * daemon deletes its entry (withdrawing the treatment) when the behaviour stops.
 * A process of CPU-bound threads that never wait on each other co-runs as well, and is treated
 * as a team (its threads run together in turns); the README gives what that costs the tasks
 * beside it.
 */
#ifndef __PANDEMONIUM_COOP_LEARN_BPF_H
#define __PANDEMONIUM_COOP_LEARN_BPF_H

/* Co-running threads that rarely sleep, by @e's counts so far (coop_flush()). */
static __always_inline bool coop_corun(const struct coop_proc *e)
{
	return e->spins >= COOP_PROOF && e->spinners >= COOP_PROOF_SPINNERS &&
	       e->sleeps * COOP_SLEEP_RATIO <= e->spins;
}

/*
 * Adds @tctx's counts into its process's entry and grants the treatment when the process's name
 * is learned and its own threads earned it. A process of one thread is no team: its yields
 * (a spin-yield loop) count, but there is no mate to run beside.
 */
static __noinline void coop_flush(struct task_struct *p, struct task_ctx *tctx)
{
	struct coop_proc fresh = {}, *e;
	bool spun = tctx->coop_spins >= COOP_SPIN_FLUSH;
	u32 tgid = p->tgid, pid = p->pid;
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
	__sync_fetch_and_add(&e->spins, tctx->coop_spins);
	__sync_fetch_and_add(&e->sleeps, tctx->coop_sleeps);
	/* Two threads flushing at once may count one turn twice or none: a count, not a proof. */
	if (spun && e->last_spinner != pid) {
		e->last_spinner = pid;
		__sync_fetch_and_add(&e->spinners, 1);
	}
	tctx->coop_mates = 0;
	tctx->coop_crowd = 0;
	tctx->coop_spins = 0;
	tctx->coop_sleeps = 0;
	if (e->granted) {
		tctx->flags |= TF_COOP;
		return;
	}
	if ((e->mates < COOP_PROOF && !coop_corun(e)) || !e->crowded ||
	    BPF_CORE_READ(p, signal, nr_threads) < 2)
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

/*
 * stopping(): a BATCH thread's run ended. Still runnable and not yielding, its CPU went to
 * another task (a slice or a group's turn ended with work queued, or a waker preempted it):
 * one spin, and every COOP_SPIN_FLUSH of them a write to its process. A sleep is counted and
 * added with them. A yield is a mate event already (pandemonium_yield()).
 */
static __always_inline void coop_note_stop(struct task_struct *p, struct task_ctx *tctx,
					   bool runnable)
{
	if (tctx->tier != TIER_BATCH)
		return;
	if (!runnable)
		tctx->coop_sleeps++;
	else if (!tctx->yielded && ++tctx->coop_spins >= COOP_SPIN_FLUSH)
		coop_flush(p, tctx);
}

#endif /* __PANDEMONIUM_COOP_LEARN_BPF_H */
