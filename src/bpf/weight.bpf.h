/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * How much CPU a task is owed: what the administrator set (nice, SCHED_IDLE, SCHED_BATCH, the
 * cgroup's cpu.weight and cpu.idle), never what the task says about itself. Vtime is charged by
 * this weight, so tasks of one tier share CPU as the fair class would share it.
 */
#ifndef __PANDEMONIUM_WEIGHT_BPF_H
#define __PANDEMONIUM_WEIGHT_BPF_H

/* The fair class's SCHED_IDLE weight: 1/341 of a nice 0 task. */
#define IDLE_POLICY_WEIGHT 3
#define MAX_RT_PRIO 100
#define NICE_WIDTH 40
#ifndef SCHED_BATCH
#define SCHED_BATCH 3
#endif
#ifndef SCHED_IDLE
#define SCHED_IDLE 5
#endif

/*
 * The kernel's nice-to-weight table (each step ~1.25x). p->scx.weight rounds it to cgroup
 * units, where nice 19 reads 1 instead of 1.46: a nice 0 task would get 100x a nice 19 one
 * instead of EEVDF's 68x.
 */
static const u32 nice_weight[NICE_WIDTH] = {
	88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
	9548,  7620,  6100,  4904,  3906,  3121,  2501,  1991,  1586,  1277,
	1024,  820,   655,   526,   423,   335,   272,   215,   172,   137,
	110,   87,    70,    56,    45,    36,    29,    23,    18,    15,
};

static __always_inline bool policy_idle(const struct task_struct *p, const struct task_ctx *tctx)
{
	return p->policy == SCHED_IDLE || tctx->cg_idle;
}

/* Nice and policy alone, NICE_0_WEIGHT units. */
static __always_inline u64 task_own_weight(const struct task_struct *p, const struct task_ctx *tctx)
{
	u32 i;

	if (policy_idle(p, tctx))
		return IDLE_POLICY_WEIGHT;
	i = (u32)(p->static_prio - MAX_RT_PRIO);
	return nice_weight[i < NICE_WIDTH ? i : NICE_WIDTH / 2];
}

/*
 * The highest tier the administrator allows: SCHED_IDLE (or a cpu.idle group) never runs ahead
 * of anyone, SCHED_BATCH asked not to be treated as latency-critical. Behaviour and the procdb
 * only ever pick a tier below this.
 */
static __always_inline u8 admin_tier_cap(const struct task_struct *p, const struct task_ctx *tctx)
{
	if (policy_idle(p, tctx))
		return TIER_BATCH;
	if (p->policy == SCHED_BATCH)
		return TIER_INTERACTIVE;
	return TIER_LAT_CRITICAL;
}

/* The task's cgroup, as init_task() and cgroup_move() saw it (0: the root cgroup). */
static __always_inline void task_set_cgroup(struct task_ctx *tctx, struct cgroup *cgrp)
{
	tctx->cgid = cgrp && cgrp->level ? cgrp->kn->id : 0;
}

/*
 * runnable(): the task's weight joins its group's runnable sum, @c being the group's entry (the
 * caller has it). Root tasks need no sum.
 */
static __always_inline void cg_task_runnable(const struct task_struct *p, struct task_ctx *tctx,
					     struct cg_ctx *c)
{
	u64 w;

	if (tctx->cnt_w || !c)
		return;
	w = task_own_weight(p, tctx);
	tctx->cnt_cgid = tctx->cgid;
	tctx->cnt_w = w;
	if (!__sync_fetch_and_add(&c->runnable_weight, w))
		cg_activate(tctx->cgid);
}

/*
 * quiescent(), or a move out of the group: what runnable() added leaves the same group. An
 * autogroup's entry can be removed and made again while a task of it is runnable
 * (autogroup.bpf.h): the new entry never held that task's weight, and must not wrap below 0.
 */
static __always_inline void cg_task_quiescent(struct task_ctx *tctx)
{
	struct cg_ctx *c;
	u64 w = tctx->cnt_w, old;

	if (!w)
		return;
	tctx->cnt_w = 0;
	if (!(c = cg_lookup(tctx->cnt_cgid)))
		return;
	old = __sync_fetch_and_sub(&c->runnable_weight, w);
	if (old < w)
		__sync_fetch_and_add(&c->runnable_weight, w);
	else if (old == w)
		cg_deactivate(tctx->cnt_cgid);
}

/*
 * The weight vtime is charged by: the task's own, or in a group, its part of the group's share in
 * proportion to its weight among the group's runnable tasks. Cached in the task for the paths that
 * need it between charges (keep_prev()'s deadline, the BATCH slice).
 */
static __always_inline u64 task_weight_in(const struct task_struct *p, struct task_ctx *tctx,
					  struct cg_ctx *c, u64 now)
{
	u64 share, own, sum, w;

	if (!c) {
		tctx->cg_idle = 0;
		w = task_own_weight(p, tctx);
	} else {
		share = cg_share(c, now);
		/* A cpu.idle group's tasks weigh what SCHED_IDLE ones do, whatever its cpu.weight. */
		tctx->cg_idle = c->idle_eff;
		own = task_own_weight(p, tctx);
		sum = c->runnable_weight > own ? c->runnable_weight : own;
		w = tctx->cg_idle ? own : share * own / sum;
	}
	tctx->weight = w ? w : 1;
	return tctx->weight;
}

static __always_inline u64 task_weight(const struct task_struct *p, struct task_ctx *tctx, u64 now)
{
	return task_weight_in(p, tctx, task_cg(tctx), now);
}

/* Vtime for @ns of CPU at weight @w: a nice 0 task in the root is charged wall time. */
static __always_inline u64 charge_vtime(u64 ns, u64 w)
{
	return ns * NICE_0_WEIGHT / (w ? w : 1);
}

/*
 * stopping(): the vtime @used costs the task (its group's CPU time: bw_charge_task()), and the
 * same run at the group's share moves the group's clock.
 *
 * A group's weight binds its tasks through their vtime charges, but a short-lived task escapes
 * its charge: it starts at the virtual clock's now (enable()), runs a few milliseconds and
 * exits, and the next one starts at now again: a build's compilers and shells in a
 * cpu.weight=20 group took well over the CPU the fair class gives that group, from whatever ran
 * beside it. The group's clock carries what its tasks ran: a new task of the group starts
 * there (cg_start_vtime()), and once the group has run past its share, its new tasks queue
 * behind the others by vtime. A group idle or within its share stays at most a lag cap behind
 * the clock, so it banks no credit and its new tasks start at now.
 */
static __always_inline u64 charge_task(const struct task_struct *p, struct task_ctx *tctx,
				       u64 used, u64 now, const struct topo_params *tp)
{
	struct cg_ctx *c = task_cg(tctx);
	u64 prev = tctx->weight, w = task_weight_in(p, tctx, c, now);
	u64 floor = vtime_now - tp->lag_cap_ns;

	/*
	 * In a group, a run is charged at the heavier of the weights at its two ends, the last
	 * charge's and now. The group's runnable sum is read at an instant, and the instant a run
	 * ends is often a group-mate's wakeup that preempts it: a busy loop whose own process
	 * polls every 20 ms was charged its whole run at half its weight each time the poller
	 * woke, and its session got 0.43 of the CPU where the kernel's weights give it 0.5.
	 */
	if (c && prev > w)
		w = prev;
	if (c && used) {
		if (time_before(c->vtime, floor))
			c->vtime = floor;
		__sync_fetch_and_add(&c->vtime, charge_vtime(used, c->share));
	}
	return charge_vtime(used, w);
}

/* enable(): where a new task starts on the virtual clock, its group's clock if that is ahead. */
static __always_inline u64 cg_start_vtime(const struct task_ctx *tctx)
{
	struct cg_ctx *c = task_cg(tctx);

	return c && time_before(vtime_now, c->vtime) ? c->vtime : vtime_now;
}

#endif /* __PANDEMONIUM_WEIGHT_BPF_H */
