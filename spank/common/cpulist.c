/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "common/cpulist.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

void lwk_cpuset_zero(struct lwk_cpuset *s)
{
	memset(s, 0, sizeof(*s));
}

void lwk_cpuset_set(struct lwk_cpuset *s, unsigned int cpu)
{
	if (cpu < LWK_MAX_CPUS)
		s->bits[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}

bool lwk_cpuset_isset(const struct lwk_cpuset *s, unsigned int cpu)
{
	if (cpu >= LWK_MAX_CPUS)
		return false;
	return (s->bits[cpu / 64] >> (cpu % 64)) & 1;
}

unsigned int lwk_cpuset_count(const struct lwk_cpuset *s)
{
	unsigned int n = 0;

	for (size_t i = 0; i < LWK_MAX_CPUS / 64; i++)
		n += (unsigned int)__builtin_popcountll(s->bits[i]);
	return n;
}

int lwk_cpuset_next(const struct lwk_cpuset *s, int cpu)
{
	unsigned int c = (unsigned int)(cpu + 1);

	while (c < LWK_MAX_CPUS) {
		uint64_t w = s->bits[c / 64] >> (c % 64);

		if (w)
			return (int)(c + (unsigned int)__builtin_ctzll(w));
		c = (c / 64 + 1) * 64;
	}
	return -1;
}

int lwk_cpuset_first(const struct lwk_cpuset *s)
{
	return lwk_cpuset_next(s, -1);
}

bool lwk_cpuset_equal(const struct lwk_cpuset *a, const struct lwk_cpuset *b)
{
	return memcmp(a->bits, b->bits, sizeof(a->bits)) == 0;
}

void lwk_cpuset_or(struct lwk_cpuset *dst, const struct lwk_cpuset *src)
{
	for (size_t i = 0; i < LWK_MAX_CPUS / 64; i++)
		dst->bits[i] |= src->bits[i];
}

void lwk_cpuset_and(struct lwk_cpuset *dst, const struct lwk_cpuset *src)
{
	for (size_t i = 0; i < LWK_MAX_CPUS / 64; i++)
		dst->bits[i] &= src->bits[i];
}

/* Decimal without sign or leading '+'; stops at the first non-digit. */
static int parse_uint(const char **p, unsigned int max, unsigned int *out)
{
	const char *s = *p;
	unsigned long v = 0;

	if (!isdigit((unsigned char)*s))
		return -1;
	while (isdigit((unsigned char)*s)) {
		v = v * 10 + (unsigned long)(*s - '0');
		if (v >= max)
			return -2;
		s++;
	}
	*p = s;
	*out = (unsigned int)v;
	return 0;
}

int lwk_cpulist_parse(const char *str, unsigned int max, struct lwk_cpuset *out)
{
	const char *p = str;
	int rc;

	lwk_cpuset_zero(out);
	if (max > LWK_MAX_CPUS)
		max = LWK_MAX_CPUS;
	if (!str)
		goto einval;
	if (*p == '\0' || (*p == '\n' && p[1] == '\0'))
		return 0;
	for (;;) {
		unsigned int lo, hi, stride = 1;

		if ((rc = parse_uint(&p, max, &lo)))
			goto bad;
		hi = lo;
		if (*p == '-') {
			p++;
			if ((rc = parse_uint(&p, max, &hi)))
				goto bad;
			if (hi < lo)
				goto einval;
			if (*p == ':') {
				p++;
				if ((rc = parse_uint(&p, max, &stride)))
					goto bad;
				if (stride == 0)
					goto einval;
			}
		}
		for (unsigned int c = lo; c <= hi; c += stride)
			lwk_cpuset_set(out, c);
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p == '\n')
			p++;
		if (*p == '\0')
			return 0;
		goto einval;
	}
bad:
	if (rc == -2) {
		lwk_cpuset_zero(out);
		errno = ERANGE;
		return -1;
	}
einval:
	lwk_cpuset_zero(out);
	errno = EINVAL;
	return -1;
}

size_t lwk_cpulist_format(const struct lwk_cpuset *s, char *buf, size_t len)
{
	size_t need = 0;
	int c = lwk_cpuset_first(s);

	if (len)
		buf[0] = '\0';
	while (c >= 0) {
		int end = c, n;
		char piece[32];

		while (lwk_cpuset_isset(s, (unsigned int)end + 1))
			end++;
		if (end == c)
			n = snprintf(piece, sizeof(piece), "%s%d", need ? "," : "", c);
		else
			n = snprintf(piece, sizeof(piece), "%s%d-%d", need ? "," : "", c, end);
		if (need + (size_t)n < len)
			memcpy(buf + need, piece, (size_t)n + 1);
		else if (len)
			buf[need < len ? need : len - 1] = '\0';
		need += (size_t)n;
		c = lwk_cpuset_next(s, end);
	}
	return need;
}
