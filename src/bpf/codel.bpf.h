/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CoDel-style stall detection whose target moves like a critically damped oscillator.
 *
 * The stall test is RFC 8289's: a CPU is stalled when even the *shortest* wait (sojourn) of the
 * tasks it started during a whole interval exceeded the target. The target x itself follows
 *     x'' + 2 gamma x' + omega0^2 (x - c_eq) = F(t)
 * discretized with shifts on CPU 0's tick: rescues since the last tick push x down (tighter),
 * the spring pulls it back toward the topology's equilibrium c_eq, and damping with
 * spring_shift = 2 * damping_shift + 2 (gamma = omega0) returns it without ringing.
 */
#ifndef __PANDEMONIUM_CODEL_BPF_H
#define __PANDEMONIUM_CODEL_BPF_H

s64 codel_x;		/* current target, ns; 0 = not initialised */
s64 codel_v;		/* its velocity, ns per tick */
u64 codel_impulses;	/* rescues since CPU 0's last oscillator step */
u64 nr_codel_stalls;	/* intervals that ended stalled, all CPUs */

struct codel_cpu {
	u64 interval_start;
	u64 min_sojourn;	/* shortest wait seen in this interval, U64_MAX = none yet */
	u8 stalled;		/* the last full interval stalled: dispatch rescues first */
} __attribute__((aligned(64))); /* written on every switch: one line per CPU, no false sharing */

struct codel_cpu codel_cpus[MAX_CPUS];

static __always_inline struct codel_cpu *codel_cpu(s32 cpu)
{
	return &codel_cpus[cpu & (MAX_CPUS - 1)];
}

static __always_inline s64 clamp_s64(s64 v, s64 lo, s64 hi)
{
	return v < lo ? lo : (v > hi ? hi : v);
}

static __always_inline s64 codel_eq(const struct topo_params *tp)
{
	s64 floor = tp->codel_target_floor_ns, max = tp->codel_target_max_ns;
	s64 eq = tp->codel_eq_ns ? (s64)tp->codel_eq_ns : (floor + max) / 2;

	return clamp_s64(eq, floor, max);
}

static __always_inline u64 codel_target(const struct topo_params *tp)
{
	s64 x = codel_x;

	return x > 0 ? x : codel_eq(tp);
}

/*
 * v >> n rounded toward zero. A plain arithmetic shift rounds a negative v toward -inf, so the
 * spring and the damping were lopsided: a small positive velocity was never damped and a small
 * negative error always pushed, and the target came to rest above c_eq by up to 2^spring_shift ns
 * after every excursion (found by the Rust twin in src/codel.rs).
 */
static __always_inline s64 codel_shr(s64 v, u32 n)
{
	return v < 0 ? -((-v) >> n) : v >> n;
}

static __always_inline s64 abs_s64(s64 v)
{
	return v < 0 ? -v : v;
}

/* One oscillator step; CPU 0's tick is the only writer of x and v. */
static __always_inline void codel_step(const struct topo_params *tp)
{
	s64 floor = tp->codel_target_floor_ns, max = tp->codel_target_max_ns;
	s64 eq = codel_eq(tp), x = codel_x ? codel_x : eq, v = codel_v;
	s64 vcap = (max - floor) >> CODEL_VCAP_SHIFT;
	u32 spring = tp->spring_shift & 63, damping = tp->damping_shift & 63;
	u64 impulses = __sync_lock_test_and_set(&codel_impulses, 0);

	/* Each rescue is a kick toward a tighter target, sized to the equilibrium. */
	if (impulses > CODEL_MAX_IMPULSES)
		impulses = CODEL_MAX_IMPULSES;
	v -= (s64)impulses * (eq >> CODEL_KICK_SHIFT);
	v -= codel_shr(x - eq, spring);
	v -= codel_shr(v, damping);
	v = clamp_s64(v, -vcap, vcap);
	x = clamp_s64(x + v, floor, max);
	/*
	 * A target pinned at a bound stops there: velocity left pointing into the bound would keep
	 * it pinned for seconds after the rescues end.
	 */
	if ((x == floor && v < 0) || (x == max && v > 0))
		v = 0;
	/*
	 * Below the shifts' resolution neither the spring nor the damping acts any more: a quiet
	 * oscillator that close to c_eq is at rest, so put it there exactly.
	 */
	if (!impulses && abs_s64(x - eq) < (1ll << spring) && abs_s64(v) < (1ll << damping)) {
		x = eq;
		v = 0;
	}
	codel_v = v;
	codel_x = x;
}

/*
 * running(): feed the task's sojourn into @cpu's interval. At the end of an interval the CPU is
 * stalled iff its minimum sojourn stayed above the target for all of it.
 */
static __always_inline void codel_observe(s32 cpu, u64 sojourn, u64 now,
					  const struct topo_params *tp)
{
	struct codel_cpu *c = codel_cpu(cpu);

	if (!c->interval_start) {
		c->interval_start = now;
		c->min_sojourn = sojourn;
		return;
	}
	if (sojourn < c->min_sojourn)
		c->min_sojourn = sojourn;
	if (now - c->interval_start < tp->sojourn_interval_ns)
		return;
	c->stalled = c->min_sojourn > codel_target(tp);
	if (c->stalled)
		__sync_fetch_and_add(&nr_codel_stalls, 1);
	c->interval_start = now;
	c->min_sojourn = (u64)-1;
}

/* Hotplug: a CPU coming or going starts from a clean slate, and so does the oscillator. */
static __always_inline void codel_reset_cpu(s32 cpu)
{
	struct codel_cpu *c = codel_cpu(cpu);

	c->interval_start = 0;
	c->min_sojourn = (u64)-1;
	c->stalled = 0;
	codel_v = 0;
	codel_impulses = 0;
}

static __always_inline void codel_note_rescue(void)
{
	__sync_fetch_and_add(&codel_impulses, 1);
}

#endif /* __PANDEMONIUM_CODEL_BPF_H */
