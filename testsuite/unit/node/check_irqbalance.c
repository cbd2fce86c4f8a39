/* SPDX-License-Identifier: GPL-2.0-or-later */
/* irqbalance told through its socket, against a stand-in daemon that
 * checks what irqbalance 1.9 checks (a uid-0 SCM_CREDENTIALS) and
 * answers "setup" as it does. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_lwk.h"
#include "node/irqbalance.h"

/* tree_root/rel, in a buffer of its own per call site's use. */
static const char *path_in_tree(const char *rel)
{
	static char buf[2][4096];
	static int i;

	i = !i;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tree_root, rel);
	return buf[i];
}

/* proc/77/environ of the tree: two variables, NUL-separated. */
static void put_environ(const char *a, const char *b)
{
	FILE *f = fopen(path_in_tree("proc/77/environ"), "w");

	ck_assert_ptr_nonnull(f);
	fwrite(a, 1, strlen(a) + 1, f);
	fwrite(b, 1, strlen(b) + 1, f);
	fclose(f);
}

START_TEST(its_own_bans_as_it_decides_them)
{
	struct lwk_cpuset s;
	char buf[256];

	/* Masks as irqbalance writes them: 32-bit words, the most
	 * significant first. */
	ck_assert_int_eq(lwk_irqbalance_parse_mask("0000000d", &s), 0);
	lwk_cpulist_format(&s, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0,2-3");
	ck_assert_int_eq(lwk_irqbalance_parse_mask("00000001,00000000", &s), 0);
	lwk_cpulist_format(&s, buf, sizeof(buf));
	ck_assert_str_eq(buf, "32");
	/* Each word 32 CPUs, whatever its digits; blanks around. */
	ck_assert_int_eq(lwk_irqbalance_parse_mask(" 1,0\n", &s), 0);
	lwk_cpulist_format(&s, buf, sizeof(buf));
	ck_assert_str_eq(buf, "32");
	ck_assert_int_eq(lwk_irqbalance_parse_mask("ffffffff1", &s), -1);
	/* Leading zeros are no bits, however many. */
	ck_assert_int_eq(lwk_irqbalance_parse_mask("00000000000000ff", &s), 0);
	lwk_cpulist_format(&s, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0-7");
	ck_assert_int_eq(lwk_irqbalance_parse_mask("1,,0", &s), -1);
	ck_assert_int_eq(lwk_irqbalance_parse_mask("", &s), -1);
	ck_assert_int_eq(lwk_irqbalance_parse_mask("xyz", &s), -1);
	ck_assert_int_eq(lwk_irqbalance_parse_mask("0f/", &s), -1);

	tree_make("irqbalance-own");
	tree_mkdir("proc/77");
	tree_mkdir("sys/devices/system/cpu");
	tree_put("sys/devices/system/cpu/isolated", "6\n");
	tree_put("sys/devices/system/cpu/nohz_full", "(null)\n");
	/* No environment to read: the kernel's isolated CPUs (a nohz_full
	 * that does not parse adds nothing), said with 1. */
	ck_assert_int_eq(lwk_irqbalance_own(path_in_tree("proc"), path_in_tree("sys"), 77, &s), 1);
	lwk_cpulist_format(&s, buf, sizeof(buf));
	ck_assert_str_eq(buf, "6");
	tree_put("sys/devices/system/cpu/nohz_full", "7\n");
	/* An empty variable is not set. */
	put_environ("PATH=/bin", "IRQBALANCE_BANNED_CPULIST=");
	ck_assert_int_eq(lwk_irqbalance_own(path_in_tree("proc"), path_in_tree("sys"), 77, &s), 0);
	lwk_cpulist_format(&s, buf, sizeof(buf));
	ck_assert_str_eq(buf, "6-7");
	/* The list replaces the kernel's; the mask comes before the list. */
	put_environ("IRQBALANCE_BANNED_CPULIST=1-2", "PATH=/bin");
	ck_assert_int_eq(lwk_irqbalance_own(path_in_tree("proc"), path_in_tree("sys"), 77, &s), 0);
	lwk_cpulist_format(&s, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1-2");
	put_environ("IRQBALANCE_BANNED_CPULIST=1-2", "IRQBALANCE_BANNED_CPUS=10");
	ck_assert_int_eq(lwk_irqbalance_own(path_in_tree("proc"), path_in_tree("sys"), 77, &s), 0);
	lwk_cpulist_format(&s, buf, sizeof(buf));
	ck_assert_str_eq(buf, "4");
	put_environ("IRQBALANCE_BANNED_CPULIST=two", "PATH=/bin");
	ck_assert_int_eq(lwk_irqbalance_own(path_in_tree("proc"), path_in_tree("sys"), 77, &s), -1);
	tree_remove();
}
END_TEST

/* tree_root/name: a socket nobody listens on. */
static void stale_socket(const char *name)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM, 0);

	ck_assert_int_lt(snprintf(a.sun_path, sizeof(a.sun_path), "%.80s/%s", tree_root, name),
			 (int)sizeof(a.sun_path));
	ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	close(s);
}

/* The stand-in: serves `conns` connections on dir/irqbalance4242.sock,
 * writing each message it took to the pipe (one line each, "REFUSED"
 * for one without our uid's credentials, EMPTY for a connection closed
 * without one) and answering "setup" with
 * "SLEEP 10 BANNED <mask>"; silent: never answers.  Its pid. */
static pid_t stand_in(const char *dir, int conns, const char *mask, bool silent, int out)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int one = 1, s, ready[2];
	pid_t pid;
	char ch;

	ck_assert_int_lt(snprintf(a.sun_path, sizeof(a.sun_path), "%.80s/irqbalance4242.sock", dir), (int)sizeof(a.sun_path));
	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid) {
		/* Listening (the kernel names the listener: this child). */
		close(ready[1]);
		ck_assert_int_eq(read(ready[0], &ch, 1), 1);
		close(ready[0]);
		return pid;
	}
	close(ready[0]);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) ||
	    bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 1) || write(ready[1], "r", 1) != 1)
		_exit(1);
	for (int i = 0; i < conns; i++) {
		char buf[600], control[CMSG_SPACE(sizeof(struct ucred))], line[700];
		struct iovec iov = { buf, sizeof(buf) - 1 };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
				    .msg_controllen = sizeof(control) };
		struct cmsghdr *c;
		int fd = accept(s, NULL, NULL);
		ssize_t n;

		if (fd < 0)
			_exit(1);
		n = recvmsg(fd, &m, 0);
		if (n < 0)
			_exit(1);
		buf[n] = '\0';
		c = CMSG_FIRSTHDR(&m);
		if (n == 0)
			snprintf(line, sizeof(line), "EMPTY\n");
		else if (!c || c->cmsg_type != SCM_CREDENTIALS || ((struct ucred *)CMSG_DATA(c))->uid != geteuid())
			snprintf(line, sizeof(line), "REFUSED\n");
		else
			snprintf(line, sizeof(line), "%s\n", buf);
		if (write(out, line, strlen(line)) < 0)
			_exit(1);
		if (silent) {
			sleep(5);
			_exit(0);
		}
		if (!strncmp(buf, "setup", 5)) {
			snprintf(line, sizeof(line), "SLEEP 10 BANNED %s", mask);
			if (write(fd, line, strlen(line)) < 0)
				_exit(1);
		}
		close(fd);
	}
	_exit(0);
}

static void read_lines(int fd, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
}

START_TEST(ban_then_give_back_through_the_socket)
{
	char path[4096], err[256], got[2048];
	struct lwk_cpuset app;
	int p[2], status;
	pid_t pid;

	tree_make("irqbalance");
	tree_mkdir("proc");
	tree_mkdir("sys/devices/system/cpu");
	tree_put("sys/devices/system/cpu/isolated", "0\n");
	lwk_cpulist_parse("2-3", LWK_MAX_CPUS, &app);
	/* No daemon: nothing to tell. */
	ck_assert_int_eq(lwk_irqbalance_socket(tree_root, path, sizeof(path)), 0);
	ck_assert_int_eq(lwk_irqbalance_ban(tree_root, path_in_tree("proc"), path_in_tree("sys"), &app,
					    err, sizeof(err)), 0);
	/* A socket nobody listens on any more (a killed irqbalance's),
	 * sorting first: passed over. */
	stale_socket("irqbalance1.sock");
	ck_assert_int_eq(lwk_irqbalance_ban(tree_root, path_in_tree("proc"), path_in_tree("sys"), &app,
					    err, sizeof(err)), 0);
	ck_assert_int_eq(pipe(p), 0);
	pid = stand_in(tree_root, 3, "00000000", false, p[1]);
	close(p[1]);
	/* Its environment unreadable (the kernel names the listener's pid:
	 * none in the tree yet): what it bans by itself is not known, and
	 * nothing is sent. */
	ck_assert_int_eq(lwk_irqbalance_ban(tree_root, path_in_tree("proc"), path_in_tree("sys"), &app,
					    err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "cannot tell which CPUs it bans by itself"));
	/* Its own (no IRQBALANCE_ variable: the kernel's isolated CPU 0)
	 * kept banned beside the App CPUs; given back with NULL. */
	snprintf(path, sizeof(path), "proc/%d", (int)pid);
	tree_mkdir(path);
	snprintf(path, sizeof(path), "proc/%d/environ", (int)pid);
	tree_put(path, "PATH=/bin");
	ck_assert_msg(lwk_irqbalance_ban(tree_root, path_in_tree("proc"), path_in_tree("sys"), &app, err,
					 sizeof(err)) == 1, "%s", err);
	ck_assert_msg(lwk_irqbalance_ban(tree_root, path_in_tree("proc"), path_in_tree("sys"), NULL, err,
					 sizeof(err)) == 1, "%s", err);
	read_lines(p[0], got, sizeof(got));
	close(p[0]);
	ck_assert_str_eq(got, "EMPTY\nsettings cpus 0,2-3\nsettings cpus NULL\n");
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	tree_remove();
}
END_TEST

START_TEST(a_daemon_that_does_not_answer_costs_the_timeout_only)
{
	char path[4096], reply[64], err[256], got[256], big[600];
	struct timespec t0, t1;
	int p[2];
	pid_t pid;

	tree_make("irqbalance-silent");
	ck_assert_int_eq(pipe(p), 0);
	pid = stand_in(tree_root, 1, "0", true, p[1]);
	close(p[1]);
	ck_assert_int_eq(lwk_irqbalance_socket(tree_root, path, sizeof(path)), 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(lwk_irqbalance_ask(path, "setup", reply, sizeof(reply), 300, err, sizeof(err)), -1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_ptr_nonnull(strstr(err, "did not answer 'setup' in time"));
	ck_assert_int_lt((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000, 3000);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	read_lines(p[0], got, sizeof(got));
	close(p[0]);
	ck_assert_str_eq(got, "setup\n");
	/* A message longer than irqbalance reads is refused, not cut. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(lwk_irqbalance_ask(path, big, NULL, 0, 100, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "more than its"));
	tree_remove();
}
END_TEST

Suite *irqbalance_suite(void)
{
	Suite *s = suite_create("irqbalance");
	TCase *tc = tcase_create("irqbalance");

	tcase_add_test(tc, its_own_bans_as_it_decides_them);
	tcase_add_test(tc, ban_then_give_back_through_the_socket);
	tcase_add_test(tc, a_daemon_that_does_not_answer_costs_the_timeout_only);
	suite_add_tcase(s, tc);
	return s;
}
