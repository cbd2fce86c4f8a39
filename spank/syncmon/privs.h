/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef LWK_SYNCMON_PRIVS_H
#define LWK_SYNCMON_PRIVS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Create DIR/BASE.jsonl (or BASE.N.jsonl, never an existing file) as
 * the job's user UID:GID, in a child with the user's ids and groups
 * only, not through /proc's magic links.  The fd, write-only; or -1
 * with why in err.  Gives up after 10 s, or once *stop is set.
 */
int lwk_syncmon_open_as_user(const char *dir, const char *base, uid_t uid, gid_t gid,
			     const volatile sig_atomic_t *stop, char *chosen, size_t len, char *err,
			     size_t errlen);

/* Whether this kernel asks for CAP_BPF (or CAP_SYS_ADMIN) even to use
 * BPF fds already held (before 5.19). */
bool lwk_syncmon_bpf_fds_need_caps(void);

/* Give up what loading the source needed (keep_bpf: all but what
 * reading its fds needs).  0, or -1. */
int lwk_syncmon_drop_after_open(bool keep_bpf);

/* Keep for the job's life only what sampling needs (keep_ptrace: the
 * job is found by environment; keep_bpf: as above); empty bounding,
 * inheritable and ambient sets, no_new_privs.  0, or -1 when a step
 * failed (every step is tried). */
int lwk_syncmon_confine(bool keep_ptrace, bool keep_bpf);

#endif
