/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-call cost of the hot callbacks and of each dispatch step, built only with `cargo build
 * --features profile` (PANDEMONIUM_PROFILE); without it every macro here is empty and the
 * programs are the same instructions.
 *
 * The kernel's BPF stats give one total per program, and under an emulator that runs vCPUs in
 * turn a handful of calls that lose their vCPU's turn mid-call make that mean (README, Known
 * problems: per-call BPF cost from 2 to 64 vCPUs). So calls are summed twice: all of them, and
 * those under PROF_LONG_NS apart, and the totals go to the trace buffer when the scheduler
 * exits. The hot ops are thin wrappers around an always-inline _body() so that one PROF_END()
 * sees every return.
 */
#ifndef __PANDEMONIUM_PROFILE_BPF_H
#define __PANDEMONIUM_PROFILE_BPF_H

enum prof_slot {
	PROF_SELECT_CPU,
	PROF_ENQUEUE,
	PROF_DISPATCH,
	PROF_RUNNING,
	PROF_STOPPING,
	PROF_STEP0, /* dispatch, by the enum disp_step it returned */
	NR_PROF_SLOTS = PROF_STEP0 + 32,
};

#ifdef PANDEMONIUM_PROFILE

#define PROF_LONG_NS 20000

u64 prof_calls[NR_PROF_SLOTS], prof_ns[NR_PROF_SLOTS];
u64 prof_long_calls[NR_PROF_SLOTS], prof_long_ns[NR_PROF_SLOTS];

static __always_inline void prof_add(u32 slot, u64 t0)
{
	u64 dt = bpf_ktime_get_ns() - t0;

	slot %= NR_PROF_SLOTS;
	__sync_fetch_and_add(&prof_calls[slot], 1);
	__sync_fetch_and_add(&prof_ns[slot], dt);
	if (dt >= PROF_LONG_NS) {
		__sync_fetch_and_add(&prof_long_calls[slot], 1);
		__sync_fetch_and_add(&prof_long_ns[slot], dt);
	}
}

static const char prof_names[PROF_STEP0][11] = {
	"select_cpu", "enqueue", "dispatch", "running", "stopping",
};

/*
 * One line per slot that ran: its calls, ns per call, the calls of PROF_LONG_NS or more and ns per
 * call without them. A dispatch step is its number in enum disp_step (dispatch.bpf.h).
 */
static __noinline int prof_report(void)
{
	u32 i;

	/* Every dispatch returns one step: the callback's line is their sum, not a second clock. */
	bpf_for(i, 0, NR_PROF_SLOTS - PROF_STEP0) {
		u32 s = PROF_STEP0 + (i & 31);

		prof_calls[PROF_DISPATCH] += prof_calls[s];
		prof_ns[PROF_DISPATCH] += prof_ns[s];
		prof_long_calls[PROF_DISPATCH] += prof_long_calls[s];
		prof_long_ns[PROF_DISPATCH] += prof_long_ns[s];
	}
	bpf_for(i, 0, NR_PROF_SLOTS) {
		u32 s = i % NR_PROF_SLOTS;
		u64 n = prof_calls[s], short_n = n - prof_long_calls[s];
		u64 mean = n ? prof_ns[s] / n : 0;
		u64 short_mean = short_n ? (prof_ns[s] - prof_long_ns[s]) / short_n : 0;

		if (!n)
			continue;
		if (s < PROF_STEP0)
			bpf_printk("pandemonium profile: %s calls %llu ns/call %llu long %llu short ns/call %llu",
				   prof_names[s], n, mean, prof_long_calls[s], short_mean);
		else
			bpf_printk("pandemonium profile: dispatch step %u calls %llu ns/call %llu long %llu short ns/call %llu",
				   s - PROF_STEP0, n, mean, prof_long_calls[s], short_mean);
	}
	return 0;
}

#define PROF_START() u64 __prof_t0 = bpf_ktime_get_ns()
#define PROF_END(slot) prof_add((slot), __prof_t0)
#define PROF_REPORT() prof_report()

#else

#define PROF_START()
#define PROF_END(slot)
#define PROF_REPORT()

#endif /* PANDEMONIUM_PROFILE */

#endif /* __PANDEMONIUM_PROFILE_BPF_H */
