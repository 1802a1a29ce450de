/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Our part of the kernel's debug dump, so that an ejection shows the state the decisions read:
 * the virtual clock, the shared DSQs' depths and ages and the knobs (ops.dump), each CPU's runner
 * as a waker sees it and its CoDel interval (ops.dump_cpu), and each listed task's class, weight
 * and wait (ops.dump_task). The kernel dumps on an error exit (a stall, scx_bpf_error()), and
 * the daemon prints it (`--exit-dump-len` sizes it, 0 keeps the kernel's 32 KiB); SysRq-D writes
 * the same dump to the sched_ext_dump tracepoint without an exit. These ops run then alone, never
 * on a scheduling path. Every line starts with "pandemonium:"; times are in microseconds, ages
 * are since the stamp (0: no stamp), a vtime is printed as its distance from vtime_now in
 * nanoseconds, a weight in NICE_0_WEIGHT units (1024: nice 0) and a runner as a waker sees it
 * (none: idle, claimed or a wait-bound rescue; batch; other).
 */
#ifndef __PANDEMONIUM_DUMP_BPF_H
#define __PANDEMONIUM_DUMP_BPF_H

static __always_inline u64 dump_age_us(u64 at, u64 now)
{
	return at && now > at ? (now - at) / USEC_NS : 0;
}

static __always_inline const char *dump_run_kind(u32 kind)
{
	return kind == RUN_BATCH ? "batch" : kind == RUN_OTHER ? "other" : "none";
}

void BPF_STRUCT_OPS(pandemonium_dump, struct scx_dump_ctx *dctx)
{
	struct tuning_knobs *k = knobs();
	struct topo_params *tp = topo();
	u64 now = bpf_ktime_get_ns();
	u32 i;

	scx_bpf_dump("pandemonium: vtime_now %llu longrun %u latcrit_waiting %u nr_bw_groups %u nr_offline_cpus %u codel target %lld ns velocity %lld stalls %llu\n",
		     vtime_now, longrun_mode, latcrit_waiting, nr_bw_groups, nr_offline_cpus,
		     codel_x, codel_v, nr_codel_stalls);
	scx_bpf_dump("pandemonium: knobs slice %llu us preempt %llu us batch %llu us burst %llu us lag_scale %llu affinity %llu pack %llu, refreshed %llu us ago\n",
		     k->slice_ns / USEC_NS, k->preempt_thresh_ns / USEC_NS,
		     k->batch_slice_ns / USEC_NS, k->burst_slice_ns / USEC_NS, k->lag_scale,
		     k->affinity_mode, k->pack, dump_age_us(knobs_at, now));
	if (tp)
		scx_bpf_dump("pandemonium: topo overflow rescue %llu us starvation rescue %llu us lag cap %llu us longrun %llu us pcpu depth %u\n",
			     tp->overflow_rescue_ns / USEC_NS, tp->starvation_rescue_ns / USEC_NS,
			     tp->lag_cap_ns / USEC_NS, tp->longrun_thresh_ns / USEC_NS,
			     tp->pcpu_dsq_depth);
	bpf_for(i, 0, MAX_NODES) {
		if (i >= nr_nodes_ro)
			break;
		scx_bpf_dump("pandemonium: node %u interactive dsq %d queued, age %llu us; batch dsq %d queued, age %llu us\n",
			     i, scx_bpf_dsq_nr_queued(node_dsq(i)),
			     dump_age_us(node_dsq_since[i & (MAX_NODES - 1)], now),
			     scx_bpf_dsq_nr_queued(batch_dsq(i)),
			     dump_age_us(batch_dsq_since[i & (MAX_NODES - 1)], now));
	}
	scx_bpf_dump("pandemonium: cpu.max throttled dsq %d queued, release timer %u\n",
		     scx_bpf_dsq_nr_queued(BW_THROTTLED_DSQ), bw_timer_armed);
}

/*
 * An idle CPU with nothing of ours to show prints nothing, and the kernel then leaves it out of
 * the dump.
 */
void BPF_STRUCT_OPS(pandemonium_dump_cpu, struct scx_dump_ctx *dctx, s32 cpu, bool idle)
{
	struct cpu_ctx *c;
	struct codel_cpu *cc;
	u64 now = bpf_ktime_get_ns();
	s32 queued;

	if (cpu < 0 || (u32)cpu >= nr_cpu_ids_ro)
		return;
	c = cpu_ctx(cpu);
	cc = codel_cpu(cpu);
	queued = scx_bpf_dsq_nr_queued(cpu);
	if (idle && queued <= 0 && c->online && !c->drain && !cc->stalled)
		return;
	scx_bpf_dump("pandemonium: cpu %d online %u drain %u runner %s deadline %lld ns, own dsq %d queued, age %llu us, owe_local %u local_urgent %u\n",
		     cpu, c->online, c->drain, dump_run_kind(c->run_kind),
		     (s64)(c->run_deadline - vtime_now), queued, dump_age_us(c->pcpu_since, now),
		     c->owe_local, c->local_urgent);
	scx_bpf_dump("pandemonium: cpu %d codel interval %llu us, min sojourn %llu us, stalled %u\n",
		     cpu, dump_age_us(cc->interval_start, now),
		     cc->min_sojourn == (u64)-1 ? 0 : cc->min_sojourn / USEC_NS, cc->stalled);
}

void BPF_STRUCT_OPS(pandemonium_dump_task, struct scx_dump_ctx *dctx, struct task_struct *p)
{
	struct task_ctx *tctx = task_ctx(p);
	u64 now = bpf_ktime_get_ns();

	if (!tctx)
		return;
	scx_bpf_dump("pandemonium: tier %u flags 0x%x weight %llu samples %u avg_runtime %llu us, queued %llu us ago, wait_rescued %u yielded %u cgid %llu vtime %lld ns\n",
		     tctx->tier, tctx->flags, tctx->weight, tctx->samples,
		     tctx->avg_runtime / USEC_NS, dump_age_us(tctx->enqueue_at, now),
		     tctx->wait_rescued, tctx->yielded, tctx->cgid,
		     (s64)(p->scx.dsq_vtime - vtime_now));
}

#endif /* __PANDEMONIUM_DUMP_BPF_H */
