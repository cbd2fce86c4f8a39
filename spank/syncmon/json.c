/* SPDX-License-Identifier: GPL-2.0-or-later */
/* JSON text for the sampler's output: see json.h. */
#include "syncmon/json.h"

#include <stdio.h>
#include <string.h>

size_t lwk_json_string(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	/* A string that does not fit is cut between characters, never in an
	 * escape, and still closed: the line stays valid JSON. */
	if (len < 3) {
		if (len)
			buf[0] = '\0';
		return 2;
	}
	buf[o++] = '"';
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];
		size_t n;

		if (c == '"' || c == '\\')
			n = (size_t)snprintf(esc, sizeof(esc), "\\%c", c);
		else if (c < 0x20 || c >= 0x7f) /* bytes above ASCII as Latin-1 */
			n = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", c);
		else
			n = (size_t)snprintf(esc, sizeof(esc), "%c", c);
		if (o + n + 2 > len)
			break;
		memcpy(buf + o, esc, n);
		o += n;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return o;
}
