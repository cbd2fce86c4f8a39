/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "common/kv.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/cpulist.h"

static void fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Digits only, no sign, no overflow; *end is set past the digits. */
static int parse_digits(const char *s, uint64_t *v, const char **end)
{
	uint64_t x = 0;

	if (!isdigit((unsigned char)*s))
		return -1;
	while (isdigit((unsigned char)*s)) {
		unsigned d = (unsigned)(*s - '0');

		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
		s++;
	}
	*v = x;
	*end = s;
	return 0;
}

static int mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
	if (b && a > UINT64_MAX / b)
		return -1;
	*out = a * b;
	return 0;
}

int lwk_parse_size(const char *s, uint64_t *bytes)
{
	const char *end;
	uint64_t v, mult = 1;

	if (parse_digits(s, &v, &end))
		return -1;
	switch (toupper((unsigned char)*end)) {
	case '\0':
		break;
	case 'K': mult = UINT64_C(1) << 10; end++; break;
	case 'M': mult = UINT64_C(1) << 20; end++; break;
	case 'G': mult = UINT64_C(1) << 30; end++; break;
	case 'T': mult = UINT64_C(1) << 40; end++; break;
	default:
		return -1;
	}
	/* Accept the spellings people type: 4G, 4GB, 4GiB. */
	if (mult > 1) {
		if (end[0] == 'i' && (end[1] == 'B' || end[1] == 'b'))
			end += 2;
		else if (*end == 'B' || *end == 'b')
			end++;
	}
	if (*end)
		return -1;
	return mul_ok(v, mult, bytes);
}

int lwk_parse_duration(const char *s, uint64_t *usec)
{
	const char *end;
	uint64_t v, mult;

	if (parse_digits(s, &v, &end))
		return -1;
	if (!strcmp(end, "us"))
		mult = 1;
	else if (!strcmp(end, "ms") || !*end)
		mult = 1000;
	else if (!strcmp(end, "s"))
		mult = 1000000;
	else
		return -1;
	return mul_ok(v, mult, usec);
}

int lwk_parse_percent(const char *s, uint64_t *hundredths)
{
	const char *end;
	uint64_t whole, frac = 0;

	if (parse_digits(s, &whole, &end))
		return -1;
	if (*end == '.') {
		const char *f = end + 1;
		int n = 0;

		if (!isdigit((unsigned char)*f))
			return -1;
		while (isdigit((unsigned char)*f)) {
			if (++n > 2)
				return -1; /* finer than 0.01% means nothing here */
			frac = frac * 10 + (uint64_t)(*f - '0');
			f++;
		}
		if (n == 1)
			frac *= 10;
		end = f;
	}
	if (*end == '%')
		end++;
	if (*end)
		return -1;
	if (mul_ok(whole, 100, &whole) || whole > UINT64_MAX - frac)
		return -1;
	*hundredths = whole + frac;
	return 0;
}

void lwk_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (u < 3 && bytes && bytes % 1024 == 0) {
		bytes /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%llu", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)bytes, units[u]);
}

void lwk_format_duration(uint64_t usec, char *buf, size_t len)
{
	if (usec && usec % 1000000 == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(usec / 1000000));
	else if (usec % 1000 == 0)
		snprintf(buf, len, "%llums", (unsigned long long)(usec / 1000));
	else
		snprintf(buf, len, "%lluus", (unsigned long long)usec);
}

static void format_percent(uint64_t h, char *buf, size_t len)
{
	if (h % 100 == 0)
		snprintf(buf, len, "%llu%%", (unsigned long long)(h / 100));
	else
		snprintf(buf, len, "%llu.%02llu%%", (unsigned long long)(h / 100),
			 (unsigned long long)(h % 100));
}

/* "what is allowed" for one key, in the words of the man page. */
static void describe(const struct lwk_kv_key *k, char *buf, size_t len)
{
	char a[32], b[32];
	size_t off = 0;

	switch (k->type) {
	case LWK_KV_UINT:
		snprintf(buf, len, "a whole number from %llu to %llu",
			 (unsigned long long)k->min, (unsigned long long)k->max);
		break;
	case LWK_KV_SIZE:
		lwk_format_size(k->min, a, sizeof(a));
		lwk_format_size(k->max, b, sizeof(b));
		snprintf(buf, len, "a size from %s to %s (suffix K, M, G or T)", a, b);
		break;
	case LWK_KV_DURATION:
		lwk_format_duration(k->min, a, sizeof(a));
		lwk_format_duration(k->max, b, sizeof(b));
		snprintf(buf, len, "a duration from %s to %s (unit us, ms or s)", a, b);
		break;
	case LWK_KV_PERCENT:
		format_percent(k->min, a, sizeof(a));
		format_percent(k->max, b, sizeof(b));
		snprintf(buf, len, "a percentage from %s to %s", a, b);
		break;
	case LWK_KV_ENUM:
		off = (size_t)snprintf(buf, len, "one of ");
		for (const char *const *c = k->choices; *c && off < len; c++)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", *c,
						c[1] ? "|" : "");
		break;
	case LWK_KV_LIST:
		snprintf(buf, len, "auto, or a list such as 0:2-3 of numbers below %llu",
			 (unsigned long long)k->max);
		break;
	case LWK_KV_PATH:
		snprintf(buf, len, "a path of at most %llu characters, without ',' or control characters",
			 (unsigned long long)(k->max - 1));
		break;
	case LWK_KV_NAME:
		snprintf(buf, len, "a name of at most %llu characters from A-Z a-z 0-9 _ . : + -",
			 (unsigned long long)(k->max - 1));
		break;
	case LWK_KV_BOOL:
		snprintf(buf, len, "yes or no");
		break;
	}
}

static void key_names(const struct lwk_kv_key *keys, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (const struct lwk_kv_key *k = keys; k->name && off < len; k++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s",
					k == keys ? "" : ", ", k->name);
}

/* Show a user's value safely: printable, bounded. */
static void quote(const char *v, char *buf, size_t len)
{
	size_t o = 0;

	for (; *v && o + 5 < len; v++) {
		unsigned char c = (unsigned char)*v;

		if (isprint(c))
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
	}
	if (*v && o + 4 <= len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
}

static bool name_char(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '.' || c == ':' || c == '+' || c == '-';
}

/* A number (UINT, SIZE, DURATION, PERCENT): parsed, within [min, max],
 * stored as a uint64_t. */
static int apply_number(const struct lwk_kv_key *k, const char *value, char *field)
{
	uint64_t v = 0;
	int ok = -1;

	switch (k->type) {
	case LWK_KV_UINT: {
		const char *end;

		ok = parse_digits(value, &v, &end) == 0 && !*end ? 0 : -1;
		break;
	}
	case LWK_KV_SIZE:
		ok = lwk_parse_size(value, &v);
		break;
	case LWK_KV_DURATION:
		ok = lwk_parse_duration(value, &v);
		break;
	case LWK_KV_PERCENT:
		ok = lwk_parse_percent(value, &v);
		break;
	default:
		break;
	}
	if (ok == 0) {
		if (v < k->min || v > k->max)
			ok = -1;
		else
			*(uint64_t *)field = v;
	}
	return ok;
}

/* One of k->choices, stored as its index. */
static int apply_enum(const struct lwk_kv_key *k, const char *value, char *field)
{
	for (int i = 0; k->choices[i]; i++)
		if (!strcmp(k->choices[i], value)) {
			*(int *)field = i;
			return 0;
		}
	return -1;
}

/* "auto" (an empty set) or a list of numbers below k->max. */
static int apply_list(const struct lwk_kv_key *k, const char *value, char *field)
{
	struct lwk_cpuset s;
	char list[LWK_KV_MAX_ARG];

	/* Inside a comma-separated option, list members are
	 * separated by ':' ("numa=0:2-3"). */
	snprintf(list, sizeof(list), "%s", value);
	for (char *p = list; *p; p++) {
		if (*p == ',')
			*p = ' '; /* never valid: keeps "0,1" out */
		else if (*p == ':')
			*p = ',';
	}
	if (!strcmp(value, "auto")) {
		lwk_cpuset_zero((struct lwk_cpuset *)field);
		return 0;
	}
	if (*value && lwk_cpulist_parse(list, (unsigned)k->max, &s) == 0 &&
	    lwk_cpuset_count(&s) > 0) {
		*(struct lwk_cpuset *)field = s;
		return 0;
	}
	return -1;
}

/* A PATH or a NAME, shorter than k->max, copied with its NUL. */
static int apply_text(const struct lwk_kv_key *k, const char *value, char *field)
{
	size_t n = strlen(value);

	if (n == 0 || n >= k->max)
		return -1;
	for (const char *p = value; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (k->type == LWK_KV_NAME ? !name_char(c)
					   : (c < 0x20 || c == 0x7f || c == ','))
			return -1;
	}
	memset(field, 0, k->max);
	memcpy(field, value, n + 1);
	return 0;
}

static int apply_bool(const char *value, char *field)
{
	if (!strcmp(value, "yes") || !strcmp(value, "true") || !strcmp(value, "1")) {
		*(bool *)field = true;
		return 0;
	}
	if (!strcmp(value, "no") || !strcmp(value, "false") || !strcmp(value, "0")) {
		*(bool *)field = false;
		return 0;
	}
	return -1;
}

int lwk_kv_apply(const struct lwk_kv_key *keys, const char *what,
		 const char *key, const char *value, void *dst,
		 char *err, size_t errlen)
{
	const struct lwk_kv_key *k;
	char *field;
	char allowed[256], shown[80];
	int ok = -1;

	for (k = keys; k->name; k++)
		if (!strcmp(k->name, key))
			break;
	if (!k->name) {
		char names[256];

		quote(key, shown, sizeof(shown));
		key_names(keys, names, sizeof(names));
		fail(err, errlen, "lwk: %s: unknown key '%s'; allowed keys: %s",
		     what, shown, names);
		return -1;
	}
	field = (char *)dst + k->offset;
	switch (k->type) {
	case LWK_KV_UINT:
	case LWK_KV_SIZE:
	case LWK_KV_DURATION:
	case LWK_KV_PERCENT:
		ok = apply_number(k, value, field);
		break;
	case LWK_KV_ENUM:
		ok = apply_enum(k, value, field);
		break;
	case LWK_KV_LIST:
		ok = apply_list(k, value, field);
		break;
	case LWK_KV_PATH:
	case LWK_KV_NAME:
		ok = apply_text(k, value, field);
		break;
	case LWK_KV_BOOL:
		ok = apply_bool(value, field);
		break;
	}
	if (ok) {
		quote(value, shown, sizeof(shown));
		describe(k, allowed, sizeof(allowed));
		fail(err, errlen, "lwk: %s: %s='%s' is not valid; %s must be %s",
		     what, k->name, shown, k->name, allowed);
		return -1;
	}
	if (k->set_offset != LWK_KV_NOSET)
		*(bool *)((char *)dst + k->set_offset) = true;
	return 0;
}

int lwk_kv_parse_list(const struct lwk_kv_key *keys, const char *what,
		      const char *arg, void *dst, char *err, size_t errlen)
{
	char buf[LWK_KV_MAX_ARG];
	bool seen[64] = { false };
	char *save = NULL, *item;

	if (!arg || !*arg || !strcmp(arg, "(null)"))
		return 0;
	if (strlen(arg) >= sizeof(buf)) {
		fail(err, errlen, "lwk: %s: the value is longer than %d characters",
		     what, LWK_KV_MAX_ARG - 1);
		return -1;
	}
	strcpy(buf, arg);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		char shown[80], names[256];
		int idx = 0;

		if (!eq) {
			quote(item, shown, sizeof(shown));
			key_names(keys, names, sizeof(names));
			fail(err, errlen, "lwk: %s: '%s' is not key=value; allowed keys: %s",
			     what, shown, names);
			return -1;
		}
		*eq = '\0';
		if (lwk_kv_apply(keys, what, item, eq + 1, dst, err, errlen))
			return -1;
		while (strcmp(keys[idx].name, item))
			idx++;
		if (idx < 64 && seen[idx]) {
			fail(err, errlen, "lwk: %s: key '%s' is given twice", what, item);
			return -1;
		}
		if (idx < 64)
			seen[idx] = true;
	}
	/* strtok_r folds ",,": reject empty items so typos do not pass. */
	if (arg[0] == ',' || strstr(arg, ",,") || arg[strlen(arg) - 1] == ',') {
		fail(err, errlen, "lwk: %s: empty item in '%s'", what, arg);
		return -1;
	}
	return 0;
}

size_t lwk_kv_format(const struct lwk_kv_key *keys, const void *src,
		     char *buf, size_t len)
{
	size_t need = 0;

	if (len)
		buf[0] = '\0';
	for (const struct lwk_kv_key *k = keys; k->name; k++) {
		const char *field = (const char *)src + k->offset;
		char val[8192]; /* a LIST of 1024 members in the sparsest form */
		uint64_t v = 0;
		int n;

		if (k->type == LWK_KV_UINT || k->type == LWK_KV_SIZE ||
		    k->type == LWK_KV_DURATION || k->type == LWK_KV_PERCENT)
			v = *(const uint64_t *)(const void *)field;

		switch (k->type) {
		case LWK_KV_UINT:
			snprintf(val, sizeof(val), "%llu", (unsigned long long)v);
			break;
		case LWK_KV_SIZE:
			lwk_format_size(v, val, sizeof(val));
			break;
		case LWK_KV_DURATION:
			lwk_format_duration(v, val, sizeof(val));
			break;
		case LWK_KV_PERCENT:
			format_percent(v, val, sizeof(val));
			break;
		case LWK_KV_ENUM:
			snprintf(val, sizeof(val), "%s", k->choices[*(const int *)(const void *)field]);
			break;
		case LWK_KV_LIST: {
			const struct lwk_cpuset *s = (const void *)field;

			if (lwk_cpuset_count(s) == 0)
				snprintf(val, sizeof(val), "auto");
			else
				lwk_cpulist_format(s, val, sizeof(val));
			for (char *p = val; *p; p++)
				if (*p == ',')
					*p = ':';
			break;
		}
		case LWK_KV_PATH:
		case LWK_KV_NAME:
			snprintf(val, sizeof(val), "%s", field);
			break;
		case LWK_KV_BOOL:
			snprintf(val, sizeof(val), "%s", *(const bool *)(const void *)field ? "yes" : "no");
			break;
		}
		/* An unset path has no value to print; leave it out. */
		if (!val[0])
			continue;
		n = snprintf(need < len ? buf + need : NULL, need < len ? len - need : 0,
			     "%s%s=%s", need ? "," : "", k->name, val);
		need += (size_t)n;
	}
	if (len && need >= len)
		buf[len - 1] = '\0';
	return need;
}
