/* SPDX-License-Identifier: GPL-2.0-or-later */
/* slurmd's NodeName from its arguments, read as its getopt_long reads
 * "bcCd:Df:F::GhL:Mn:N:svVZ" (the same from 22.05 to 26.05), and the
 * name set once in slurmd. */
#include <stdlib.h>
#include <string.h>

#include "check_lwk.h"
#include "node/nodename.h"

/* args: the words, '|' between them (cmdline's NUL). */
static int node_of(const char *args, char *out, size_t outlen)
{
	char buf[512];
	size_t n = strlen(args);

	memcpy(buf, args, n + 1);
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '|')
			buf[i] = '\0';
	return lwk_slurmd_args_node(buf, n + 1, out, outlen);
}

START_TEST(the_last_n_is_the_name)
{
	static const struct {
		const char *args;
		int rc;
		const char *node;
	} cases[] = {
		{ "slurmd|-f|/etc/slurm.conf|-N|node2", 1, "node2" },
		{ "slurmd|-Nnode3", 1, "node3" },
		{ "slurmd|-DNnode4", 1, "node4" },
		{ "slurmd|-DN|node5", 1, "node5" },
		{ "slurmd|-N|a|-N|b", 1, "b" },
		{ "/usr/sbin/slurmd|-D|-s|-N|n1|-vvv", 1, "n1" },
		/* -f's argument is not an option, whatever it looks like. */
		{ "slurmd|-f|-N|-N|n6", 1, "n6" },
		{ "slurmd|-f/x/-N|-N|n7", 1, "n7" },
		/* -F takes the rest of its word only: -N after it in the
		 * same word is its argument. */
		{ "slurmd|-FN|-N|x", 1, "x" },
		{ "slurmd|-Ffeat|-N|n8", 1, "n8" },
		/* A long option's argument is the next word, unless =. */
		{ "slurmd|--conf-server|-N|-Nn5", 1, "n5" },
		{ "slurmd|--conf-server=h:6817|-N|n9", 1, "n9" },
		{ "slurmd|--systemd|-N|n10", 1, "n10" },
		{ "slurmd|--sys|-N|n11", 1, "n11" },
		/* A word that is no option is skipped (GNU getopt permutes). */
		{ "slurmd|stray|-N|n12", 1, "n12" },
		/* Past -- nothing is an option. */
		{ "slurmd|--|-N|x", 0, NULL },
		{ "slurmd|-D", 0, NULL },
		{ "slurmd|-Z", 2, NULL },
		{ "slurmd|-Z|-N|n13", 1, "n13" },
		/* -N as the last word: no name. */
		{ "slurmd|-N", 0, NULL },
		/* argv[0] is never an option. */
		{ "-Nx", 0, NULL },
	};
	char out[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = node_of(cases[i].args, out, sizeof(out));

		ck_assert_msg(rc == cases[i].rc, "%s: %d, not %d", cases[i].args, rc, cases[i].rc);
		if (rc == 1)
			ck_assert_msg(!strcmp(out, cases[i].node), "%s: '%s', not '%s'", cases[i].args, out,
				      cases[i].node);
	}
	/* A name longer than the buffer is no name. */
	ck_assert_int_eq(node_of("slurmd|-N|averyveryverylongname", out, 8), 0);
	/* A command line cut short (no NUL after its last word): that word
	 * is not read, nor anything past the buffer. */
	{
		static const char *const cut[] = { "slurmd\0-Nn1", "slurmd\0-N\0n1", "slurmd\0-", "slurmd\0-vvvv" };
		static const size_t lens[] = { 11, 12, 8, 12 };

		for (size_t i = 0; i < 4; i++) {
			char *heap = malloc(lens[i]);

			memcpy(heap, cut[i], lens[i]);
			ck_assert_int_eq(lwk_slurmd_args_node(heap, lens[i], out, sizeof(out)), 0);
			free(heap);
		}
	}
}
END_TEST

/* Set once, then what every caller gets; SLURMD_NODENAME is not read
 * past it.  In a child: the name is the process's for good. */
START_TEST(the_name_set_in_slurmd_wins)
{
	char node[64];

	setenv("SLURMD_NODENAME", "fromenv", 1);
	lwk_this_node(node, sizeof(node));
	ck_assert_str_eq(node, "fromenv");
	setenv("SLURMD_NODENAME", "a/b", 1);
	lwk_this_node(node, sizeof(node));
	ck_assert_str_ne(node, "a/b");
	ck_assert_int_eq(lwk_this_node_set(""), -1);
	ck_assert_int_eq(lwk_this_node_set("x/y"), -1);
	ck_assert_int_eq(lwk_this_node_set("node7"), 0);
	ck_assert_int_eq(lwk_this_node_set("node8"), -1);
	setenv("SLURMD_NODENAME", "fromenv", 1);
	lwk_this_node(node, sizeof(node));
	ck_assert_str_eq(node, "node7");
	unsetenv("SLURMD_NODENAME");
}
END_TEST

Suite *nodename_suite(void)
{
	Suite *s = suite_create("nodename");
	TCase *tc = tcase_create("nodename");

	tcase_add_test(tc, the_last_n_is_the_name);
	tcase_add_test(tc, the_name_set_in_slurmd_wins);
	suite_add_tcase(s, tc);
	return s;
}
