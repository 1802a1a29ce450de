/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The periodic global work (the CoDel oscillator step, longrun detection) on a bpf_timer. CPU 0's
 * tick did it before: that tick only reaches sched_ext while CPU 0 runs one of its tasks (an idle
 * or RT-busy CPU 0 froze both), and its rate is the kernel's HZ, so the oscillator moved 4x
 * faster on a HZ=1000 kernel than on the HZ=250 one it was tuned on.
 */
#ifndef __PANDEMONIUM_PERIODIC_BPF_H
#define __PANDEMONIUM_PERIODIC_BPF_H

#ifndef CLOCK_MONOTONIC
#define CLOCK_MONOTONIC 1 /* a uapi macro, not in vmlinux.h */
#endif

/* One step per HZ=250 tick, the rate the oscillator's shifts were tuned at (src/codel.rs). */
#define PERIODIC_NS (4 * MSEC_NS)

struct periodic_timer {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct periodic_timer);
} periodic_timer_map SEC(".maps");

/* Longrun: some node's batch DSQ has stayed non-empty past longrun_thresh_ns. One writer. */
static __always_inline void update_longrun(struct topo_params *tp, u64 now)
{
	u32 i, on = 0;

	bpf_for(i, 0, MAX_NODES) {
		u64 since;

		if (i >= nr_nodes_ro)
			break;
		since = batch_dsq_since[i];
		if (since && now - since >= tp->longrun_thresh_ns) {
			on = 1;
			break;
		}
	}
	if (on != longrun_mode)
		longrun_mode = on;
}

static int periodic_fn(void *map, int *key, struct bpf_timer *timer)
{
	struct tuning_knobs *k = knobs();
	struct topo_params *tp = topo();

	if (k && tp) {
		update_longrun(tp, bpf_ktime_get_ns());
		codel_step(k, tp);
	}
	bpf_timer_start(timer, PERIODIC_NS, 0);
	return 0;
}

/* ops.init(): arms the timer; an error here fails the load with the reason. */
static __always_inline s32 periodic_start(void)
{
	struct periodic_timer *t;
	u32 zero = 0;
	s32 ret;

	t = bpf_map_lookup_elem(&periodic_timer_map, &zero);
	if (!t)
		return -ENOENT;
	ret = bpf_timer_init(&t->timer, &periodic_timer_map, CLOCK_MONOTONIC);
	if (!ret)
		ret = bpf_timer_set_callback(&t->timer, periodic_fn);
	if (!ret)
		ret = bpf_timer_start(&t->timer, PERIODIC_NS, 0);
	return ret;
}

#endif /* __PANDEMONIUM_PERIODIC_BPF_H */
