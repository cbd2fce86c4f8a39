/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench/lwk_quiet.c: trace lines and /proc snapshots into counts, over
 * the recorded text in testsuite/fixtures/quiet/ (see its README). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/lwk_quiet.h"
#include "check_lwk.h"

static const char *fixture(const char *name)
{
	static char path[1024];
	const char *src = getenv("srcdir");

	snprintf(path, sizeof(path), "%s/testsuite/fixtures/quiet/%s", src ? src : ".", name);
	return path;
}

/* The snapshot fixture as a sealed table, job 42 marked. */
static void load_snapshot(struct quiet_table *tb)
{
	FILE *f = fopen(fixture("tasks.snap"), "re");
	char line[512];
	struct quiet_task t;

	ck_assert_msg(f, "cannot open %s", fixture("tasks.snap"));
	memset(tb, 0, sizeof(*tb));
	while (fgets(line, sizeof(line), f)) {
		ck_assert_msg(!quiet_task_parse(line, &t), "snapshot line not read: %s", line);
		ck_assert_int_eq(quiet_table_add(tb, &t), 0);
	}
	fclose(f);
	quiet_table_seal(tb);
	quiet_mark_job(tb, 42, 0);
}

START_TEST(a_switch_line_with_blanks_in_a_comm_is_read)
{
	struct quiet_rec r;
	const char *line = "     Web Content-720     [002] d..2.   100.007300: sched_switch: "
			   "prev_comm=Web Content prev_pid=720 prev_prio=120 prev_state=S ==> "
			   "next_comm=my prog 2 next_pid=801 next_prio=120\n";

	ck_assert_int_eq(quiet_parse_line(line, &r), 1);
	ck_assert_int_eq(r.ev, QUIET_EV_SWITCH);
	ck_assert_int_eq(r.cpu, 2);
	ck_assert(fabs(r.ts - 100.0073) < 1e-9);
	ck_assert_str_eq(r.prev_comm, "Web Content");
	ck_assert_int_eq(r.prev_pid, 720);
	ck_assert_str_eq(r.next_comm, "my prog 2");
	ck_assert_int_eq(r.next_pid, 801);
}
END_TEST

START_TEST(interrupt_lines_give_their_names)
{
	struct quiet_rec r;

	ck_assert_int_eq(quiet_parse_line("  sh-511 [002] d.h1. 100.0: irq_handler_entry: irq=24 "
					  "name=virtio0-input.0\n", &r), 1);
	ck_assert_int_eq(r.ev, QUIET_EV_IRQ);
	ck_assert_str_eq(r.name, "virtio0-input.0");
	ck_assert_int_eq(quiet_parse_line("  sh-511 [012] ..s1. 100.0: softirq_entry: vec=1 "
					  "[action=TIMER]\n", &r), 1);
	ck_assert_int_eq(r.ev, QUIET_EV_SOFTIRQ);
	ck_assert_int_eq(r.cpu, 12);
	ck_assert_str_eq(r.name, "TIMER");
	ck_assert_int_eq(quiet_parse_line("  <idle>-0 [003] d.h2. 1.5: local_timer_entry: vector=236",
					  &r), 1);
	ck_assert_int_eq(r.ev, QUIET_EV_TIMER);
	ck_assert_str_eq(r.name, "local_timer");
	ck_assert_int_eq(quiet_parse_line("  <idle>-0 [003] dNh2. 1.5: call_function_single_entry: "
					  "vector=251", &r), 1);
	ck_assert_int_eq(r.ev, QUIET_EV_IPI);
	ck_assert_str_eq(r.name, "call_function_single");
}
END_TEST

START_TEST(headers_other_events_and_garbage_are_told_apart)
{
	struct quiet_rec r;

	ck_assert_int_eq(quiet_parse_line("# tracer: nop\n", &r), 0);
	ck_assert_int_eq(quiet_parse_line("\n", &r), 0);
	ck_assert_int_eq(quiet_parse_line("", &r), 0);
	ck_assert_int_eq(quiet_parse_line("  sh-511 [002] d..2. 1.0: sched_wakeup: comm=sh pid=7\n", &r),
			 0);
	/* no timestamp, no CPU, a field missing: refused, never guessed */
	ck_assert_int_eq(quiet_parse_line("  sh-511 [002] d..2. x: sched_switch: prev_comm=sh", &r), -1);
	ck_assert_int_eq(quiet_parse_line("  sh-511 d..2. 1.0: softirq_entry: vec=1 [action=RCU]", &r),
			 -1);
	ck_assert_int_eq(quiet_parse_line("  sh-511 [002] d..2. 1.0: sched_switch: prev_comm=sh "
					  "prev_pid=511 prev_prio=120 prev_state=R ==> next_comm=x",
					  &r), -1);
	ck_assert_int_eq(quiet_parse_line("  sh-511 [99999] d..2. 1.0: softirq_entry: vec=1 "
					  "[action=RCU]", &r), -1);
}
END_TEST

START_TEST(proc_stat_and_slurmstepd_titles_are_read)
{
	char comm[QUIET_COMM];
	int ppid;
	unsigned long flags;

	ck_assert_int_eq(quiet_stat_parse("42 (a) (b)) S 7 42 42 0 -1 4194560 0 0", comm,
					  sizeof(comm), &ppid, &flags), 0);
	ck_assert_str_eq(comm, "a) (b)");
	ck_assert_int_eq(ppid, 7);
	ck_assert_uint_eq(flags, 4194560);
	ck_assert_int_eq(quiet_stat_parse("42 (a S 7", comm, sizeof(comm), &ppid, &flags), -1);
	ck_assert_uint_eq(quiet_stepd_job("slurmstepd: [42.0]      "), 42);
	ck_assert_uint_eq(quiet_stepd_job("slurmstepd: [42.batch]"), 42);
	ck_assert_uint_eq(quiet_stepd_job("slurmstepd: [42.extern]"), 42);
	ck_assert_uint_eq(quiet_stepd_job("slurmstepd: [42]"), 0);
	ck_assert_uint_eq(quiet_stepd_job("slurmstepd: [x.0]"), 0);
	ck_assert_uint_eq(quiet_stepd_job("/usr/sbin/slurmstepd"), 0);
}
END_TEST

START_TEST(a_snapshot_line_survives_a_round_trip)
{
	struct quiet_task t = {.tid = 9, .tgid = 8, .ppid = 1, .flags = 0x208040, .ncpus = 3,
			       .stepd_job = 77}, u;
	char line[256];

	strcpy(t.comm, "Web Content");
	quiet_task_format(&t, line, sizeof(line));
	ck_assert_int_eq(quiet_task_parse(line, &u), 0);
	ck_assert_int_eq(u.tid, 9);
	ck_assert_int_eq(u.tgid, 8);
	ck_assert_int_eq(u.ppid, 1);
	ck_assert_uint_eq(u.flags, 0x208040);
	ck_assert_int_eq(u.ncpus, 3);
	ck_assert_uint_eq(u.stepd_job, 77);
	ck_assert_str_eq(u.comm, "Web Content");
	ck_assert_int_eq(quiet_task_parse("9 8 1\n", &u), -1);
}
END_TEST

/* Each thread of the snapshot, and some no snapshot saw, as a switch
 * onto an App CPU would count it. */
START_TEST(each_switch_is_sorted_by_what_it_ran)
{
	static const struct {
		int pid;
		const char *comm;
		enum quiet_kind kind;
		bool by_name;
	} want[] = {
		{0, "swapper/3", QUIET_IDLE, false},
		{511, "sh", QUIET_JOB, false},            /* a spinner: the job's task */
		{505, "slurmstepd", QUIET_JOB, false},    /* a thread of its slurmstepd */
		{510, "bash", QUIET_JOB, false},          /* the task that started them */
		{700, "sh", QUIET_USER, false},           /* busy, outside the job */
		{801, "pinned", QUIET_USER, false},       /* one CPU allowed, still a user's */
		{800, "migration/2", QUIET_USER, false},  /* a name does not make a kthread */
		{25, "ksoftirqd/2", QUIET_PERCPU, false},
		{28, "migration/3", QUIET_PERCPU, false},
		{30, "kworker/2:1", QUIET_PERCPU, false},
		{90, "kworker/u8:3", QUIET_UNBOUND, false},
		{15, "rcu_preempt", QUIET_UNBOUND, false},
		{300, "jbd2/vda1-8", QUIET_UNBOUND, false},
		{2, "kthreadd", QUIET_UNBOUND, false},
		/* the affinity, where /proc gave one, over the name's guess */
		{310, "irq/24-virtio0", QUIET_PERCPU, false},
		{311, "mystery", QUIET_UNBOUND, false},   /* no affinity read: a kthread all the same */
		{720, "Web Content", QUIET_USER, true},   /* gone before a snapshot */
		{99, "kworker/3:2H", QUIET_PERCPU, true},
		{101, "kworker/u8:5", QUIET_UNBOUND, true},
		{102, "kworker/R-kblockd", QUIET_UNBOUND, true},
		{103, "rcuop/3", QUIET_UNBOUND, true},    /* NOCB: not bound to CPU 3 */
		{104, "cpuhp/3", QUIET_PERCPU, true},
		{105, "irq/24-virtio0", QUIET_UNBOUND, true},
	};
	struct quiet_table tb;

	load_snapshot(&tb);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		bool by_name = !want[i].by_name;
		enum quiet_kind k = quiet_classify(want[i].pid, want[i].comm,
						   quiet_table_find(&tb, want[i].pid), &by_name);

		ck_assert_msg(k == want[i].kind, "%s (%d): %s, not %s", want[i].comm, want[i].pid,
			      quiet_kind_name[k], quiet_kind_name[want[i].kind]);
		ck_assert_msg(by_name == want[i].by_name, "%s (%d): by name %d", want[i].comm,
			      want[i].pid, by_name);
	}
	quiet_table_free(&tb);
}
END_TEST

START_TEST(the_job_is_what_its_slurmstepds_or_a_root_pid_started)
{
	struct quiet_table tb;

	load_snapshot(&tb);
	ck_assert(quiet_table_find(&tb, 500)->job);
	ck_assert(quiet_table_find(&tb, 512)->job);
	ck_assert(!quiet_table_find(&tb, 700)->job);
	ck_assert(!quiet_table_find(&tb, 1)->job);
	/* another job's number: nothing is this one's */
	quiet_mark_job(&tb, 43, 0);
	ck_assert(!quiet_table_find(&tb, 511)->job);
	/* --no-slurm: the spinners' parent */
	quiet_mark_job(&tb, 0, 510);
	ck_assert(quiet_table_find(&tb, 511)->job);
	ck_assert(quiet_table_find(&tb, 510)->job);
	ck_assert(!quiet_table_find(&tb, 500)->job);
	/* pid 800 was a kworker in an earlier snapshot, a user's later */
	ck_assert_str_eq(quiet_table_find(&tb, 800)->comm, "migration/2");
	ck_assert(!quiet_table_find(&tb, 9999));
	quiet_table_free(&tb);
}
END_TEST

START_TEST(the_recorded_trace_counts_as_expected)
{
	struct quiet_table tb;
	struct quiet_tally q;
	struct lwk_cpuset app = cpus_of("2-3");
	FILE *f = fopen(fixture("app-cpus.trace"), "re");
	char line[1024];
	unsigned long user = 0;

	ck_assert(f);
	load_snapshot(&tb);
	ck_assert_int_eq(quiet_tally_init(&q, &app, &tb), 0);
	while (fgets(line, sizeof(line), f))
		quiet_tally_line(&q, line);
	fclose(f);
	/* CPU 0 is not an App CPU: its switch, IRQ and softirq are not counted */
	ck_assert_uint_eq(q.n[QUIET_JOB], 5);
	ck_assert_uint_eq(q.n[QUIET_IDLE], 1);
	ck_assert_uint_eq(q.n[QUIET_USER], 4);
	ck_assert_uint_eq(q.n[QUIET_UNBOUND], 4);
	ck_assert_uint_eq(q.n[QUIET_PERCPU], 4);
	ck_assert_uint_eq(q.n[QUIET_C_IRQ], 2);
	ck_assert_uint_eq(q.n[QUIET_C_SOFTIRQ], 4);
	ck_assert_uint_eq(q.n[QUIET_C_TIMER], 2);
	ck_assert_uint_eq(q.n[QUIET_C_IPI], 2);
	ck_assert_uint_eq(q.by_name, 3);
	ck_assert_uint_eq(q.unreadable, 1);
	/* CPU 2: 4 ms of busy sh, 1.4 ms of the others; CPU 3: 2.5 ms */
	ck_assert_msg(fabs(q.foreign_s - 0.0079) < 1e-6, "foreign %.7f s", q.foreign_s);
	for (size_t i = 0; i < q.nnames; i++)
		if (q.names[i].col == QUIET_USER && !strcmp(q.names[i].name, "sh"))
			user = q.names[i].n;
	ck_assert_uint_eq(user, 1);
	quiet_tally_free(&q);
	quiet_table_free(&tb);
}
END_TEST

START_TEST(a_cpu_mask_is_written_as_the_kernel_reads_it)
{
	struct lwk_cpuset s = cpus_of("1,3");
	char buf[64];

	ck_assert_uint_eq(quiet_cpumask_format(&s, buf, sizeof(buf)), 8);
	ck_assert_str_eq(buf, "0000000a");
	s = cpus_of("0,33");
	quiet_cpumask_format(&s, buf, sizeof(buf));
	ck_assert_str_eq(buf, "00000002,00000001");
	s = cpus_of("31");
	quiet_cpumask_format(&s, buf, sizeof(buf));
	ck_assert_str_eq(buf, "80000000");
	/* cut to fit, the length it needs returned */
	s = cpus_of("0,33");
	ck_assert_uint_eq(quiet_cpumask_format(&s, buf, 5), 17);
	ck_assert_str_eq(buf, "0000");
}
END_TEST

Suite *lwk_quiet_suite(void)
{
	Suite *s = suite_create("bench/lwk_quiet");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, a_switch_line_with_blanks_in_a_comm_is_read);
	tcase_add_test(tc, interrupt_lines_give_their_names);
	tcase_add_test(tc, headers_other_events_and_garbage_are_told_apart);
	tcase_add_test(tc, proc_stat_and_slurmstepd_titles_are_read);
	tcase_add_test(tc, a_snapshot_line_survives_a_round_trip);
	tcase_add_test(tc, each_switch_is_sorted_by_what_it_ran);
	tcase_add_test(tc, the_job_is_what_its_slurmstepds_or_a_root_pid_started);
	tcase_add_test(tc, the_recorded_trace_counts_as_expected);
	tcase_add_test(tc, a_cpu_mask_is_written_as_the_kernel_reads_it);
	suite_add_tcase(s, tc);
	return s;
}
