/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * scx_pandemonium: the BPF half. Every scheduling decision is made here; the Rust daemon only
 * writes knobs and topology into maps and reads counters and histograms back.
 */
#include <scx/common.bpf.h>
#include <bpf_experimental.h>
#include "intf.h"
#include "state.bpf.h"
#include "cgroup.bpf.h"
#include "weight.bpf.h"
#include "family.bpf.h"
#include "autogroup.bpf.h"
#include "classify.bpf.h"
#include "coop_learn.bpf.h"
#include "placement.bpf.h"
#include "bandwidth.bpf.h"
#include "codel.bpf.h"
#include "preempt.bpf.h"
#include "coop.bpf.h"
#include "yield.bpf.h"
#include "dispatch.bpf.h"
#include "dump.bpf.h"
#include "profile.bpf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

/*
 * The kernel's record_wakee(), in our own task context and for synchronous wakeups only. The
 * kernel updates task_struct's wakee_flips in the fair class's select_task_rq() alone, so under
 * sched_ext it stays what the task inherited at fork: a pipe pair forked by a shell that had
 * woken many tasks under EEVDF never counted as a pair, and each message went to the idle CPU
 * next door. Counting every wakeup, as the kernel does, also counts the kthreads a timer
 * interrupt wakes on the waker's time, which made a pipe pair look wide; a synchronous wakeup
 * is one the waker asked for.
 */
static __always_inline void record_wakee(struct task_struct *p, struct task_ctx *wctx, u64 now)
{
	if (now - wctx->flips_decay_at > NSEC_PER_SEC) {
		wctx->wakee_flips >>= 1;
		wctx->flips_decay_at = now;
	}
	if (wctx->last_wakee != (u32)p->pid) {
		wctx->last_wakee = p->pid;
		wctx->wakee_flips++;
	}
}

/*
 * Both sides of a synchronous wakeup (select_cpu() passes @wctx for those alone) mostly wake each
 * other. The kernel's wake_wide() calls a waker with few flips "affine" even when its wakee wakes
 * many: a one-way producer/consumer pair. Here both must be narrow: perf bench messaging's
 * receivers never wake anyone, and treating each sender->receiver wakeup as a pair moved
 * receivers to the sender's CPU and back far more often.
 */
static __always_inline bool sync_pair(struct task_ctx *tctx, struct task_ctx *wctx,
				      struct topo_params *tp)
{
	return wctx && wctx->wakee_flips < tp->wake_wide_factor &&
	       tctx->wakee_flips < tp->wake_wide_factor;
}

/*
 * A pipe pair that handoff_cpu() did not keep on the waker's CPU (a BATCH waker, or work queued
 * there): keep the wakee near the waker, by R_eff, so the data they share stays in cache.
 */
static __always_inline s32 wake_sync_target(struct task_struct *p, bool pair,
					    struct topo_params *tp)
{
	s32 wcpu, cpu;

	if (!pair)
		return -1;
	wcpu = bpf_get_smp_processor_id();
	cpu = rank_pick(p, wcpu, tp->affinity_search_budget, RANK_WANT_IDLE, 0, tp);
	if (cpu < 0 && cpu_is_online(wcpu) && bpf_cpumask_test_cpu(wcpu, p->cpus_ptr))
		cpu = wcpu;
	return cpu;
}

/*
 * The waker is about to give its CPU up and @p is what it waits for: a vfork() child (its parent
 * blocks until the child execs or exits), the parent an exiting task wakes (waitpid, a thread's
 * join), or the other end of a pipe pair whose waker is not BATCH and has nothing queued behind
 * it (it blocks on the reply next). @p takes that CPU's local DSQ and runs the moment the waker
 * leaves: no IPI, no preemption, no queue. Elsewhere it queued behind busy loops or waited for a
 * remote CPU to take the preemption IPI, and a new child's first run under load waited several
 * ticks. A pipe pair sent to the idle CPU next door paid a cross-CPU wakeup per message, about
 * twice the time to first run of a wakeup on the waker's CPU, where the fair class keeps such a
 * pair. Only into an empty local DSQ, so an exit waking many tasks does not stack them on one
 * CPU, and only while nothing waits in this CPU's own DSQ or its node's overflow: the local DSQ
 * runs before dispatch() is even called, so a fork/exit chain (a shell looping over a short
 * command) handed the CPU from parent to child and back while a woken task in the overflow
 * waited tens of milliseconds.
 */
static __always_inline s32 handoff_cpu(struct task_struct *p, struct task_ctx *tctx,
					u64 wake_flags, bool pair, struct task_ctx *wctx,
					struct topo_params *tp)
{
	struct task_struct *waker = bpf_get_current_task_btf();
	s32 cpu = bpf_get_smp_processor_id();

	/*
	 * A wakeup from an interrupt (a timer's) has no waker: the current task is whatever the
	 * interrupt cut into. Taken for the waker, an exiting one (a build's short process, still
	 * in do_exit()) held a periodic audio thread in its local DSQ for up to 40 ms.
	 */
	if (!bpf_in_task())
		return -1;
	if (!((wake_flags & SCX_WAKE_FORK) && p->vfork_done) && !(waker->flags & PF_EXITING)) {
		if (!pair || !wctx || wctx->tier == TIER_BATCH)
			return -1;
	}
	if (!cpu_is_online(cpu) || !bpf_cpumask_test_cpu(cpu, p->cpus_ptr) ||
	    scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu) > 0 || scx_bpf_dsq_nr_queued(cpu) > 0 ||
	    scx_bpf_dsq_nr_queued(node_dsq(cpu_node(cpu))) > 0)
		return -1;
	/* A chain that ran past its share waits its turn with the BATCH work (family.bpf.h). */
	family_vtime(p, tctx);
	if (outran_share(p, tctx, 0, cpu_node(cpu), tp))
		return -1;
	return cpu;
}

static __always_inline s32 select_cpu_body(struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	struct task_ctx *tctx = task_ctx(p);
	struct tuning_knobs *k = knobs();
	struct topo_params *tp = topo();
	/* Only a synchronous wakeup reads or counts the waker's pairing. */
	struct task_ctx *wctx = wake_flags & SCX_WAKE_SYNC ? task_ctx(bpf_get_current_task_btf()) : NULL;
	bool is_idle = false, pair;
	s32 cpu;

	if (!tctx || !k || !tp)
		return prev_cpu;
	/* A group over its cpu.max quota waits in enqueue(), not on a CPU found here. */
	if (nr_bw_groups && bw_throttled_until(tctx->cgid, bpf_ktime_get_ns()))
		return prev_cpu;
	if (coop_learn_ro)
		coop_note_wake(p, tctx, wake_flags);
	if (coop_on_ro && (tctx->flags & TF_COOP))
		return coop_select(p, tctx, prev_cpu, wake_flags);

	if (wctx)
		record_wakee(p, wctx, bpf_ktime_get_ns());
	pair = sync_pair(tctx, wctx, tp);
	cpu = handoff_cpu(p, tctx, wake_flags, pair, wctx, tp);
	if (cpu >= 0) {
		task_vtime(p, tctx, SCX_ENQ_WAKEUP, k, tp);
		insert_local(p, tctx, cpu, task_slice(tctx, k), 0);
		return cpu;
	}
	tctx->sync_wake = (wake_flags & SCX_WAKE_SYNC) &&
			  !(bpf_get_current_task_btf()->flags & PF_EXITING);
	cpu = wake_sync_target(p, pair, tp);
	if (cpu >= 0) {
		place_pcpu_with_spill(p, tctx, cpu, task_slice(tctx, k),
				      task_vtime(p, tctx, SCX_ENQ_WAKEUP, k, tp), 0);
		return cpu;
	}
	cpu = pick_idle_sized(p, tctx, prev_cpu, tp);
	/*
	 * Synchronous wakeups never preempt (try_wakeup_preempt()). hybrid_ro first: on a symmetric
	 * machine the verifier drops the whole test.
	 */
	if (hybrid_ro && cpu < 0 && !tctx->sync_wake && cpu_ctx(bpf_get_smp_processor_id())->online &&
	    (cpu = claim_big_batch(p, tctx, prev_cpu, tp)) >= 0) {
		task_vtime(p, tctx, SCX_ENQ_WAKEUP, k, tp);
		preempt_on(p, tctx, cpu, task_slice(tctx, k), 0);
		return cpu;
	}
	if (cpu < 0)
		cpu = find_idle_l2_sibling(p, prev_cpu, k);
	if (cpu < 0 && pack_on_busy(p, tctx, prev_cpu, k, tp))
		return prev_cpu;
	if (cpu < 0) {
		cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
		if (!is_idle)
			return cpu;
	}
	STAT_INC(nr_idle_hits);
	task_vtime(p, tctx, SCX_ENQ_WAKEUP, k, tp);
	insert_local(p, tctx, cpu, task_slice(tctx, k), 0);
	return cpu;
}

s32 BPF_STRUCT_OPS(pandemonium_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	PROF_START();
	s32 cpu = select_cpu_body(p, prev_cpu, wake_flags);

	PROF_END(PROF_SELECT_CPU);
	return cpu;
}

static __always_inline void enqueue_body(struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = task_ctx(p);
	struct tuning_knobs *k = knobs();
	struct topo_params *tp = topo();
	s32 cpu = scx_bpf_task_cpu(p), idle;
	u64 slice, vtime, until;
	int held = -1; /* outran_share() once asked: 0 or 1 */
	bool sync;

	if (!tctx || !k || !tp) {
		scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, SCX_SLICE_DFL, enq_flags);
		/* The CPU is going idle past this task (SCX_ENQ_LAST): it must look again. */
		if (enq_flags & SCX_ENQ_LAST)
			kick_cpu(cpu, SCX_KICK_IDLE);
		return;
	}
	/* Only the select_cpu() of this very wakeup may have set it. */
	sync = tctx->sync_wake;
	if (sync)
		tctx->sync_wake = 0;
	if (enq_flags & SCX_ENQ_WAKEUP)
		STAT_INC(nr_enq_wakeup);
	else
		STAT_INC(nr_enq_requeue);

	slice = task_slice(tctx, k);
	vtime = task_vtime(p, tctx, enq_flags, k, tp);

	/*
	 * cpu.max binds every task of the group, pinned ones too (kernel threads live in the root).
	 * SCX_ENQ_LAST: dispatch() found nothing else for this CPU and did not renew this task's
	 * slice, which it does only for a group over quota.
	 */
	if (nr_bw_groups && !(p->flags & PF_KTHREAD) && !is_migration_disabled(p) &&
	    (until = bw_throttled_until(tctx->cgid, bpf_ktime_get_ns()))) {
		bw_park(p, tctx, until, slice, vtime, enq_flags);
		return;
	}
	if (enq_flags & SCX_ENQ_LAST) {
		insert_local(p, tctx, cpu, slice, enq_flags);
		kick_cpu(cpu, SCX_KICK_IDLE);
		return;
	}

	/*
	 * A task that can run on one CPU only waits for that CPU alone. Kernel threads (ksoftirqd,
	 * cpuhp, per-CPU kworkers) and migration-disabled tasks go straight to its local DSQ: the
	 * kernel stops calling dispatch() on a CPU going offline while those must still run there.
	 * A pinned user task does so only when it wakes to an empty local DSQ; a requeue after its
	 * slice, or a wakeup behind other work, waits in the CPU's own DSQ in vtime order. Pinned
	 * tasks that always went local (two pinned long-runners per CPU, stress-ng --affinity-pin
	 * in the sched-ext CI check) kept every local DSQ fed, so dispatch() and its starvation
	 * rescue never ran and a task in a shared DSQ waited until sched_ext's watchdog fired.
	 */
	if (p->nr_cpus_allowed == 1 || is_migration_disabled(p)) {
		bool user = !(p->flags & PF_KTHREAD) && !is_migration_disabled(p);

		STAT_INC(nr_pinned);
		/* A pinned periodic task (cyclictest -a, an audio thread) preempts like any waker. */
		if (user && try_wakeup_preempt(p, tctx, cpu, slice, vtime, enq_flags, sync, tp, &held))
			return;
		if (!user || !cpu_is_online(cpu) ||
		    ((enq_flags & SCX_ENQ_WAKEUP) &&
		     scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu) <= 0)) {
			insert_local(p, tctx, cpu, slice, enq_flags);
			kick_cpu(cpu, SCX_KICK_IDLE);
			return;
		}
		insert_pcpu(p, tctx, cpu, slice, vtime, enq_flags);
		return;
	}

	/*
	 * Placement on an idle CPU: one exists and is claimed, and the task goes straight to it.
	 * On a hybrid machine the size the tier wants comes before cache affinity.
	 */
	idle = pick_idle_sized(p, tctx, cpu, tp);
	if (idle < 0 && k->affinity_mode == AFFINITY_STRONG)
		idle = find_idle_l2_sibling(p, cpu, k);
	if (idle < 0)
		idle = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (idle >= 0) {
		insert_local(p, tctx, idle, slice, enq_flags);
		kick_cpu(idle, SCX_KICK_IDLE);
		STAT_INC(nr_soft_kicks);
		return;
	}
	/* No idle CPU for it: its process, if a team, has more runnable threads than CPUs. */
	if (coop_learn_ro)
		tctx->coop_crowd++;
	if (coop_on_ro && (tctx->flags & TF_COOP)) {
		coop_enqueue(p, tctx, cpu, slice, enq_flags);
		return;
	}

	if (try_wakeup_preempt(p, tctx, cpu, slice, vtime, enq_flags, sync, tp, &held))
		return;

	/*
	 * A consumer woken by a producer that keeps running (hackbench's receivers, a socket
	 * server's workers) queues on the producer's CPU, past the depth gate, and runs when the
	 * producer stops: it then reads a batch. In the shared overflow the other CPU took it at
	 * once and it read one message per wakeup, several times the fair class's context switches.
	 * Other CPUs steal it only once it has waited a preemption threshold (DISP_STEAL_AGED), or
	 * when they have nothing else to run.
	 */
	if (sync && tctx->tier != TIER_BATCH) {
		s32 wcpu = bpf_get_smp_processor_id();

		if (cpu_is_online(wcpu) && bpf_cpumask_test_cpu(wcpu, p->cpus_ptr)) {
			insert_pcpu(p, tctx, wcpu, slice, vtime, enq_flags);
			return;
		}
	}

	/*
	 * Placement in the overflow DSQs. A new task starts INTERACTIVE and keeps that until it
	 * has behaved like BATCH for MATURE_SAMPLES slices (note_stop()): a program started during
	 * a build must not queue behind the build.
	 */
	if (tctx->tier == TIER_BATCH ||
	    (held >= 0 ? held : outran_share(p, tctx, 0, cpu_node(cpu), tp))) {
		insert_batch(p, tctx, cpu_node(cpu), slice, vtime, enq_flags);
		return;
	}
	queue_interactive(p, tctx, cpu_node(cpu), slice, vtime, enq_flags);
}

void BPF_STRUCT_OPS(pandemonium_enqueue, struct task_struct *p, u64 enq_flags)
{
	PROF_START();

	enqueue_body(p, enq_flags);
	PROF_END(PROF_ENQUEUE);
}

void BPF_STRUCT_OPS(pandemonium_dispatch, s32 cpu, struct task_struct *prev)
{
	struct tuning_knobs *k;
	struct task_ctx *tctx;
	enum disp_step step;

	PROF_START();

	STAT_INC(nr_dispatches);
	step = dispatch_waterfall(cpu, prev);
	/*
	 * DISP_KEEP_RUNNING: nothing queued anywhere; let the previous task keep the CPU if it still
	 * wants it and its group has quota left (else it reaches enqueue() with SCX_ENQ_LAST and is
	 * parked).
	 */
	if (step == DISP_NONE && prev && (prev->scx.flags & SCX_TASK_QUEUED) && (k = knobs()) &&
	    (tctx = task_ctx(prev)) && may_keep_running(tctx, bpf_ktime_get_ns())) {
		u64 ran = bpf_ktime_get_ns() - tctx->last_run_at;

		prev->scx.slice = task_slice(tctx, k);
		/* A yielder that found nothing to yield to runs on without a running(). */
		tctx->yielded = 0;
		runner_kept(prev, tctx, cpu, tctx->last_run_at ? charge_vtime(ran, tctx->weight) : 0);
		STAT_INC(nr_keep_running);
		step = DISP_KEEP_RUNNING;
	}
	if (trace_slow_ro)
		cpu_ctx(cpu)->disp_step = step;
	PROF_END(PROF_STEP0 + step);
}

void BPF_STRUCT_OPS(pandemonium_runnable, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = task_ctx(p);
	struct pandemonium_hist *h;
	u32 zero = 0;

	if (!tctx)
		return;
	cg_task_runnable(p, tctx, autogroup_refresh(p, tctx));
	if (!tctx->sleep_at)
		return;
	note_wakeup(tctx, bpf_ktime_get_ns());
	h = bpf_map_lookup_elem(&hist_map, &zero);
	if (h)
		h->sleep[log2_bucket(bpf_ktime_get_ns() - tctx->sleep_at, NR_SLEEP_BUCKETS)]++;
	tctx->sleep_at = 0;
}

void BPF_STRUCT_OPS(pandemonium_quiescent, struct task_struct *p, u64 deq_flags)
{
	struct task_ctx *tctx = task_ctx(p);

	if (tctx)
		cg_task_quiescent(tctx);
}

/*
 * -d/--debug: a wait longer than the overflow rescue age, with the DSQ it waited in (a CPU id is
 * that CPU's own DSQ, 0xc000000000000000|cpu its local DSQ, 0x10000+node and 0x20000+node the
 * node and batch overflows) and the step of this CPU's last dispatch (enum disp_step; 0 when the
 * task was put straight into the local DSQ, with no dispatch since the previous run).
 */
static __always_inline void trace_slow_wait(struct task_struct *p, struct task_ctx *tctx, s32 cpu,
					    u64 lat, struct topo_params *tp)
{
	struct cpu_ctx *c = cpu_ctx(cpu);

	if (lat >= tp->overflow_rescue_ns)
		bpf_printk("slow wait %llu us: pid %d %s tier %d (queued as %d) samples %u dsq 0x%llx enq_flags 0x%llx cpu %d step %d",
			   lat / USEC_NS, p->pid, p->comm, tctx->tier, tctx->enq_tier,
			   tctx->samples, tctx->enq_dsq, tctx->enq_flags, cpu, c->disp_step);
	c->disp_step = DISP_NONE;
}

/*
 * The virtual clock follows the tasks that start running, but by at most a batch slice per start.
 * A light task runs far ahead of the clock (a nice 19 task's one tick costs 68 ticks of vtime):
 * had the clock jumped to it when it ran, every other task's lag floor would jump with it and
 * the other light tasks' banked charges would be forgiven. Heavier tasks start within a slice
 * of the clock and move it as before.
 */
static __always_inline void advance_vtime_now(u64 v)
{
	u64 step = knobs()->batch_slice_ns;

	if (!time_before(vtime_now, v))
		return;
	vtime_now = time_before(vtime_now + step, v) ? vtime_now + step : v;
}

/*
 * A wait longer than any before it on this CPU: if it is the longest anywhere, whose it was. A
 * race between CPUs may keep the shorter of two records that land together; the per-CPU maxima
 * in the stats stay exact.
 */
static __noinline void note_longest_wait(struct task_struct *p, struct task_ctx *tctx, u64 lat)
{
	u32 zero = 0;
	struct longest_wait *w = bpf_map_lookup_elem(&longest_wait, &zero);

	if (!w || lat <= w->ns)
		return;
	w->ns = lat;
	w->cgid = tctx->cgid;
	w->weight = tctx->weight;
	w->pid = p->pid;
	w->tier = tctx->tier;
	w->policy = p->policy;
	w->rescued = tctx->wait_rescued;
	bpf_probe_read_kernel_str(w->comm, sizeof(w->comm), p->comm);
}

static __always_inline void running_body(struct task_struct *p)
{
	struct task_ctx *tctx = task_ctx(p);
	struct pandemonium_stats *s;
	struct pandemonium_hist *h;
	struct topo_params *tp;
	u64 now = bpf_ktime_get_ns(), lat;
	s32 cpu = scx_bpf_task_cpu(p);
	u32 zero = 0;

	advance_vtime_now(p->scx.dsq_vtime);
	if (!tctx)
		return;
	batch_started(tctx, p->scx.dsq_vtime, cpu_node(cpu));
	tctx->last_run_at = now;
	tctx->bw_at = now;
	tctx->yielded = 0;
	/* Before runner_started(): interactive work waiting nearby may still cut the quantum short. */
	if (coop_on_ro)
		coop_running(p, tctx, cpu, now);
	runner_started(p, tctx, cpu);
	if (coop_on_ro)
		tctx->coop_slice = p->scx.slice;
	if ((s = stats()) && tctx->last_cpu >= 0) {
		if (same_l2(tctx->last_cpu, cpu))
			s->l2_hit[tier_idx(tctx->tier)]++;
		else
			s->l2_miss[tier_idx(tctx->tier)]++;
	}
	tctx->last_cpu = cpu;
	if (!tctx->enqueue_at)
		return;

	lat = now - tctx->enqueue_at;
	tctx->enqueue_at = 0;
	note_queue_wait(tctx, lat);
	if ((tp = topo()))
		codel_observe(cpu, lat, now, tp);
	if (trace_slow_ro && tp)
		trace_slow_wait(p, tctx, cpu, lat, tp);
	h = bpf_map_lookup_elem(&hist_map, &zero);
	if (h)
		h->wake_lat[tier_idx(tctx->tier)][log2_bucket(lat, NR_LAT_BUCKETS)]++;
	if (s) {
		s->wake_lat_sum_ns += lat;
		s->wake_lat_cnt++;
		if (lat > s->wake_lat_max_ns) {
			s->wake_lat_max_ns = lat;
			note_longest_wait(p, tctx, lat);
		}
	}
}

void BPF_STRUCT_OPS(pandemonium_running, struct task_struct *p)
{
	PROF_START();

	running_body(p);
	PROF_END(PROF_RUNNING);
}

static __always_inline void stopping_body(struct task_struct *p, bool runnable)
{
	struct task_ctx *tctx = task_ctx(p);
	struct tuning_knobs *k = knobs();
	struct topo_params *tp = topo();
	u64 now = bpf_ktime_get_ns(), used;

	if (!tctx || !k || !tp)
		return;
	/*
	 * Charge wall time actually run rather than the slice consumed: the kernel may refill
	 * p->scx.slice (keep-running, SCX_SLICE_DFL), and a refilled slice read as "used" would
	 * wrap vtime. One second caps a bogus stamp after hotplug or a missed running().
	 */
	used = tctx->last_run_at && now > tctx->last_run_at ? now - tctx->last_run_at : 0;
	if (used > 1000 * MSEC_NS)
		used = 1000 * MSEC_NS;
	p->scx.dsq_vtime += charge_task(p, tctx, used, now, tp);
	bw_charge_task(tctx, now);
	if (coop_on_ro)
		coop_stopping(p, tctx, scx_bpf_task_cpu(p), used, runnable);
	cpu_ctx(scx_bpf_task_cpu(p))->run_kind = RUN_NONE;
	if (coop_learn_ro)
		coop_note_stop(p, tctx, runnable);
	tctx->wait_rescued = 0;
	if (!runnable) {
		tctx->sleep_at = now;
		tctx->kin = 0;
	}
	note_stop(p, tctx, k, used, runnable, now);
}

void BPF_STRUCT_OPS(pandemonium_stopping, struct task_struct *p, bool runnable)
{
	PROF_START();

	stopping_body(p, runnable);
	PROF_END(PROF_STOPPING);
}

/*
 * CPU 0's tick keeps the global longrun flag (some node's batch DSQ has stayed non-empty past
 * longrun_thresh_ns): one writer, no contention, and no timer: a 4 ms bpf_timer doing this
 * measurably worsened the wakeup latency of periodic tasks under hogs.
 */
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

/*
 * Queues that no CPU will serve, found by whichever CPU ticks first every STRAND_SCAN_NS (one
 * load and compare per tick on the others). Two cases:
 * - A CPU going offline (past cpu_offline()) is idle while its local DSQ holds work. The kernel
 *   no longer calls enqueue() or dispatch() there, so nothing of ours would make it look, and a
 *   per-CPU kthread left in that DSQ (the hotplug thread itself) waited there until the
 *   watchdog ejected us. It is kicked. kick_cpu() skips such a CPU because it guards the IPIs
 *   sent from one; kicking one is safe.
 * - A CPU's own DSQ has not been served for STRANDED_NS. The kernel stops calling dispatch() on
 *   a CPU as soon as it goes inactive, well before cpu_offline() (sched_cpu_deactivate() waits
 *   for an RCU grace period between the two), so tasks pinned there wait in our DSQ. One that
 *   was preempted inside an RCU read-side section (a thread pinned to that CPU, in
 *   sched_getaffinity()) then holds up the very grace period the offline waits for: the offline
 *   hung until the watchdog ejected us. The next dispatch anywhere moves them into that CPU's
 *   local DSQ, which the kernel serves (or, for an inactive CPU, into the global DSQ that CPU
 *   still consumes, and the kernel pushes them on from there).
 */
#define STRAND_SCAN_NS (10 * MSEC_NS)
#define STRANDED_NS (250 * MSEC_NS)

static __always_inline void stranded_scan(u64 now)
{
	u64 at = strand_scan_at, since;
	u32 i;

	if (now - at < STRAND_SCAN_NS || __sync_val_compare_and_swap(&strand_scan_at, at, now) != at)
		return;
	bpf_for(i, 0, MAX_CPUS) {
		if (i >= nr_cpu_ids_ro)
			break;
		if (cpu_ctx(i)->drain) {
			if (scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | i) > 0) {
				scx_bpf_kick_cpu(i, SCX_KICK_IDLE);
				STAT_INC(nr_offline_kicks);
			}
			continue;
		}
		since = cpu_ctx(i)->pcpu_since;
		if (since && now - since >= STRANDED_NS && stranded_cpu < 0 &&
		    scx_bpf_dsq_nr_queued(i) > 0)
			stranded_cpu = i;
	}
}

void BPF_STRUCT_OPS(pandemonium_tick, struct task_struct *p)
{
	struct task_ctx *tctx = task_ctx(p);
	struct tuning_knobs *k = knobs();
	struct topo_params *tp = topo();
	s32 cpu = scx_bpf_task_cpu(p);
	u64 now = bpf_ktime_get_ns();

	if (now - knobs_at >= KNOB_REFRESH_NS)
		refresh_knobs(now);
	if (cpu == 0 && tp) {
		update_longrun(tp, now);
		codel_step(tp);
	}
	/*
	 * Past cpu_offline() only per-CPU kthreads (the hotplug thread among them) and
	 * migration-disabled tasks run here, and the kernel no longer calls enqueue(). When such a
	 * task's slice ends with nothing else queued, 6.18 requeues it in this CPU's local DSQ for
	 * our SCX_ENQ_LAST without rescheduling and the CPU goes idle past it: the unplug then hung
	 * until the watchdog ejected us. Here a slice does not end; the task runs until it blocks.
	 */
	if (!cpu_ctx(cpu)->online) {
		if (p->scx.slice < SCX_SLICE_DFL) {
			p->scx.slice = SCX_SLICE_DFL;
			STAT_INC(nr_offline_keeps);
		}
		return;
	}
	/* Not from a CPU past cpu_offline(): its kicks could strand an irq_work (kick_cpu()). */
	stranded_scan(now);
	if (tctx && tctx->cgid && bw_charge_task(tctx, now)) {
		p->scx.slice = 0;
		return;
	}
	if (tctx && k && tp)
		tick_preempt(p, tctx, cpu, k, tp, now);
	/* A cut for interactive work is not a mate's preemption (coop_stopping()). */
	if (coop_on_ro && tctx && !p->scx.slice)
		tctx->coop_slice = 0;
}

/*
 * sched_yield() (@to NULL): yield_cpu(). yield_to() (@to set, KVM's directed yield to a vCPU
 * holding a lock) is not honoured: there is no DSQ move that runs @to here and now.
 */
bool BPF_STRUCT_OPS(pandemonium_yield, struct task_struct *from, struct task_struct *to)
{
	struct task_ctx *tctx;

	if (to)
		return false;
	/* A run that ends in a yield waits on a mate (a spin-yield barrier): evidence. */
	if (coop_learn_ro && (tctx = task_ctx(from)))
		coop_note_mate(from, tctx);
	if (coop_on_ro && coop_yield(from))
		return false;
	yield_cpu(from);
	return false;
}

/*
 * exec starts another program in the same task.
 * - Its first sleep ends its start, as a new task's does (note_stop(): start_over() when no
 *   wakeup is on record). A shell's child that had slept once before it exec'd had one, so the
 *   new program was judged by its start burst, cut only by preemptions: a game launched beside
 *   a build entered its frame loop BATCH and its main thread waited 20-60 ms a frame for a
 *   second. The rates it inherited stay: zeroed as well, they scored every start burst BATCH,
 *   and a launch crawled in the batch DSQ behind a build.
 * - --coop names a program, and a program's name is its comm from exec on: a shell's child that
 *   execs the named program is in the group from its first run, not from the next periodic
 *   refresh_identity() in note_stop().
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(pandemonium_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct task_ctx *tctx = task_ctx(p);

	if (tctx) {
		refresh_identity(p, tctx);
		tctx->last_wake_at = 0;
	}
	return 0;
}

/* A process's exit: its parent takes up the vtime it reached (family_note_exit()). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(pandemonium_proc_exit, struct task_struct *p)
{
	family_note_exit(p, bpf_ktime_get_ns());
	return 0;
}

void BPF_STRUCT_OPS(pandemonium_enable, struct task_struct *p)
{
	struct task_ctx *tctx = task_ctx(p);

	/*
	 * New tasks start at the virtual clock's now: behind what already waits in a vtime-ordered
	 * DSQ (a fork storm does not jump ahead of runnable daemons), but without a penalty that
	 * made every program launched under load wait out the whole backlog. A group that has run
	 * past its share starts its new tasks at its own clock instead (charge_task()).
	 */
	if (tctx)
		autogroup_refresh(p, tctx);
	p->scx.dsq_vtime = tctx ? family_start_vtime(p, tctx, bpf_get_current_task_btf(),
						     cg_start_vtime(tctx))
				: vtime_now;
	if (tctx) {
		task_weight(p, tctx, bpf_ktime_get_ns());
		refresh_identity(p, tctx);
		warm_start(p, tctx);
	}
}

s32 BPF_STRUCT_OPS(pandemonium_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	struct task_ctx *tctx;

	tctx = bpf_task_storage_get(&task_ctx_stor, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tctx)
		return -ENOMEM;
	task_set_cgroup(tctx, args->cgroup);
	tctx->tier = min_tier(TIER_INTERACTIVE, admin_tier_cap(p, tctx));
	tctx->last_cpu = -1;
	return 0;
}

s32 BPF_STRUCT_OPS_SLEEPABLE(pandemonium_cgroup_init, struct cgroup *cgrp,
			     struct scx_cgroup_init_args *args)
{
	struct cg_ctx c = {}, *cp;
	struct cgroup *parent;
	u64 id;

	/* Root tasks compete one by one with the top-level groups: the root needs no entry. */
	if (!cgrp->level)
		return 0;
	id = cgrp->kn->id;
	c.id = id;
	c.level = cgrp->level;
	c.weight = args->weight ? args->weight : CGROUP_WEIGHT_DFL;
	if (bpf_core_field_exists(args->sched_idle))
		c.idle = args->sched_idle;
	c.idle_eff = c.idle;
	if (cgrp->level > 1) {
		parent = bpf_cgroup_ancestor(cgrp, cgrp->level - 1);
		if (parent) {
			c.parent_id = parent->kn->id;
			bpf_cgroup_release(parent);
		}
	}
	/*
	 * A full map is not worth failing the cgroup's creation for: without an entry its tasks
	 * are charged as root tasks, fair by nice.
	 */
	if (bpf_map_update_elem(&cg_ctxs, &id, &c, BPF_ANY))
		return 0;
	if (bpf_core_field_exists(args->bw_quota_us) && (cp = cg_lookup(id)))
		bw_set(cp, args->bw_period_us, args->bw_quota_us);
	return 0;
}

void BPF_STRUCT_OPS(pandemonium_cgroup_exit, struct cgroup *cgrp)
{
	u64 id = cgrp->kn->id;
	struct cg_ctx *c = cg_lookup(id);

	if (c && c->bw_quota_ns)
		__sync_fetch_and_sub(&nr_bw_groups, 1);
	bpf_map_delete_elem(&cg_ctxs, &id);
}

void BPF_STRUCT_OPS(pandemonium_cgroup_set_bandwidth, struct cgroup *cgrp, u64 period_us,
		    u64 quota_us, u64 burst_us)
{
	u64 id = cgrp->kn->id;
	struct cg_ctx *c = cg_lookup(id);

	if (c)
		bw_set(c, period_us, quota_us);
}

void BPF_STRUCT_OPS(pandemonium_cgroup_move, struct task_struct *p, struct cgroup *from,
		    struct cgroup *to)
{
	struct task_ctx *tctx = task_ctx(p);
	bool counted;

	if (!tctx)
		return;
	counted = tctx->cnt_w;
	cg_task_quiescent(tctx);
	task_set_cgroup(tctx, to);
	if (counted)
		cg_task_runnable(p, tctx, cg_lookup(tctx->cgid));
}

void BPF_STRUCT_OPS(pandemonium_cgroup_set_weight, struct cgroup *cgrp, u32 weight)
{
	u64 id = cgrp->kn->id;
	struct cg_ctx *c = cg_lookup(id);

	if (c)
		cg_set_weight(c, weight);
}

void BPF_STRUCT_OPS(pandemonium_cgroup_set_idle, struct cgroup *cgrp, bool idle)
{
	u64 id = cgrp->kn->id;
	struct cg_ctx *c = cg_lookup(id);

	if (c) {
		c->idle = idle;
		c->share_at = 0;
	}
}

void BPF_STRUCT_OPS(pandemonium_cpu_online, s32 cpu)
{
	codel_reset_cpu(cpu);
	if (cpu_ctx(cpu)->drain) {
		cpu_ctx(cpu)->drain = 0;
		__sync_fetch_and_sub(&nr_offline_cpus, 1);
	}
	cpu_ctx(cpu)->online = 1;
	/*
	 * Work pinned to this CPU that was queued while it was offline waits in the global DSQ,
	 * which only this CPU can serve, and it may come up idle: make it look now.
	 */
	kick_cpu(cpu, SCX_KICK_IDLE);
}

/*
 * A higher scheduling class (an RT, deadline or stop task) took @cpu. The kernel only tells us:
 * the tasks already in this CPU's local DSQ stay there, behind that task, for as long as it runs.
 * That holds on every kernel we run on. The sched_ext deadline server of the kernels after 6.18
 * gives them a few percent of this CPU under a long RT run, not another CPU, and the kernel
 * requeues a local DSQ by itself only for tasks inserted with SCX_ENQ_IMMED (7.1+), which we do
 * not use. So each of them goes through enqueue() again (SCX_ENQ_REENQ, its first queueing stamp
 * kept: mark_enqueued()) and is placed on another CPU; a task pinned here queues here again. The
 * compat wrapper calls scx_bpf_dsq_reenq(SCX_DSQ_LOCAL) on kernels that have it.
 */
void BPF_STRUCT_OPS(pandemonium_cpu_release, s32 cpu, struct scx_cpu_release_args *args)
{
	/*
	 * --coop: a higher class takes the CPU (the fair class too, while tasks move over at
	 * attach), so a group's thread cut short here was not cut by a mate, whichever task of
	 * ours runs here next (coop_running()).
	 */
	if (coop_on_ro)
		cpu_ctx(cpu)->run_group = 0;
	scx_bpf_reenqueue_local();
}

void BPF_STRUCT_OPS(pandemonium_cpu_offline, s32 cpu)
{
	u32 i;

	/*
	 * The kernel no longer calls dispatch() here, and on 6.18 it leaves the tasks of this
	 * CPU's runqueue where we queued them: in our DSQs, still counted on this CPU, which
	 * cannot finish going offline (sched_cpu_wait_empty()) until each one has left. Another
	 * CPU pulled them only when nothing of its own was near the head of a shared DSQ, so one
	 * could wait there past the watchdog (a hog behind other hogs, beside a CPU flipped off
	 * and on each second). And the idle task of this CPU wakes the hotplug thread only when it
	 * next schedules, which a pull by another CPU does not make it do: the offline then hung
	 * for minutes. Moved into this CPU's local DSQ, each task runs here for a moment and the
	 * kernel pushes it to an active CPU (balance_push()), as it does for the fair class, and
	 * the last push wakes the hotplug thread. On 7.3.4 none of them is left here by now.
	 */
	bpf_for(i, 0, MAX_CPUS) {
		if (i >= nr_cpu_ids_ro)
			break;
		evict_to_local(i, &cpu_ctx(i)->pcpu_since, cpu);
	}
	bpf_for(i, 0, MAX_NODES) {
		if (i >= nr_nodes_ro)
			break;
		evict_to_local(node_dsq(i), &node_dsq_since[i & (MAX_NODES - 1)], cpu);
		evict_to_local(batch_dsq(i), &batch_dsq_since[i & (MAX_NODES - 1)], cpu);
		if (coop_on_ro)
			evict_to_local(coop_dsq(i), &coop_dsq_since[i & (MAX_NODES - 1)], cpu);
	}
	/* A throttled task is on this runqueue too: it runs a moment over its quota, once. */
	evict_to_local(BW_THROTTLED_DSQ, &bw_throttled_since, cpu);
	codel_reset_cpu(cpu);
	if (cpu_ctx(cpu)->online && !cpu_ctx(cpu)->drain) {
		cpu_ctx(cpu)->drain = 1;
		__sync_fetch_and_add(&nr_offline_cpus, 1);
	}
	cpu_ctx(cpu)->online = 0;
	cpu_ctx(cpu)->run_kind = RUN_NONE;
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
		if (!ret && coop_on_ro)
			ret = scx_bpf_create_dsq(coop_dsq(i), -1);
		if (ret) {
			scx_bpf_error("failed to create node %u DSQs: %d", i, ret);
			return ret;
		}
	}

	online = scx_bpf_get_online_cpumask();
	bpf_for(i, 0, MAX_CPUS) {
		if (i >= nr_cpu_ids_ro)
			break;
		cpu_ctx(i)->online = bpf_cpumask_test_cpu(i, online);
	}
	scx_bpf_put_cpumask(online);
	refresh_knobs(bpf_ktime_get_ns());
	ret = bw_init();
	if (ret)
		scx_bpf_error("failed to set up cpu.max throttling: %d", ret);
	return ret;
}

void BPF_STRUCT_OPS(pandemonium_exit, struct scx_exit_info *ei)
{
	PROF_REPORT();
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(pandemonium_ops,
	       .select_cpu = (void *)pandemonium_select_cpu,
	       .enqueue = (void *)pandemonium_enqueue,
	       .dispatch = (void *)pandemonium_dispatch,
	       .cpu_release = (void *)pandemonium_cpu_release,
	       .runnable = (void *)pandemonium_runnable,
	       .quiescent = (void *)pandemonium_quiescent,
	       .running = (void *)pandemonium_running,
	       .stopping = (void *)pandemonium_stopping,
	       .tick = (void *)pandemonium_tick,
	       .yield = (void *)pandemonium_yield,
	       .enable = (void *)pandemonium_enable,
	       .init_task = (void *)pandemonium_init_task,
	       .cgroup_init = (void *)pandemonium_cgroup_init,
	       .cgroup_exit = (void *)pandemonium_cgroup_exit,
	       .cgroup_move = (void *)pandemonium_cgroup_move,
	       .cgroup_set_weight = (void *)pandemonium_cgroup_set_weight,
	       .cgroup_set_bandwidth = (void *)pandemonium_cgroup_set_bandwidth,
	       .cgroup_set_idle = (void *)pandemonium_cgroup_set_idle,
	       .cpu_online = (void *)pandemonium_cpu_online,
	       .cpu_offline = (void *)pandemonium_cpu_offline,
	       .init = (void *)pandemonium_init,
	       .exit = (void *)pandemonium_exit,
	       .dump = (void *)pandemonium_dump,
	       .dump_cpu = (void *)pandemonium_dump_cpu,
	       .dump_task = (void *)pandemonium_dump_task,
	       .flags = SCX_OPS_ENQ_LAST,
	       .timeout_ms = 5000,
	       .name = "pandemonium");
