/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The record of a job on the node (spank/casas/record.c): its text read
 * back, bad records refused, two threads each reading its own. */
#include <pthread.h>

#include "node_tree.h"

START_TEST(record_text_reads_back_and_bad_records_are_refused)
{
	static const char *const bad[] = {
		"job=0\nstatus=placed\n", "job=7\nstatus=sleeping\n", "job=7\n",
		"job=7\nstatus=placed\ncgroup=/a/../b\n", "job=7\nstatus=placed\ncgroup=rel\n",
		"job=7\nstatus=placed\ndies=0-99999\n", "job=7\nstatus=placed\nips=2:1\n",
		"job=7\nstatus=placed\noptions=probe=1h\n", "job=7\nstatus=placed\nprobing=x\n",
		"job=-7\nstatus=placed\n", "no equals\n",
		"job=7\nstatus=placed\nlaunchers=1:2:../x\n", "job=7\nstatus=placed\nlaunchers=1:2:step_\n",
		"job=7\nstatus=placed\nlaunchers=1:2:step_0/a\n", "job=7\nstatus=placed\nlaunchers=1:2:job_7\n",
		"job=7\nstatus=placed\nlaunchers=1:2\n", "job=7\nstatus=placed\nlaunchers=0:2:\n",
		"job=7\nstatus=placed\nlaunchers=1:2:,\n", "job=7\nstatus=placed\nticket=-1\n",
		"job=7\nstatus=placed\nticket=\n", "job=7\nstatus=placed\nmems_held=1x\n",
		NULL
	};
	struct lwk_casas_record a = arriving(7), b;
	char text[8192];

	a.dies = cpus_of("1,3");
	a.cpus = cpus_of("2-3,6-7");
	a.curve.n = 2;
	a.curve.ips[1] = 1e9;
	a.curve.ips[2] = 1.5e9;
	snprintf(a.why, sizeof(a.why), "line\nbreak");
	a.launchers[0] = (struct lwk_casas_launcher){ 123, 456, "step_batch" };
	a.launchers[1] = (struct lwk_casas_launcher){ 124, 457, "" };
	a.nlaunchers = 2;
	a.ticket = 12;
	a.mems_held = 1795000000ULL;
	lwk_casas_record_format(&a, text, sizeof(text));
	ck_assert_int_eq(lwk_casas_record_parse(text, &b, err, sizeof(err)), 0);
	ck_assert_uint_eq(b.job, 7);
	ck_assert_str_eq(b.status, "probing");
	ck_assert_str_eq(b.cgroup, a.cgroup);
	ck_assert_str_eq(cpus_text(&b.dies), "1,3");
	ck_assert_str_eq(cpus_text(&b.cpus), "2-3,6-7");
	ck_assert_uint_eq(b.curve.n, 2);
	ck_assert_str_eq(b.why, "line break"); /* one line in the file */
	ck_assert_str_eq(b.opts.event, "task-clock");
	ck_assert_uint_eq(b.nlaunchers, 2);
	ck_assert_uint_eq(b.launchers[0].pid, 123);
	ck_assert_uint_eq(b.launchers[0].start, 456);
	ck_assert_str_eq(b.launchers[0].step, "step_batch");
	ck_assert_str_eq(b.launchers[1].step, "");
	ck_assert_uint_eq(b.ticket, 12);
	ck_assert_uint_eq(b.mems_held, 1795000000ULL);
	/* A record of a plugin before the list: its one launcher, whole tree. */
	ck_assert_int_eq(lwk_casas_record_parse("job=7\nstatus=placed\nlauncher=99:5\n", &b, err,
						sizeof(err)),
			 0);
	ck_assert_uint_eq(b.nlaunchers, 1);
	ck_assert_uint_eq(b.launchers[0].pid, 99);
	ck_assert_str_eq(b.launchers[0].step, "");
	for (int i = 0; bad[i]; i++)
		ck_assert_msg(lwk_casas_record_parse(bad[i], &b, err, sizeof(err)) == -1 &&
				      !strncmp(err, "lwk: ", 5),
			      "accepted '%s'", bad[i]);
}
END_TEST

/* ---- two threads (the probe's and the step's main one) ------------------ */

struct racer {
	uint32_t job;
	const char *text;		/* parse this, or */
	const struct lwk_node_roots *roots; /* load job's record from here */
	struct lwk_cpuset want_dies;
	char want_cgroup[64];
	int bad;			/* results that were not this job's */
};

static void *race(void *arg)
{
	struct racer *r = arg;
	char e[256];

	for (int i = 0; i < 4000; i++) {
		struct lwk_casas_record got;
		int rc = r->text ? lwk_casas_record_parse(r->text, &got, e, sizeof(e))
				 : lwk_casas_load(r->roots, r->job, &got) == 1 ? 0 : -1;

		if (rc || got.job != r->job || strcmp(got.cgroup, r->want_cgroup) ||
		    !lwk_cpuset_equal(&got.dies, &r->want_dies))
			r->bad++;
	}
	return NULL;
}

/* Each job's own record, also while another thread reads another's: a
 * shared buffer once mixed them (job 41's memory nodes onto job 42). */
static void race_two(struct racer *a, struct racer *b)
{
	pthread_t ta, tb;

	ck_assert_int_eq(pthread_create(&ta, NULL, race, a), 0);
	ck_assert_int_eq(pthread_create(&tb, NULL, race, b), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	ck_assert_msg(!a->bad && !b->bad, "mixed records: %d of job %u's, %d of job %u's", a->bad,
		      a->job, b->bad, b->job);
}

static struct racer racer_of(uint32_t job, const char *dies)
{
	struct racer r;

	memset(&r, 0, sizeof(r));
	r.job = job;
	r.want_dies = cpus_of(dies);
	snprintf(r.want_cgroup, sizeof(r.want_cgroup), "/s.slice/n1.scope/job_%u", job);
	return r;
}

START_TEST(two_threads_parse_and_load_their_own_records)
{
	struct lwk_casas_record a = arriving(41), b = arriving(42);
	struct racer ra = racer_of(41, "0"), rb = racer_of(42, "1-3");
	char ta[8192], tb[8192];

	a.dies = ra.want_dies;
	b.dies = rb.want_dies;
	snprintf(a.split, sizeof(a.split), "%0500d", 1); /* long lines, long copies */
	snprintf(b.split, sizeof(b.split), "%0400d", 2);
	lwk_casas_record_format(&a, ta, sizeof(ta));
	lwk_casas_record_format(&b, tb, sizeof(tb));
	ra.text = ta;
	rb.text = tb;
	race_two(&ra, &rb);
	/* The same through the files. */
	tree_make("casasrace");
	tree_mkdir("state/n1/casas");
	tree_put("state/n1/casas/41", ta);
	tree_put("state/n1/casas/42", tb);
	snprintf(state, sizeof(state), "%s/state", tree_root);
	roots = (struct lwk_node_roots){ "/sys", "/proc", "/nonexistent", state, "n1", NULL, 0, 0, NULL, false };
	ra = racer_of(41, "0");
	rb = racer_of(42, "1-3");
	ra.roots = rb.roots = &roots;
	race_two(&ra, &rb);
	tree_remove();
}
END_TEST

Suite *casas_record_suite(void)
{
	Suite *s = suite_create("casas record");
	TCase *tc = tcase_create("record");

	tcase_add_test(tc, record_text_reads_back_and_bad_records_are_refused);
	tcase_add_test(tc, two_threads_parse_and_load_their_own_records);
	suite_add_tcase(s, tc);
	return s;
}
