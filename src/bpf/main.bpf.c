/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * scx_pandemonium: the BPF half. Every scheduling decision is made here; the Rust daemon only
 * writes knobs and topology into maps and reads counters and histograms back.
 */
#include <scx/common.bpf.h>
#include "intf.h"
#include "state.bpf.h"
#include "placement.bpf.h"
#include "dispatch.bpf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

s32 BPF_STRUCT_OPS(pandemonium_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	struct task_ctx *tctx = task_ctx(p);
	struct tuning_knobs *k = knobs();
	struct topo_params *tp = topo();
	bool is_idle = false;
	s32 cpu;

	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	if (!is_idle || !tctx || !k || !tp)
		return cpu;

	STAT_INC(nr_idle_hits);
	place_pcpu_with_spill(p, tctx, cpu, task_slice(tctx, k), task_vtime(p, k, tp), 0);
	return cpu;
}

void BPF_STRUCT_OPS(pandemonium_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = task_ctx(p);
	struct tuning_knobs *k = knobs();
	struct topo_params *tp = topo();
	s32 cpu = scx_bpf_task_cpu(p), idle;
	u64 slice, vtime;

	if (!tctx || !k || !tp) {
		scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, SCX_SLICE_DFL, enq_flags);
		return;
	}
	if (enq_flags & SCX_ENQ_WAKEUP)
		STAT_INC(nr_enq_wakeup);
	else
		STAT_INC(nr_enq_requeue);

	slice = task_slice(tctx, k);
	vtime = task_vtime(p, k, tp);

	/*
	 * A task that can run on one CPU only goes straight to that CPU's local DSQ. In a shared DSQ
	 * it would wait for that one CPU to reach the overflow steps; in our per-CPU DSQ it would be
	 * stranded when the CPU goes offline, because the kernel stops calling dispatch() on an
	 * offline CPU while its per-CPU kthreads (ksoftirqd, cpuhp) must still run there to let the
	 * hotplug finish.
	 */
	if (p->nr_cpus_allowed == 1 || is_migration_disabled(p)) {
		mark_enqueued(tctx, bpf_ktime_get_ns());
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, slice, enq_flags);
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		STAT_INC(nr_pinned);
		return;
	}

	idle = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (idle >= 0) {
		insert_node(p, tctx, cpu_node(idle), slice, vtime, enq_flags);
		scx_bpf_kick_cpu(idle, SCX_KICK_IDLE);
		STAT_INC(nr_soft_kicks);
		return;
	}
	if (tctx->tier == TIER_BATCH)
		insert_batch(p, tctx, cpu_node(cpu), slice, vtime, enq_flags);
	else
		insert_node(p, tctx, cpu_node(cpu), slice, vtime, enq_flags);
}

void BPF_STRUCT_OPS(pandemonium_dispatch, s32 cpu, struct task_struct *prev)
{
	struct tuning_knobs *k;
	struct task_ctx *tctx;

	STAT_INC(nr_dispatches);
	if (dispatch_waterfall(cpu, prev))
		return;

	/* 7: nothing queued anywhere; let the previous task keep the CPU if it still wants it. */
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED) && (k = knobs()) && (tctx = task_ctx(prev))) {
		prev->scx.slice = task_slice(tctx, k);
		STAT_INC(nr_keep_running);
	}
}

void BPF_STRUCT_OPS(pandemonium_runnable, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = task_ctx(p);
	struct pandemonium_hist *h;
	u32 zero = 0;

	if (!tctx || !tctx->sleep_at)
		return;
	h = bpf_map_lookup_elem(&hist_map, &zero);
	if (h)
		h->sleep[log2_bucket(bpf_ktime_get_ns() - tctx->sleep_at, NR_SLEEP_BUCKETS)]++;
	tctx->sleep_at = 0;
}

void BPF_STRUCT_OPS(pandemonium_running, struct task_struct *p)
{
	struct task_ctx *tctx = task_ctx(p);
	struct pandemonium_stats *s;
	struct pandemonium_hist *h;
	u64 now = bpf_ktime_get_ns(), lat;
	u32 zero = 0;

	if (time_before(vtime_now, p->scx.dsq_vtime))
		vtime_now = p->scx.dsq_vtime;
	if (!tctx)
		return;
	tctx->last_run_at = now;
	if (!tctx->enqueue_at)
		return;

	lat = now - tctx->enqueue_at;
	tctx->enqueue_at = 0;
	h = bpf_map_lookup_elem(&hist_map, &zero);
	if (h)
		h->wake_lat[tier_idx(tctx->tier)][log2_bucket(lat, NR_LAT_BUCKETS)]++;
	s = stats();
	if (s) {
		s->wake_lat_sum_ns += lat;
		s->wake_lat_cnt++;
		if (lat > s->wake_lat_max_ns)
			s->wake_lat_max_ns = lat;
	}
}

void BPF_STRUCT_OPS(pandemonium_stopping, struct task_struct *p, bool runnable)
{
	struct task_ctx *tctx = task_ctx(p);
	u64 now = bpf_ktime_get_ns(), used;

	if (!tctx)
		return;
	/*
	 * Charge wall time actually run rather than the slice consumed: the kernel may refill
	 * p->scx.slice (keep-running, SCX_SLICE_DFL), and a refilled slice read as "used" would
	 * wrap vtime. One second caps a bogus stamp after hotplug or a missed running().
	 */
	used = tctx->last_run_at && now > tctx->last_run_at ? now - tctx->last_run_at : 0;
	if (used > 1000 * MSEC_NS)
		used = 1000 * MSEC_NS;
	p->scx.dsq_vtime += scale_by_task_weight_inverse(p, used);
	if (!runnable)
		tctx->sleep_at = now;
}

void BPF_STRUCT_OPS(pandemonium_enable, struct task_struct *p)
{
	p->scx.dsq_vtime = vtime_now;
}

s32 BPF_STRUCT_OPS(pandemonium_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	struct task_ctx *tctx;

	tctx = bpf_task_storage_get(&task_ctx_stor, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tctx)
		return -ENOMEM;
	tctx->tier = TIER_INTERACTIVE;
	return 0;
}

void BPF_STRUCT_OPS(pandemonium_cpu_online, s32 cpu)
{
	if (!cpu_ctx(cpu)->online)
		__sync_fetch_and_sub(&nr_offline_cpus, 1);
	cpu_ctx(cpu)->online = 1;
}

void BPF_STRUCT_OPS(pandemonium_cpu_offline, s32 cpu)
{
	if (cpu_ctx(cpu)->online)
		__sync_fetch_and_add(&nr_offline_cpus, 1);
	cpu_ctx(cpu)->online = 0;
}

s32 BPF_STRUCT_OPS_SLEEPABLE(pandemonium_init)
{
	const struct cpumask *online;
	u32 i;
	s32 ret;

	bpf_for(i, 0, MAX_CPUS) {
		if (i >= nr_cpu_ids_ro)
			break;
		ret = scx_bpf_create_dsq(i, -1);
		if (ret) {
			scx_bpf_error("failed to create per-CPU DSQ %u: %d", i, ret);
			return ret;
		}
	}
	bpf_for(i, 0, MAX_NODES) {
		if (i >= nr_nodes_ro)
			break;
		ret = scx_bpf_create_dsq(node_dsq(i), -1);
		if (!ret)
			ret = scx_bpf_create_dsq(batch_dsq(i), -1);
		if (ret) {
			scx_bpf_error("failed to create node %u DSQs: %d", i, ret);
			return ret;
		}
	}

	online = scx_bpf_get_online_cpumask();
	bpf_for(i, 0, MAX_CPUS) {
		if (i >= nr_cpu_ids_ro)
			break;
		if (bpf_cpumask_test_cpu(i, online)) {
			cpu_ctx(i)->online = 1;
		} else {
			cpu_ctx(i)->online = 0;
			nr_offline_cpus++;
		}
	}
	scx_bpf_put_cpumask(online);
	return 0;
}

void BPF_STRUCT_OPS(pandemonium_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(pandemonium_ops,
	       .select_cpu = (void *)pandemonium_select_cpu,
	       .enqueue = (void *)pandemonium_enqueue,
	       .dispatch = (void *)pandemonium_dispatch,
	       .runnable = (void *)pandemonium_runnable,
	       .running = (void *)pandemonium_running,
	       .stopping = (void *)pandemonium_stopping,
	       .enable = (void *)pandemonium_enable,
	       .init_task = (void *)pandemonium_init_task,
	       .cpu_online = (void *)pandemonium_cpu_online,
	       .cpu_offline = (void *)pandemonium_cpu_offline,
	       .init = (void *)pandemonium_init,
	       .exit = (void *)pandemonium_exit,
	       .timeout_ms = 5000,
	       .name = "pandemonium");
