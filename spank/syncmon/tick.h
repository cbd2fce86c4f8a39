/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Aligned sampling ticks (seed 000, 3.2): t_k = offset + k * interval on
 * the wall clock (CLOCK_REALTIME, ns since the epoch), as LDMS does.  k
 * is a global tick number, so two nodes whose clocks agree sample at the
 * same instants and agree on which ticks flush (k % flush == 0), without
 * talking to each other.  Pure: the caller reads the clock and sleeps
 * (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, ...)).
 */
#ifndef LWK_TICK_H
#define LWK_TICK_H

#include <stdbool.h>
#include <stdint.h>

struct lwk_ticker {
	uint64_t interval;	/* ns */
	uint64_t offset;	/* ns, below interval */
	uint64_t k;		/* number of the next tick */
	uint64_t next;		/* its time, ns since the epoch */
	uint64_t skipped;	/* ticks passed over (stalls, clock jumps) */
};

/* The first tick strictly after now. */
void lwk_ticker_init(struct lwk_ticker *t, uint64_t interval_ns, uint64_t offset_ns,
		     uint64_t now_ns);

/*
 * Called on waking for tick t->k at wall time now.  Returns the tick's
 * lateness in ns (now - t->next, 0 when early) and stores the tick
 * number in *k.  Then moves on to the next tick after now: ticks that
 * are already past (the clock jumped forward, or the sampler stalled)
 * are skipped and counted, never sampled late in a burst.  If the clock
 * jumped backward, the caller woke early; *k is that tick all the same
 * (its lateness is 0) and the schedule stays on the global grid.
 */
uint64_t lwk_ticker_fire(struct lwk_ticker *t, uint64_t now_ns, uint64_t *k);

/* Is tick k a flush tick?  The same answer on every node. */
bool lwk_tick_is_flush(uint64_t k, uint64_t flush_every);

/*
 * The site's bound on the sampler's CPU (plugstack syncmon_cpu=): a
 * bucket that fills at `share` (hundredths of a percent of one CPU) of
 * the wall time that passes, holds at most `burst` ns of CPU, and pays
 * for what the sampler used.  A tick is sampled only while the bucket
 * is not empty, so over any stretch the sampler's CPU is at most share
 * of it plus one burst and one tick.  Pure: the caller reads the
 * clocks (CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID).
 */
struct lwk_cpu_budget {
	uint64_t share;		/* hundredths of a percent of one CPU, 1..10000 */
	uint64_t burst;		/* ns of CPU the bucket holds */
	int64_t level;		/* ns of CPU it holds now (below 0: in debt) */
	uint64_t wall, cpu;	/* the clocks at the last look */
	uint64_t limited;	/* ticks not sampled for it */
};

void lwk_cpu_budget_init(struct lwk_cpu_budget *b, uint64_t share, uint64_t burst_ns,
			 uint64_t wall_ns, uint64_t cpu_ns);

/* Settle what passed since the last look; true when this tick may be
 * sampled, else false and counted in b->limited. */
bool lwk_cpu_budget_allows(struct lwk_cpu_budget *b, uint64_t wall_ns, uint64_t cpu_ns);

#endif
