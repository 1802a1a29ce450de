/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cgroup v2 cpu.max. The kernel hands the quota to a sched_ext scheduler
 * (ops.cgroup_set_bandwidth, 6.17+) and leaves the throttling to it: a group that has run its
 * quota in the current period, or has an ancestor that has, does not run again before the period
 * ends. CPU time is charged to every limited ancestor at each tick and stop, so a group overruns
 * by at most a tick per running task; the overrun is carried into the next period, as the fair
 * class carries a negative runtime, so the average holds. Throttled tasks wait in one FIFO DSQ
 * that no CPU dispatches from; a timer moves each back to its overflow DSQ when its period ends.
 */
#ifndef __PANDEMONIUM_BANDWIDTH_BPF_H
#define __PANDEMONIUM_BANDWIDTH_BPF_H

/* The kernel's RUNTIME_INF: cpu.max "max". */
#define BW_QUOTA_INF ((u64)-1)
/* How often the timer looks for throttled tasks whose period has ended. */
#define BW_TIMER_NS (2 * MSEC_NS)
#define BW_RELEASE_BATCH 32

/* Groups with a quota: while 0, no hot path walks a group for cpu.max. */
u32 nr_bw_groups;
/* The timer runs while throttled tasks wait (1), and stops itself when none do. */
u32 bw_timer_armed;
/* The throttled DSQ is FIFO and served by the timer alone: its age is never read. */
u64 bw_throttled_since;
/*
 * Tasks the timer's current run has released. A global, not a local: the verifier knows a
 * local counter exactly and would walk the release loop once per value up to BW_RELEASE_BATCH,
 * cgroup walks included, in init(), which sets the timer's callback and so verifies it.
 */
u32 bw_released;

struct bw_timer {
	struct bpf_timer t;
};

U32_ARRAY_MAP(bw_timer_map, BPF_MAP_TYPE_ARRAY, struct bw_timer, 1);

/* Starts a new period where the last one ended, paying back what the last one overran. */
static __always_inline void bw_refresh(struct cg_ctx *c, u64 now)
{
	u64 at = c->bw_period_at, periods, due;

	if (now - at < c->bw_period_ns)
		return;
	periods = (now - at) / c->bw_period_ns;
	if (__sync_val_compare_and_swap(&c->bw_period_at, at, at + periods * c->bw_period_ns) != at)
		return;
	due = periods * c->bw_quota_ns;
	c->bw_used = c->bw_used > due ? c->bw_used - due : 0;
	c->throttled = c->bw_used >= c->bw_quota_ns;
}

/* The end of the period that keeps @id's group (or an ancestor) throttled; 0 if none does. */
static __always_inline u64 bw_throttled_until(u64 id, u64 now)
{
	struct cg_ctx *c;
	u32 i;

	if (!nr_bw_groups)
		return 0;
	bpf_for(i, 0, CG_MAX_DEPTH) {
		c = cg_lookup(id);
		if (!c)
			return 0;
		if (c->bw_quota_ns) {
			bw_refresh(c, now);
			if (c->throttled)
				return c->bw_period_at + c->bw_period_ns;
		}
		id = c->parent_id;
	}
	return 0;
}

/*
 * May the task on a CPU run on past its slice? Not while its group is over quota: dispatch()
 * declines to renew its slice, the kernel then hands it to enqueue() with SCX_ENQ_LAST
 * (SCX_OPS_ENQ_LAST), and it is parked there. Kept instead, one task of a capped group ran a
 * whole CPU whenever nothing else waited on that CPU.
 */
static __always_inline bool may_keep_running(const struct task_ctx *tctx, u64 now)
{
	return !nr_bw_groups || !tctx->cgid || !bw_throttled_until(tctx->cgid, now);
}

/*
 * @ns of CPU time, charged to each limited group from @id up, in the same walk that says until
 * when the group stays throttled (0: it may run on), as bw_throttled_until() would.
 */
static __always_inline u64 bw_charge(u64 id, u64 ns, u64 now)
{
	struct cg_ctx *c;
	u64 until = 0, end;
	u32 i;

	if (!nr_bw_groups)
		return 0;
	bpf_for(i, 0, CG_MAX_DEPTH) {
		c = cg_lookup(id);
		if (!c)
			break;
		if (c->bw_quota_ns) {
			bw_refresh(c, now);
			if (ns && __sync_add_and_fetch(&c->bw_used, ns) >= c->bw_quota_ns)
				c->throttled = 1;
			end = c->bw_period_at + c->bw_period_ns;
			if (c->throttled && end > until)
				until = end;
		}
		id = c->parent_id;
	}
	return until;
}

/*
 * tick(), stopping(): what the task ran since it was last charged (running() sets the mark), to
 * its group's runtime_ns (the daemon's per-group stats) and to each limited group's quota;
 * charged on the tick too, so a task that keeps its CPU for seconds counts as it runs. Returns
 * the end of the period its group stays throttled to, 0 if none.
 */
static __always_inline u64 bw_charge_task(struct task_ctx *tctx, u64 now)
{
	u64 at = tctx->bw_at, ns = at && now > at ? now - at : 0;
	struct cg_ctx *c;

	tctx->bw_at = now;
	if (ns && (c = cg_lookup(tctx->cgid)))
		__sync_fetch_and_add(&c->runtime_ns, ns);
	return bw_charge(tctx->cgid, ns, now);
}

static __always_inline void bw_set(struct cg_ctx *c, u64 period_us, u64 quota_us)
{
	bool had = c->bw_quota_ns;
	bool has = quota_us != BW_QUOTA_INF && quota_us && period_us;

	c->bw_period_ns = has ? period_us * USEC_NS : 0;
	c->bw_quota_ns = has ? quota_us * USEC_NS : 0;
	c->bw_period_at = bpf_ktime_get_ns();
	c->bw_used = 0;
	c->throttled = 0;
	if (has && !had)
		__sync_fetch_and_add(&nr_bw_groups, 1);
	else if (!has && had)
		__sync_fetch_and_sub(&nr_bw_groups, 1);
}

static int bw_timer_fn(void *map, int *key, struct bpf_timer *timer);

/* enqueue(): @p's group is over its quota until @until. */
static __always_inline void bw_park(struct task_struct *p, struct task_ctx *tctx, u64 until,
				    u64 slice, u64 vtime, u64 enq_flags)
{
	struct bw_timer *bt;
	u32 zero = 0;

	tctx->bw_until = until;
	tctx->bw_vtime = vtime;
	scx_bpf_dsq_insert(p, BW_THROTTLED_DSQ, slice, enq_flags);
	STAT_INC(nr_bw_throttled);
	if (bw_timer_armed || __sync_val_compare_and_swap(&bw_timer_armed, 0, 1))
		return;
	bt = bpf_map_lookup_elem(&bw_timer_map, &zero);
	if (bt)
		bpf_timer_start(&bt->t, BW_TIMER_NS, 0);
}

/*
 * The timer: every throttled task whose period has ended goes back to the overflow DSQ of its
 * tier with the vtime it was queued with, and its CPU is kicked if idle. Runs while any wait.
 */
static int bw_timer_fn(void *map, int *key, struct bpf_timer *timer)
{
	u64 now = bpf_ktime_get_ns(), until;
	struct task_struct *p;
	struct task_ctx *t;

	bw_released = 0;
	bpf_for_each(scx_dsq, p, BW_THROTTLED_DSQ, 0) {
		u32 node;
		u64 dsq;

		if (bw_released >= BW_RELEASE_BATCH)
			break;
		t = task_ctx(p);
		if (t && t->bw_until > now)
			continue;
		/*
		 * A group still paying back an overrun stays throttled into the next period. Released
		 * anyway, every parked task would run until its next tick before being parked again,
		 * once a period: with many tasks, far past the quota.
		 */
		if (t && (until = bw_throttled_until(t->cgid, now))) {
			t->bw_until = until;
			continue;
		}
		node = cpu_node(scx_bpf_task_cpu(p));
		dsq = t && t->tier != TIER_BATCH ? node_dsq(node) : batch_dsq(node);
		if (t) {
			t->enqueue_at = now;
			scx_bpf_dsq_move_set_vtime(BPF_FOR_EACH_ITER, t->bw_vtime);
		}
		if (!scx_bpf_dsq_move_vtime(BPF_FOR_EACH_ITER, p, dsq, 0))
			continue;
		mark_shared_since(dsq == node_dsq(node) ? &node_dsq_since[node & (MAX_NODES - 1)]
							: &batch_dsq_since[node & (MAX_NODES - 1)], now);
		kick_cpu(scx_bpf_task_cpu(p), SCX_KICK_IDLE);
		bw_released++;
	}
	if (scx_bpf_dsq_nr_queued(BW_THROTTLED_DSQ) > 0) {
		bpf_timer_start(timer, BW_TIMER_NS, 0);
		return 0;
	}
	/*
	 * bw_park() inserts before it looks at bw_timer_armed, this clears it before it looks at
	 * the DSQ: a task parked meanwhile is seen by one side or the other.
	 */
	__sync_lock_test_and_set(&bw_timer_armed, 0);
	if (scx_bpf_dsq_nr_queued(BW_THROTTLED_DSQ) > 0 &&
	    !__sync_val_compare_and_swap(&bw_timer_armed, 0, 1))
		bpf_timer_start(timer, BW_TIMER_NS, 0);
	return 0;
}

static __always_inline s32 bw_init(void)
{
	struct bw_timer *bt;
	u32 zero = 0;
	s32 ret;

	ret = scx_bpf_create_dsq(BW_THROTTLED_DSQ, -1);
	if (ret)
		return ret;
	bt = bpf_map_lookup_elem(&bw_timer_map, &zero);
	if (!bt)
		return -ENOENT;
	bpf_timer_init(&bt->t, &bw_timer_map, CLOCK_MONOTONIC);
	bpf_timer_set_callback(&bt->t, bw_timer_fn);
	return 0;
}

#endif /* __PANDEMONIUM_BANDWIDTH_BPF_H */
