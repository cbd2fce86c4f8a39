/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef LWK_CHILD_H
#define LWK_CHILD_H

#include <stddef.h>
#include <sys/types.h>

/* In a child: every fd from 3 on but those of keep[] (sorted, n of
 * them) closed, so that no lock the parent holds outlives its close. */
void lwk_child_close_all_but(const int *keep, size_t n);

/* fds in increasing order, allocating nothing (a child of a threaded
 * process may call nothing that allocates). */
void lwk_child_sort_fds(int *fds, size_t n);

/* In a child: every fd from 3 on but keep made /dev/null's (closed
 * without /dev/null or /proc), so that no lock outlives the parent's
 * close and no fd number the parent's libraries still write to is
 * taken by a socket of the child's. */
void lwk_child_shed_fds(int keep);

/* The parent: child killed (through pidfd when >= 0, which is closed)
 * and reaped within a second; its wait status into status when not NULL
 * and reaped. */
void lwk_child_end(pid_t child, int pidfd, int *status);

#endif
