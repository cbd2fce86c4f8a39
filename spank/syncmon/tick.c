/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "syncmon/tick.h"

#include <stdint.h>

/* Smallest k with offset + k * interval > now. */
static uint64_t tick_after(uint64_t interval, uint64_t offset, uint64_t now)
{
	if (now < offset)
		return 0;
	return (now - offset) / interval + 1;
}

void lwk_ticker_init(struct lwk_ticker *t, uint64_t interval_ns, uint64_t offset_ns,
		     uint64_t now_ns)
{
	t->interval = interval_ns ? interval_ns : 1;
	t->offset = offset_ns % t->interval;
	t->k = tick_after(t->interval, t->offset, now_ns);
	t->next = t->offset + t->k * t->interval;
	t->skipped = 0;
}

uint64_t lwk_ticker_fire(struct lwk_ticker *t, uint64_t now_ns, uint64_t *k)
{
	uint64_t late = now_ns > t->next ? now_ns - t->next : 0;
	uint64_t after;

	*k = t->k;
	after = tick_after(t->interval, t->offset, now_ns);
	if (after < t->k + 1)
		after = t->k + 1; /* woke early (clock stepped back): keep order */
	t->skipped += after - (t->k + 1);
	t->k = after;
	t->next = t->offset + t->k * t->interval;
	return late;
}

bool lwk_tick_is_flush(uint64_t k, uint64_t flush_every)
{
	return flush_every <= 1 || k % flush_every == 0;
}

void lwk_cpu_budget_init(struct lwk_cpu_budget *b, uint64_t share, uint64_t burst_ns,
			 uint64_t wall_ns, uint64_t cpu_ns)
{
	b->share = share ? share : 1;
	b->burst = burst_ns < INT64_MAX ? burst_ns : INT64_MAX;
	b->level = (int64_t)b->burst;
	b->wall = wall_ns;
	b->cpu = cpu_ns;
	b->limited = 0;
}

bool lwk_cpu_budget_allows(struct lwk_cpu_budget *b, uint64_t wall_ns, uint64_t cpu_ns)
{
	/* A clock that went back adds nothing; a long gap (days) is capped
	 * well before the product could overflow. */
	uint64_t dwall = wall_ns > b->wall ? wall_ns - b->wall : 0;
	uint64_t dcpu = cpu_ns > b->cpu ? cpu_ns - b->cpu : 0;
	uint64_t earned;

	if (dwall > 1000000000000ULL)
		dwall = 1000000000000ULL;
	if (dcpu > 1000000000000ULL)
		dcpu = 1000000000000ULL;
	earned = dwall * b->share / 10000;
	b->wall = wall_ns > b->wall ? wall_ns : b->wall;
	b->cpu = cpu_ns > b->cpu ? cpu_ns : b->cpu;
	b->level += (int64_t)earned - (int64_t)dcpu;
	if (b->level > (int64_t)b->burst)
		b->level = (int64_t)b->burst;
	if (b->level > 0)
		return true;
	b->limited++;
	return false;
}
