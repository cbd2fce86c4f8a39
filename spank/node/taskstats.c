/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "node/taskstats.h"

#include <errno.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUFSZ 8192

struct request {
	struct nlmsghdr n;
	struct genlmsghdr g;
	char attrs[64];
};

static size_t add_attr(struct request *r, size_t off, uint16_t type, const void *data,
		       uint16_t len)
{
	struct nlattr *a = (struct nlattr *)(void *)(r->attrs + off);

	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	memcpy(r->attrs + off + NLA_HDRLEN, data, len);
	return off + NLA_ALIGN(a->nla_len);
}

static int send_request(struct lwk_taskstats *ts, uint16_t type, uint8_t cmd, uint16_t attr,
			const void *data, uint16_t len)
{
	struct request r;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	size_t attrs;
	ssize_t n;

	memset(&r, 0, sizeof(r));
	attrs = add_attr(&r, 0, attr, data, len);
	r.n.nlmsg_len = (uint32_t)(NLMSG_LENGTH(GENL_HDRLEN) + attrs);
	r.n.nlmsg_type = type;
	r.n.nlmsg_flags = NLM_F_REQUEST;
	r.n.nlmsg_seq = ++ts->seq;
	r.n.nlmsg_pid = 0;
	r.g.cmd = cmd;
	r.g.version = 1;
	do
		n = sendto(ts->fd, &r, r.n.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel));
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)r.n.nlmsg_len ? 0 : -1;
}

/* Receive the reply to the last request; skip stale ones.  Returns its length. */
static ssize_t recv_reply(struct lwk_taskstats *ts, char *buf, size_t len)
{
	for (;;) {
		ssize_t n = recv(ts->fd, buf, len, 0);
		const struct nlmsghdr *h = (const void *)buf;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)NLMSG_HDRLEN || !NLMSG_OK(h, (size_t)n))
			return -1;
		if (h->nlmsg_seq != ts->seq)
			continue; /* a late answer to an earlier request */
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			errno = h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error ? -e->error : EIO;
			return -1;
		}
		return n;
	}
}

/* Attributes of the generic netlink message at buf. */
#define FOR_EACH_ATTR(a, start, len)                                                  \
	for (const struct nlattr *a = (const void *)(start);                          \
	     (size_t)((const char *)a - (const char *)(start)) + NLA_HDRLEN <= (len) && \
	     a->nla_len >= NLA_HDRLEN &&                                              \
	     (size_t)((const char *)a - (const char *)(start)) + a->nla_len <= (len);   \
	     a = (const void *)((const char *)a + NLA_ALIGN(a->nla_len)))

int lwk_taskstats_open(struct lwk_taskstats *ts, char *err, size_t errlen)
{
	struct sockaddr_nl local = { .nl_family = AF_NETLINK };
	static const char name[] = TASKSTATS_GENL_NAME;
	struct timeval tv = { .tv_sec = 1 };
	char buf[BUFSZ];
	ssize_t n;

	memset(ts, 0, sizeof(*ts));
	ts->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (ts->fd < 0 || bind(ts->fd, (struct sockaddr *)&local, sizeof(local))) {
		snprintf(err, errlen, "lwk: taskstats: netlink socket: %s", strerror(errno));
		goto fail;
	}
	/* A kernel that never answers must not hang the sampler. */
	setsockopt(ts->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send_request(ts, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_NAME, name,
			 sizeof(name)) ||
	    (n = recv_reply(ts, buf, sizeof(buf))) < 0) {
		snprintf(err, errlen, "lwk: taskstats: the kernel has no TASKSTATS family (%s)",
			 strerror(errno));
		goto fail;
	}
	{
		const struct nlmsghdr *h = (const void *)buf;
		const char *start = (const char *)NLMSG_DATA(h) + GENL_HDRLEN;
		size_t alen = h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);

		FOR_EACH_ATTR(a, start, alen)
			if (a->nla_type == CTRL_ATTR_FAMILY_ID && a->nla_len >= NLA_HDRLEN + 2)
				memcpy(&ts->family, (const char *)a + NLA_HDRLEN, 2);
	}
	if (!ts->family) {
		snprintf(err, errlen, "lwk: taskstats: no family id in the kernel's answer");
		goto fail;
	}
	return 0;
fail:
	if (ts->fd >= 0)
		close(ts->fd);
	ts->fd = -1;
	return -1;
}

void lwk_taskstats_close(struct lwk_taskstats *ts)
{
	if (ts->fd >= 0)
		close(ts->fd);
	ts->fd = -1;
}

int lwk_taskstats_parse_reply(const void *buf, size_t len, uint16_t family,
			      struct lwk_task_cpu *out, uint16_t *version)
{
	const struct nlmsghdr *h = buf;
	const char *start;
	size_t alen;

	if (len < NLMSG_LENGTH(GENL_HDRLEN) || h->nlmsg_len > len ||
	    h->nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN) || h->nlmsg_type != family) {
		errno = EPROTO;
		return -1;
	}
	start = (const char *)NLMSG_DATA(h) + GENL_HDRLEN;
	alen = h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);
	FOR_EACH_ATTR(a, start, alen) {
		if (a->nla_type != TASKSTATS_TYPE_AGGR_PID && a->nla_type != TASKSTATS_TYPE_AGGR_TGID)
			continue;
		FOR_EACH_ATTR(in, (const char *)a + NLA_HDRLEN, (size_t)a->nla_len - NLA_HDRLEN) {
			struct taskstats s;
			size_t plen = (size_t)in->nla_len - NLA_HDRLEN;

			if (in->nla_type != TASKSTATS_TYPE_STATS)
				continue;
			/* Kernels append fields to struct taskstats: take
			 * what both sides know, the rest stays 0. */
			memset(&s, 0, sizeof(s));
			memcpy(&s, (const char *)in + NLA_HDRLEN, plen < sizeof(s) ? plen : sizeof(s));
			if (plen < offsetof(struct taskstats, ac_stime) + sizeof(s.ac_stime)) {
				errno = EPROTO;
				return -1;
			}
			out->utime_us = s.ac_utime;
			out->stime_us = s.ac_stime;
			out->run_real_ns = s.cpu_run_real_total;
			out->run_virtual_ns = s.cpu_run_virtual_total;
			out->nvcsw = plen >= offsetof(struct taskstats, nivcsw) + 8 ? s.nvcsw : 0;
			out->nivcsw = plen >= offsetof(struct taskstats, nivcsw) + 8 ? s.nivcsw : 0;
			if (version)
				*version = s.version;
			return 0;
		}
	}
	errno = EPROTO;
	return -1;
}

int lwk_taskstats_query(struct lwk_taskstats *ts, pid_t pid, int tgid, struct lwk_task_cpu *out)
{
	char buf[BUFSZ];
	uint32_t id = (uint32_t)pid;
	ssize_t n;

	memset(out, 0, sizeof(*out));
	if (send_request(ts, ts->family, TASKSTATS_CMD_GET,
			 tgid ? TASKSTATS_CMD_ATTR_TGID : TASKSTATS_CMD_ATTR_PID, &id, sizeof(id)))
		return -1;
	n = recv_reply(ts, buf, sizeof(buf));
	if (n < 0)
		return -1;
	return lwk_taskstats_parse_reply(buf, (size_t)n, ts->family, out, &ts->version);
}
