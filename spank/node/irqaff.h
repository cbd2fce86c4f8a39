/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * IRQ affinity moved off the App cores of an --lwk partition, and put
 * back.  Through <proc>/irq/<n>/smp_affinity_list: an IRQ that may land
 * on an App CPU gets its CPUs minus the App CPUs, or the OS CPUs when
 * nothing is left.  What was changed is written as text ("<irq> <old
 * list> <new list>" lines) into the job's state, so the epilog or a
 * sweep can restore it after slurmstepd died.  IRQs the kernel will not move
 * (per-CPU, managed) are counted, not errors.
 */
#ifndef LWK_IRQAFF_H
#define LWK_IRQAFF_H

#include <stdbool.h>
#include <stddef.h>

#include "common/cpulist.h"

/* The affinity an IRQ should have; false when cur is already off app. */
bool lwk_irq_new_affinity(const struct lwk_cpuset *cur, const struct lwk_cpuset *app,
			  const struct lwk_cpuset *os, struct lwk_cpuset *out);

struct lwk_irq_result {
	unsigned int moved, refused, untouched;
};

/* Move every IRQ off app; append "<irq> <old> <new>\n" per moved IRQ to save
 * (a caller buffer, NUL-terminated).  -1 only when <proc>/irq cannot be
 * read or save is too small (then nothing further is moved). */
int lwk_irq_move_off(const char *proc_root, const struct lwk_cpuset *app,
		     const struct lwk_cpuset *os, char *save, size_t savelen,
		     struct lwk_irq_result *r, char *err, size_t errlen);

/* The same "<irq> <old> <new>" lines for the IRQs lwk_irq_move_off would
 * move, moving nothing: written down before the move, so that a crash in
 * the middle of it leaves nothing unrecorded. */
int lwk_irq_list_off(const char *proc_root, const struct lwk_cpuset *app,
		     const struct lwk_cpuset *os, char *save, size_t savelen, char *err,
		     size_t errlen);

/* Put back what lwk_irq_move_off saved, where the IRQ still has the
 * affinity written then (one changed since, by irqbalance or an admin,
 * keeps theirs).  Returns the number of lines that could not be
 * restored (IRQ gone, refused, or a malformed line, skipped: the first
 * is described in err); -1 only for a line too long. */
int lwk_irq_restore(const char *proc_root, const char *saved, char *err, size_t errlen);

#endif
