/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "syncmon/sampbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int lwk_sampbuf_init(struct lwk_sampbuf *b, size_t cap,
		     ssize_t (*write)(void *ctx, const void *buf, size_t len), void *ctx)
{
	memset(b, 0, sizeof(*b));
	if (cap == 0) {
		errno = EINVAL;
		return -1;
	}
	b->data = malloc(cap);
	if (!b->data)
		return -1;
	b->cap = cap;
	b->write = write;
	b->ctx = ctx;
	return 0;
}

void lwk_sampbuf_free(struct lwk_sampbuf *b)
{
	free(b->data);
	b->data = NULL;
	b->cap = b->len = 0;
}

static int write_all(struct lwk_sampbuf *b, const char *p, size_t n)
{
	while (n) {
		ssize_t w = b->write(b->ctx, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
		b->bytes_written += (uint64_t)w;
	}
	return 0;
}

int lwk_sampbuf_flush(struct lwk_sampbuf *b)
{
	if (b->len == 0)
		return 0;
	if (write_all(b, b->data, b->len))
		return -1;
	b->len = 0;
	return 0;
}

int lwk_sampbuf_add(struct lwk_sampbuf *b, const void *rec, size_t n, bool flush_tick)
{
	int rc = 0;

	if (n > b->cap - b->len) {
		if (b->len) {
			b->early_flushes++;
			if (lwk_sampbuf_flush(b)) {
				b->dropped++; /* no room and no way out */
				return -1;
			}
		}
		if (n > b->cap) {
			b->oversize++;
			if (write_all(b, rec, n)) {
				b->dropped++;
				return -1;
			}
			return 0;
		}
	}
	memcpy(b->data + b->len, rec, n);
	b->len += n;
	if (flush_tick) {
		b->flushes++;
		rc = lwk_sampbuf_flush(b);
	}
	return rc;
}
