/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cgroup v2 cpu.weight and cpu.idle, flattened into one weight per task.
 *
 * A vtime scheduler shares CPU in proportion to the weights it charges by, so a group's share is
 * honoured by charging each of its tasks with its part of the group's weight. As the fair class
 * does with group entities, tasks in the root cgroup compete one by one with the top-level groups,
 * a group of cpu.weight W weighing what a nice 0 task does times W/100; below the top level a group
 * gets the part of its parent's weight that its own weight is of its active siblings' sum; a
 * group's weight is split between its runnable tasks in proportion to their own (nice) weights.
 * The root level's total cancels out of every ratio, so it is never summed.
 *
 * Groups are tracked in a hash by cgroup id rather than in cgroup storage: the charge path then
 * walks parents by id without taking cgroup references. Activity (a runnable task in the group or
 * an active child) changes the sums only at 0 <-> 1 transitions, with atomics and no lock; a
 * transition lost to a race is repaired when the group's share is next computed.
 */
#ifndef __PANDEMONIUM_CGROUP_BPF_H
#define __PANDEMONIUM_CGROUP_BPF_H

#define CGROUP_WEIGHT_DFL 100
/* Levels below the root that shares compound over; a deeper group shares its ancestor's part. */
#define CG_MAX_DEPTH 8
/* A group's flattened weight is recomputed at most this often: its siblings come and go faster. */
#define CG_SHARE_REFRESH_NS (10 * MSEC_NS)
/* Fixed point of the share walk: 2^30 is the whole of the top-level group's weight. */
#define CG_SHARE_SHIFT 30

/* struct cg_ctx lives in intf.h: the daemon reads the map too (per-group CPU share). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, u64);
	__type(value, struct cg_ctx);
} cg_ctxs SEC(".maps");

static __always_inline struct cg_ctx *cg_lookup(u64 id)
{
	return id ? bpf_map_lookup_elem(&cg_ctxs, &id) : NULL;
}

#define AUTOGROUP_KEY (1ULL << AUTOGROUP_KEY_SHIFT)

/* kernel.sched_autogroup_enabled, which the daemon follows: the sysctl can change at any time. */
volatile u32 autogroup_on;

/* The group a task is charged in: an autogroup's key stands for the root while they are off. */
static __always_inline struct cg_ctx *task_cg(const struct task_ctx *tctx)
{
	return (tctx->cgid & AUTOGROUP_KEY) && !autogroup_on ? NULL : cg_lookup(tctx->cgid);
}

/* @id gained its first runnable task or active child: it, and each parent it wakes, is active. */
static __always_inline void cg_activate(u64 id)
{
	struct cg_ctx *c, *parent;
	u32 i;

	bpf_for(i, 0, CG_MAX_DEPTH) {
		c = cg_lookup(id);
		if (!c || __sync_lock_test_and_set(&c->active, 1))
			return;
		parent = cg_lookup(c->parent_id);
		if (!parent)
			return;
		c->active_weight = c->weight;
		if (__sync_fetch_and_add(&parent->child_weight, c->active_weight))
			return;
		id = c->parent_id;
	}
}

/* @id may have lost its last runnable task or active child: it, and each parent left idle, rests. */
static __always_inline void cg_deactivate(u64 id)
{
	struct cg_ctx *c, *parent;
	u32 i;

	bpf_for(i, 0, CG_MAX_DEPTH) {
		c = cg_lookup(id);
		if (!c || c->runnable_weight || c->child_weight ||
		    !__sync_lock_test_and_set(&c->active, 0))
			return;
		parent = cg_lookup(c->parent_id);
		if (!parent || __sync_sub_and_fetch(&parent->child_weight, c->active_weight))
			return;
		id = c->parent_id;
	}
}

/* cpu.weight (or an autogroup's nice) changed: an active group's weight is in its parent's sum. */
static __always_inline void cg_set_weight(struct cg_ctx *c, u32 weight)
{
	struct cg_ctx *parent;
	u64 old;

	c->weight = weight ? weight : CGROUP_WEIGHT_DFL;
	c->share_at = 0;
	if (c->active && (parent = cg_lookup(c->parent_id))) {
		old = __sync_lock_test_and_set(&c->active_weight, c->weight);
		__sync_fetch_and_add(&parent->child_weight, c->weight - old);
	}
}

/*
 * The group's weight against every other top-level entity, NICE_0_WEIGHT being a nice 0 task in
 * the root: its cpu.weight times, at each level below the top, its weight over its active
 * siblings' sum. A sum below the group's own weight can only be a race's leftover (the group is
 * active, so it is in the sum): the group's own weight stands in for it.
 */
static __always_inline u64 cg_share(struct cg_ctx *c, u64 now)
{
	struct cg_ctx *x = c, *parent;
	u64 frac = 1ULL << CG_SHARE_SHIFT, share;
	u32 i, idle = 0;

	if (c->share && now - c->share_at < CG_SHARE_REFRESH_NS)
		return c->share;
	if (c->runnable_weight && !c->active)
		cg_activate(c->id);
	bpf_for(i, 0, CG_MAX_DEPTH) {
		u64 sum;

		idle |= x->idle;
		parent = cg_lookup(x->parent_id);
		if (!parent)
			break;
		sum = parent->child_weight;
		if (sum < x->weight)
			sum = x->weight;
		frac = frac * x->weight / sum;
		x = parent;
	}
	share = (frac * x->weight * NICE_0_WEIGHT / CGROUP_WEIGHT_DFL) >> CG_SHARE_SHIFT;
	c->share = share ? share : 1;
	c->share_at = now;
	c->idle_eff = idle;
	return c->share;
}

#endif /* __PANDEMONIUM_CGROUP_BPF_H */
