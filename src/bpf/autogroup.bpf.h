/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kernel's autogroups (CONFIG_SCHED_AUTOGROUP, sysctl kernel.sched_autogroup_enabled): with
 * them on, the fair class gives each session (setsid(): a terminal, a desktop launcher's child) of
 * the root cgroup a task group of its own, as heavy as one nice 0 task at the autogroup's nice 0.
 * A `make -j32` started from one terminal then shares the CPU half and half with a game started
 * from another, however many threads each has. Distributions ship it on, and on desktops whose
 * user slices have no cpu controller most tasks are in the root cgroup, so it is what users know
 * EEVDF by: charged one by one, a game beside a build ran at 71 fps where EEVDF gave it 102.
 *
 * sched_ext sees these tasks in the root cgroup (an autogroup's task group has no cgroup) and is
 * told nothing when setsid() moves a task to a new one. So the task's autogroup is read where its
 * weight is about to matter (enable(), runnable()), and a root task in one is charged as a member
 * of a top-level pseudo-group keyed AUTOGROUP_KEY | its id, with cgroup.bpf.h's shares and group
 * clock. Autogroup ids only grow, so a key is never reused. The kernel tells no one when an
 * autogroup dies either: the daemon removes an entry that has been idle a while (src/autogroup.rs),
 * and a task whose entry is gone makes it again here.
 *
 * vmlinux.h does not carry struct autogroup: the two flavours below are relocated by CO-RE against
 * the running kernel's BTF, and a kernel built without autogroups reads as one with them off.
 */
#ifndef __PANDEMONIUM_AUTOGROUP_BPF_H
#define __PANDEMONIUM_AUTOGROUP_BPF_H

struct autogroup___pd {
	unsigned long id;
	int nice;
} __attribute__((preserve_access_index));

struct signal_struct___pd {
	struct autogroup___pd *autogroup;
} __attribute__((preserve_access_index));

/* An autogroup's nice (/proc/PID/autogroup) as a cpu.weight: nice 0 weighs 100, as the kernel's. */
static __always_inline u32 autogroup_weight(int nice)
{
	u32 i = (u32)(nice + NICE_WIDTH / 2), w;

	w = nice_weight[i < NICE_WIDTH ? i : NICE_WIDTH / 2] * CGROUP_WEIGHT_DFL / NICE_0_WEIGHT;
	return w ? w : 1;
}

/* @key's entry, made when missing; weighted by @nice. NULL only when the map is full. */
static __always_inline struct cg_ctx *autogroup_ctx(u64 key, int nice)
{
	struct cg_ctx c = {}, *cp = cg_lookup(key);
	u32 w = autogroup_weight(nice);

	if (!cp) {
		c.id = key;
		c.level = 1;
		c.weight = w;
		/* BPF_NOEXIST: a task of the group that made it first keeps what it started. */
		bpf_map_update_elem(&cg_ctxs, &key, &c, BPF_NOEXIST);
		return cg_lookup(key);
	}
	if (cp->weight != w)
		cg_set_weight(cp, w);
	return cp;
}

/*
 * enable(), runnable(): a root task's group is its autogroup. A task in a cgroup of its own is
 * left alone: the kernel puts only root tasks in autogroups. A busy task that moves to a new
 * session without sleeping once is seen there when it next wakes. Returns the entry of the
 * task's group (NULL in the root), which runnable() counts the task into: one lookup per wakeup.
 *
 * The fields are read with plain loads, which CO-RE relocates and the verifier guards, rather
 * than bpf_probe_read_kernel() calls: this runs on every wakeup.
 */
static __always_inline struct cg_ctx *autogroup_refresh(const struct task_struct *p,
							struct task_ctx *tctx)
{
	struct signal_struct___pd *sig = (void *)p->signal;
	struct cg_ctx *c = NULL;
	struct autogroup___pd *ag;
	u64 key = 0;

	if (tctx->cgid && !(tctx->cgid & AUTOGROUP_KEY))
		return cg_lookup(tctx->cgid);
	/*
	 * Keyed by its autogroup whatever the sysctl says: task_cg() reads the key as the root
	 * while autogroups are off, so a flip of the sysctl reaches busy tasks, which may not come
	 * back here for a long time, within the daemon's interval.
	 */
	if (bpf_core_field_exists(sig->autogroup) && sig && (ag = sig->autogroup) &&
	    /* Id 0 is the kernel's autogroup_default: the root group itself. */
	    ag->id && (c = autogroup_ctx(AUTOGROUP_KEY | ag->id, ag->nice)))
		key = AUTOGROUP_KEY | ag->id;
	if (key != tctx->cgid) {
		/* What the task added to its old group's runnable sum leaves with it. */
		cg_task_quiescent(tctx);
		tctx->cgid = key;
	}
	return c;
}

#endif /* __PANDEMONIUM_AUTOGROUP_BPF_H */
