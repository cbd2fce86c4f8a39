/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The sampler's bounded memory (seed 002): one buffer allocated at
 * start, never grown.  Samples are appended; the buffer is written out
 * only at flush ticks, which are the same ticks on every node, so flush
 * noise lands at the same instant everywhere.  Nothing is lost: a
 * sample that does not fit forces an early flush, which is counted and
 * reported in the output, and a sample larger than the whole buffer is
 * written through (counted too).
 */
#ifndef LWK_SAMPBUF_H
#define LWK_SAMPBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct lwk_sampbuf {
	char *data;
	size_t cap, len;
	uint64_t flushes;	 /* at flush ticks                 */
	uint64_t early_flushes;	 /* forced because a sample did not fit */
	uint64_t oversize;	 /* samples larger than the buffer */
	uint64_t bytes_written;
	uint64_t dropped;	 /* samples lost because a write failed */
	/* Where flushes go: returns bytes written or -1.  A file in tests,
	 * the node's output file in the sampler. */
	ssize_t (*write)(void *ctx, const void *buf, size_t len);
	void *ctx;
};

int lwk_sampbuf_init(struct lwk_sampbuf *b, size_t cap,
		     ssize_t (*write)(void *ctx, const void *buf, size_t len), void *ctx);
void lwk_sampbuf_free(struct lwk_sampbuf *b);

/*
 * Add one sample taken at a tick; flush_tick says whether that tick is
 * a flush tick.  Returns 0, or -1 when a write failed (the data stays
 * buffered and the next flush retries it).
 */
int lwk_sampbuf_add(struct lwk_sampbuf *b, const void *rec, size_t n, bool flush_tick);

/* Write out what is buffered (at exit). */
int lwk_sampbuf_flush(struct lwk_sampbuf *b);

#endif
