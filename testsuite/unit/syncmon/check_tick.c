/* SPDX-License-Identifier: GPL-2.0-or-later */
/* syncmon/tick.c: aligned sampling ticks. */
#include "check_lwk.h"
#include "syncmon/tick.h"

#define MS 1000000ULL
#define S 1000000000ULL

/* Two nodes that start at different moments tick at the same instants
 * and agree on the tick numbers and on which ticks flush. */
START_TEST(ticks_align_across_nodes)
{
	struct lwk_ticker a, b;
	uint64_t base = 1790000000ULL * S, ka, kb;

	lwk_ticker_init(&a, 500 * MS, 0, base + 123 * MS);
	lwk_ticker_init(&b, 500 * MS, 0, base + 377 * MS + 1);
	ck_assert_uint_eq(a.next, b.next);
	ck_assert_uint_eq(a.k, b.k);
	ck_assert_uint_eq(a.next % (500 * MS), 0);
	for (int i = 0; i < 10; i++) {
		lwk_ticker_fire(&a, a.next + 2 * MS, &ka);
		lwk_ticker_fire(&b, b.next + 7 * MS, &kb);
		ck_assert_uint_eq(ka, kb);
		ck_assert_uint_eq(a.next, b.next);
		ck_assert_int_eq(lwk_tick_is_flush(ka, 4), lwk_tick_is_flush(kb, 4));
	}
}
END_TEST

START_TEST(ticks_honour_offset_and_report_lateness)
{
	struct lwk_ticker t;
	uint64_t k, late;

	lwk_ticker_init(&t, 100 * MS, 30 * MS, 10 * S + 31 * MS);
	ck_assert_uint_eq(t.next, 10 * S + 130 * MS);
	late = lwk_ticker_fire(&t, 10 * S + 130 * MS + 250000, &k);
	ck_assert_uint_eq(late, 250000);
	ck_assert_uint_eq(t.next, 10 * S + 230 * MS);
	/* An exact multiple is not "after now": the next one is. */
	lwk_ticker_init(&t, 100 * MS, 0, 10 * S);
	ck_assert_uint_eq(t.next, 10 * S + 100 * MS);
	/* An offset of a whole interval or more folds back into it. */
	lwk_ticker_init(&t, 100 * MS, 250 * MS, 0);
	ck_assert_uint_eq(t.offset, 50 * MS);
}
END_TEST

START_TEST(ticks_skip_after_a_stall_or_forward_jump)
{
	struct lwk_ticker t;
	uint64_t k, k2;

	lwk_ticker_init(&t, 100 * MS, 0, 0);
	/* Woke 350 ms after tick 1: ticks 2, 3, 4 are past and skipped. */
	lwk_ticker_fire(&t, 100 * MS + 350 * MS, &k);
	ck_assert_uint_eq(k, 1);
	ck_assert_uint_eq(t.skipped, 3);
	ck_assert_uint_eq(t.k, 5);
	/* The clock stepped back: the tick is taken (lateness 0), the
	 * schedule moves on one tick and stays on the grid. */
	ck_assert_uint_eq(lwk_ticker_fire(&t, 1 * MS, &k2), 0);
	ck_assert_uint_eq(k2, 5);
	ck_assert_uint_eq(t.k, 6);
	ck_assert_uint_eq(t.next % (100 * MS), 0);
	ck_assert_uint_eq(t.skipped, 3);
}
END_TEST

/* The CPU bound: a sampler within its share samples every tick; one
 * over it passes ticks over until it has earned its share back, and
 * over a long run it gets no more than its share plus one burst. */
START_TEST(cpu_budget_holds_the_share)
{
	struct lwk_cpu_budget b;
	uint64_t wall = 100 * S, cpu = 7 * S, used = 0, sampled = 0;

	/* 10% of a CPU, a burst of 1 s. */
	lwk_cpu_budget_init(&b, 1000, 1 * S, wall, cpu);
	/* 5 ms of CPU every 100 ms: 5%, always allowed. */
	for (int i = 0; i < 1000; i++) {
		wall += 100 * MS;
		ck_assert(lwk_cpu_budget_allows(&b, wall, cpu));
		cpu += 5 * MS;
	}
	ck_assert_uint_eq(b.limited, 0);
	/* 50 ms every 100 ms when sampled: half a CPU wanted. */
	for (int i = 0; i < 10000; i++) {
		wall += 100 * MS;
		if (lwk_cpu_budget_allows(&b, wall, cpu)) {
			cpu += 50 * MS;
			used += 50 * MS;
			sampled++;
		}
	}
	ck_assert_uint_gt(b.limited, 0);
	ck_assert_uint_eq(b.limited + sampled, 10000);
	/* 1000 s of wall time at 10%: 100 s, plus the burst and a tick. */
	ck_assert_uint_le(used, 100 * S + 1 * S + 50 * MS);
	ck_assert_uint_ge(used, 100 * S - 50 * MS);
}
END_TEST

/* A clock that goes back earns nothing, and one huge tick is paid for
 * by passing over ticks until its cost is earned back, not forgotten. */
START_TEST(cpu_budget_debt_and_clocks)
{
	struct lwk_cpu_budget b;
	uint64_t wall = 50 * S, cpu = 0;
	int passed = 0;

	lwk_cpu_budget_init(&b, 1000, 1 * S, wall, cpu);
	ck_assert(lwk_cpu_budget_allows(&b, wall - 10 * S, cpu));
	ck_assert_uint_eq(b.wall, wall);
	cpu += 3 * S; /* one tick of 3 s: 2 s of debt past the burst */
	wall += 100 * MS;
	while (!lwk_cpu_budget_allows(&b, wall, cpu)) {
		wall += 100 * MS;
		passed++;
	}
	/* 2 s of debt at 10% of a CPU: about 20 s of wall time. */
	ck_assert_int_ge(passed, 195);
	ck_assert_int_le(passed, 205);
}
END_TEST

Suite *tick_suite(void)
{
	Suite *s = suite_create("tick");
	TCase *tc = tcase_create("tick");

	tcase_add_test(tc, ticks_align_across_nodes);
	tcase_add_test(tc, ticks_honour_offset_and_report_lateness);
	tcase_add_test(tc, ticks_skip_after_a_stall_or_forward_jump);
	tcase_add_test(tc, cpu_budget_holds_the_share);
	tcase_add_test(tc, cpu_budget_debt_and_clocks);
	suite_add_tcase(s, tc);
	return s;
}
