/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * irqbalance told to keep IRQs off the App cores while an --lwk job runs.
 * irqbalance (on by default on RHEL, common on Debian) re-places IRQs
 * every 10 s over the CPUs it is allowed: left alone it moves IRQs back
 * onto the App cores the plugin has just cleared.  Its documented way
 * to be told at run time is its socket (irqbalance(1), API), which only
 * root may use: "settings cpus <cpulist>" replaces the CPUs it keeps
 * IRQs off (what it had from its environment and from the kernel's
 * isolated and nohz_full CPUs) until "settings cpus NULL" gives those
 * back.  The ban takes effect at its next rescan, before it places
 * anything again.  What it bans by itself is read where it reads it,
 * not asked ("setup" answers what its last rescan found: a give-back
 * just sent is not in it yet).
 *
 * A restart of irqbalance forgets the ban; the plugin's own move of the
 * IRQs at setup still holds until the new daemon's first pass.
 */
#ifndef LWK_IRQBALANCE_H
#define LWK_IRQBALANCE_H

#include <stddef.h>

#include "common/cpulist.h"

/* Where Debian's and upstream's irqbalance.service put its socket
 * (RuntimeDirectory=irqbalance): irqbalance<pid>.sock. */
#define LWK_IRQBALANCE_DIR "/run/irqbalance"

/* An irqbalance socket in dir into path (whether a daemon listens is
 * not asked): 1 found, 0 none (irqbalance not running there), -1 too
 * long. */
int lwk_irqbalance_socket(const char *dir, char *path, size_t len);

/*
 * Send msg (no newline) to the socket at path, which a root process
 * must listen on, and read its reply (if any, up to replylen - 1 bytes,
 * NUL-terminated) within timeout_ms.  0 or -1 with err.
 */
int lwk_irqbalance_ask(const char *path, const char *msg, char *reply, size_t replylen,
		       int timeout_ms, char *err, size_t errlen);

/* A hex CPU mask as irqbalance writes and reads them (comma-separated
 * 32-bit words, the most significant first) into out: 0 or -1. */
int lwk_irqbalance_parse_mask(const char *text, struct lwk_cpuset *out);

/*
 * The CPUs the irqbalance of process pid keeps IRQs off by itself, as
 * it decides (irqbalance 1.9): IRQBALANCE_BANNED_CPUS (a mask) or else
 * IRQBALANCE_BANNED_CPULIST from its environment when set, else the
 * kernel's isolated and nohz_full CPUs.  0; 1 when its environment
 * could not be read (the kernel's lists only); -1 a value that does
 * not parse.  (irqbalance after 1.9.5 takes an empty
 * IRQBALANCE_BANNED_CPULIST for "none": not yet here.)
 */
int lwk_irqbalance_own(const char *proc, const char *sysfs, long pid, struct lwk_cpuset *out);

/*
 * Through the socket in dir a root daemon listens on (the kernel tells
 * its pid): app not NULL, keep IRQs off app and off what it bans by
 * itself ("settings cpus <list>"); app NULL, give it back its own
 * ("settings cpus NULL").  All within 2 s.  1 done, 0 no irqbalance
 * listens here, -1 with err (nothing sent).
 */
int lwk_irqbalance_ban(const char *dir, const char *proc, const char *sysfs,
		       const struct lwk_cpuset *app, char *err, size_t errlen);

#endif
