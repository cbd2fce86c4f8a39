/* SPDX-License-Identifier: GPL-2.0-or-later */
/* syncmon/sampbuf.c: the bounded sample buffer. */
#include <errno.h>
#include <string.h>
#include <sys/types.h>

#include "check_lwk.h"
#include "syncmon/sampbuf.h"

struct sink {
	char data[4096];
	size_t len;
	int writes;
	int fail;
};

static ssize_t sink_write(void *ctx, const void *buf, size_t len)
{
	struct sink *s = ctx;

	if (s->fail) {
		errno = ENOSPC;
		return -1;
	}
	if (len > 7) /* short writes happen: the buffer must loop */
		len = 7;
	memcpy(s->data + s->len, buf, len);
	s->len += len;
	s->writes++;
	return (ssize_t)len;
}

START_TEST(buffer_flushes_only_at_flush_ticks)
{
	struct lwk_sampbuf b;
	struct sink s = { .len = 0 };

	ck_assert_int_eq(lwk_sampbuf_init(&b, 64, sink_write, &s), 0);
	ck_assert_int_eq(lwk_sampbuf_add(&b, "one\n", 4, false), 0);
	ck_assert_int_eq(lwk_sampbuf_add(&b, "two\n", 4, false), 0);
	ck_assert_uint_eq(s.len, 0);
	ck_assert_int_eq(lwk_sampbuf_add(&b, "three\n", 6, true), 0);
	ck_assert_uint_eq(s.len, 14);
	ck_assert_int_eq(memcmp(s.data, "one\ntwo\nthree\n", 14), 0);
	ck_assert_uint_eq(b.flushes, 1);
	ck_assert_uint_eq(b.early_flushes, 0);
	ck_assert_uint_eq(b.len, 0);
	lwk_sampbuf_free(&b);
}
END_TEST

START_TEST(buffer_never_grows_and_loses_nothing)
{
	struct lwk_sampbuf b;
	struct sink s = { .len = 0 };
	char rec[40], big[100];

	memset(rec, 'a', sizeof(rec));
	memset(big, 'b', sizeof(big));
	ck_assert_int_eq(lwk_sampbuf_init(&b, 64, sink_write, &s), 0);
	ck_assert_int_eq(lwk_sampbuf_add(&b, rec, 40, false), 0);
	/* 40 + 40 > 64: the first is flushed early, and counted. */
	ck_assert_int_eq(lwk_sampbuf_add(&b, rec, 40, false), 0);
	ck_assert_uint_eq(b.early_flushes, 1);
	ck_assert_uint_eq(s.len, 40);
	ck_assert_uint_eq(b.len, 40);
	/* Larger than the whole buffer: written through, counted. */
	ck_assert_int_eq(lwk_sampbuf_add(&b, big, 100, false), 0);
	ck_assert_uint_eq(b.oversize, 1);
	ck_assert_uint_eq(s.len, 180);
	ck_assert_uint_eq(b.cap, 64);
	ck_assert_int_eq(lwk_sampbuf_flush(&b), 0);
	ck_assert_uint_eq(b.bytes_written, 180);
	/* A failing disk: what could not be kept is counted, not hidden. */
	s.fail = 1;
	ck_assert_int_eq(lwk_sampbuf_add(&b, rec, 40, false), 0);
	ck_assert_int_eq(lwk_sampbuf_add(&b, rec, 40, false), -1);
	ck_assert_uint_eq(b.dropped, 1);
	ck_assert_int_eq(lwk_sampbuf_flush(&b), -1);
	ck_assert_uint_eq(b.len, 40); /* kept for the next try */
	s.fail = 0;
	ck_assert_int_eq(lwk_sampbuf_flush(&b), 0);
	lwk_sampbuf_free(&b);
}
END_TEST

Suite *sampbuf_suite(void)
{
	Suite *s = suite_create("sampbuf");
	TCase *tc = tcase_create("sampbuf");

	tcase_add_test(tc, buffer_flushes_only_at_flush_ticks);
	tcase_add_test(tc, buffer_never_grows_and_loses_nothing);
	suite_add_tcase(s, tc);
	return s;
}
