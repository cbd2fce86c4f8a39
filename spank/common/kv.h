/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Table-driven key=value parsing, shared by the job options
 * (--lwk=os=2,mem=4G) and the plugstack.conf arguments.  Each grammar
 * is a table of keys; every error names the key and what is allowed,
 * because these messages are what a user sees when sbatch refuses a job.
 */
#ifndef LWK_KV_H
#define LWK_KV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum lwk_kv_type {
	LWK_KV_UINT,	 /* whole number in [min, max]                   */
	LWK_KV_SIZE,	 /* bytes, suffix K M G T (powers of 1024)       */
	LWK_KV_DURATION, /* microseconds; units us ms s, bare = ms       */
	LWK_KV_PERCENT,	 /* hundredths of a percent: "12.5" or "12.5%"   */
	LWK_KV_ENUM,	 /* one of choices[], stored as its index (int)  */
	LWK_KV_LIST,	 /* "auto" or a cpulist below max, as a cpuset   */
	LWK_KV_PATH,	 /* printable, no ',' and no control characters  */
	LWK_KV_NAME,	 /* [A-Za-z0-9_.:+-] only, e.g. a PMU event     */
	LWK_KV_BOOL,	 /* yes/no/true/false/1/0                        */
};

struct lwk_kv_key {
	const char *name;
	enum lwk_kv_type type;
	size_t offset;	/* of the value in the target struct             */
	uint64_t min;	/* numbers: inclusive bounds in the stored unit  */
	uint64_t max;	/* LIST: members must be below max; PATH/NAME:   */
			/* the size of the char array (with its NUL)     */
	const char *const *choices; /* ENUM: NULL-terminated            */
	size_t set_offset; /* of a bool set true when the key was given */
};

#define LWK_KV_NOSET ((size_t)-1)

/*
 * Apply one key=value to dst.  what names the source in messages
 * ("--lwk", "plugstack.conf").  Returns 0, or -1 with a message in err.
 */
int lwk_kv_apply(const struct lwk_kv_key *keys, const char *what,
		 const char *key, const char *value, void *dst,
		 char *err, size_t errlen);

/*
 * Parse "k=v,k=v,...".  NULL, "" and "(null)" (how Slurm passes an
 * option given without a value) mean "all defaults".  A key given
 * twice is an error.  Returns 0 or -1 with a message in err.
 */
int lwk_kv_parse_list(const struct lwk_kv_key *keys, const char *what,
		      const char *arg, void *dst, char *err, size_t errlen);

/*
 * Print dst as "k=v,k=v" in key-table order, in the form the parser
 * reads back to the same values.  Returns the length needed.
 */
size_t lwk_kv_format(const struct lwk_kv_key *keys, const void *src,
		     char *buf, size_t len);

/* The units, exposed for the option checks and the tests. */
int lwk_parse_size(const char *s, uint64_t *bytes);
int lwk_parse_duration(const char *s, uint64_t *usec);
int lwk_parse_percent(const char *s, uint64_t *hundredths);
void lwk_format_size(uint64_t bytes, char *buf, size_t len);
void lwk_format_duration(uint64_t usec, char *buf, size_t len);

#define LWK_KV_MAX_ARG 4096

#endif
