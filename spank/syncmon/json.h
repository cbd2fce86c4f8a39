/* SPDX-License-Identifier: GPL-2.0-or-later */
/* JSON text for the sampler's output (doc/syncmon-format.md). */
#ifndef LWK_SYNCMON_JSON_H
#define LWK_SYNCMON_JSON_H

#include <stddef.h>

/* A string as JSON (quotes added; control characters escaped). */
size_t lwk_json_string(const char *s, char *buf, size_t len);

#endif
