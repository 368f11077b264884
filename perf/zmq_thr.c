/*
 * zmq_thr: the ZeroMQ anchor for rmq_bw --pattern pushpull|pubsub.  Two
 * processes stream messages one way over ZeroMQ tcp (127.0.0.1, ephemeral
 * port) or ipc (socket files under /tmp, unique per pid), PUSH -> PULL or
 * PUB -> SUB, and report, per message size, messages/s and MB/s in rmq_bw's
 * CSV format, so perf/compare.sh --zmq-thr can put both side by side.
 *
 * Rounds as rmq_bw's: per size the sender sends a window of W messages back
 * to back (zmq_send, copied in), the receiver takes them all (zmq_recv,
 * copied out) and answers with one ack on a second pair of sockets, a PAIR
 * (PULL and SUB cannot send); I timed rounds after a few untimed ones.
 * msgs/s = W * I / time, MB/s = size * W * I / time (1 MB = 10^6 B), time
 * from the first timed send to the last ack.  Each side reads its process
 * CPU clock (every thread: libzmq's I/O thread counts) over the timed
 * rounds; the receiver's figure comes back in its last ack.
 *
 * The receiver (forked child, CPU B) binds both sockets and tells the
 * sender (CPU A) where; libzmq's I/O thread runs where the thread that
 * creates the context runs, so pinning happens before zmq_ctx_new.
 *
 * PUB/SUB: a SUB misses what is published before its subscription reaches
 * the PUB (the slow joiner), so the sender first publishes HELLOs until the
 * receiver acks one, then an END; the receiver drops everything up to END.
 * A PUB drops at its high-water mark, and it sees room under that mark
 * late: the reader reports what it took every HWM/2 messages, and the PUB
 * looks at such reports at most every millisecond or so of sending (and
 * not at all while the benchmark waits on the other socket), so with 64 B
 * messages, HWM 1000 and windows of 64 a PUB dropped about 1 message in 50
 * here although no more than 64 were ever in flight.  So by default both
 * marks are off (--hwm 0): the ack per window bounds what is in flight.
 * Each message carries its number (sizes >= 8 B); the receiver counts a
 * gap in the numbers, or a window still short after LOSS_MS, as dropped,
 * and the dropped column says how many.
 *
 * Shutdown: ZeroMQ may drop the last messages of a socket closed right after
 * sending them (libzmq issue 4660, seen on ipc): the sender ends with a DONE
 * plan whose ack it waits for, and the receiver does not close its sockets
 * until the sender has released it through a pipe, i.e. after that ack has
 * arrived.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#endif
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "bench.h"

#define PROG          "zmq_thr"
#define PLAN_MAGIC    0x52485451u /* "QTHR" */
#define CMD_SIZE      1
#define CMD_DONE      2
#define LINGER_MS     1000  /* nothing is pending at a clean close */
#define IO_TIMEOUT    30000 /* ms; a round never takes this long */
#define LOSS_MS       2000  /* PUB/SUB: a window short this long lost some */
#define HELLO_MS      1     /* PUB/SUB: one HELLO per ms until acked */
#define ACK_SIZE      8
#define LAST_ACK_SIZE 24    /* round, receiver CPU ns, dropped */
#define THR_CSV_HEADER                                                       \
	"size,mbps,msgs_per_s,path,pattern,snd_cpu_ns,rcv_cpu_ns,dropped"

/* The slow-joiner hand-shake's messages on the data socket. */
static const char hello[8] = "HELLO\0\0\0", hello_end[8] = "END\0\0\0\0\0";

struct plan {
	uint32_t magic;
	uint32_t cmd;
	uint64_t size;
	uint64_t iters; /* rounds, warm-up included */
	uint64_t warmup;
	uint64_t window;
};

static const struct pattern {
	const char *name;
	int         type[2]; /* sender, receiver */
	const char *label;
} patterns[] = {
    {"pushpull", {ZMQ_PUSH, ZMQ_PULL}, "PUSH -> PULL"},
    {"pubsub", {ZMQ_PUB, ZMQ_SUB}, "PUB -> SUB"},
};

struct opts {
	const char           *transport; /* "tcp" or "ipc" */
	const struct pattern *pattern;
	bool                  csv;
	int                   iters, warmup, window;
	int                   hwm; /* ZMQ_SNDHWM and _RCVHWM, 0: none */
	int                   cpus[2];
	size_t                sizes[PP_MAX_SIZES];
	int                   nsizes;
};

static const char *side = "sender"; /* for error messages */

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: " PROG " [--pattern pushpull|pubsub] [--transport "
	        "tcp|ipc]\n"
	        "               [-S SIZE[,SIZE...]|all] [-I ITER] [-W WINDOW] "
	        "[--warmup N]\n"
	        "               [--hwm N] [--cpus A,B] [--csv] [--version] "
	        "[--help]\n"
	        "Streaming throughput between two forked processes over "
	        "ZeroMQ, as rmq_bw.\n"
	        "  --pattern    pushpull (default: PUSH -> PULL) or pubsub "
	        "(PUB -> SUB, all)\n"
	        "  --transport  tcp (127.0.0.1, ephemeral port; default) or "
	        "ipc (/tmp/" PROG ".PID.*)\n"
	        "  -S           sizes in bytes, k/m suffix allowed; all = 1 B .. "
	        "4 MiB, powers of two\n"
	        "  -I           timed rounds per size (default 100 up to 64 KiB, "
	        "20 above)\n"
	        "  -W           messages per round, one ack each (default 64)\n"
	        "  --warmup     untimed rounds first (default 10 up to 64 KiB, "
	        "2 above)\n"
	        "  --hwm N      ZMQ_SNDHWM and ZMQ_RCVHWM of the data sockets "
	        "(default 0: none;\n"
	        "               the window bounds what is in flight)\n"
	        "  --cpus A,B   pin the sender to CPU A, the receiver to CPU B "
	        "(default 0,1;\n"
	        "               a negative CPU leaves that side unpinned)\n"
	        "  --csv        print " THR_CSV_HEADER "\n");
}

static int
fail(const char *what)
{
	fprintf(stderr, PROG " (%s): %s\n", side, what);
	return 1;
}

static int
fail_errno(const char *what, int err)
{
	fprintf(stderr, PROG " (%s): %s: %s\n", side, what, strerror(err));
	return 1;
}

static int
fail_zmq(const char *what)
{
	int err = errno;

	if (err == EAGAIN)
		fprintf(stderr,
		        PROG " (%s): %s: no progress in %d s, peer gone?\n",
		        side, what, IO_TIMEOUT / 1000);
	else
		fprintf(stderr, PROG " (%s): %s: %s\n", side, what,
		        zmq_strerror(err));
	return 1;
}

static int
pin(int cpu)
{
	char what[48];
	int  rc = pp_pin(cpu);

	if (rc != 0) {
		snprintf(what, sizeof(what), "cannot pin to CPU %d", cpu);
		return fail_errno(what, -rc);
	}
	return 0;
}

/*
 * zmq_send/zmq_recv that retry when a signal interrupts them, unless the
 * signal was SIGCHLD for the receiver's exit (then fail with ECONNRESET).
 * xsend: 0 if len bytes went.  xrecv: the message's size (at most cap
 * copied), or -1 with errno set (EAGAIN: the socket's timeout).
 */
static int
xsend(void *s, const void *buf, size_t len)
{
	int rc;

	while ((rc = zmq_send(s, buf, len, 0)) < 0 && errno == EINTR)
		if (pp_peer()->exited) {
			errno = ECONNRESET;
			return -1;
		}
	return rc < 0 ? -1 : 0;
}

static int
xrecv(void *s, void *buf, size_t cap)
{
	int rc;

	while ((rc = zmq_recv(s, buf, cap, 0)) < 0 && errno == EINTR)
		if (pp_peer()->exited) {
			errno = ECONNRESET;
			return -1;
		}
	return rc;
}

/* xrecv of a message of exactly len bytes (else EMSGSIZE). */
static int
xrecv_exact(void *s, void *buf, size_t len)
{
	int rc = xrecv(s, buf, len);

	if (rc >= 0 && (size_t) rc != len) {
		errno = EMSGSIZE;
		return -1;
	}
	return rc < 0 ? -1 : 0;
}

static int
setopt_int(void *s, int opt, int val, const char *name)
{
	if (zmq_setsockopt(s, opt, &val, sizeof(val)) != 0)
		return fail_zmq(name);
	return 0;
}

/* A socket with bounded linger and timeouts; hwm < 0: libzmq's marks. */
static int
open_socket(void *ctx, int type, int hwm, void **out)
{
	void *s = zmq_socket(ctx, type);

	*out = s;
	if (s == NULL)
		return fail_zmq("zmq_socket");
	if (setopt_int(s, ZMQ_LINGER, LINGER_MS, "ZMQ_LINGER") != 0 ||
	    setopt_int(s, ZMQ_RCVTIMEO, IO_TIMEOUT, "ZMQ_RCVTIMEO") != 0 ||
	    setopt_int(s, ZMQ_SNDTIMEO, IO_TIMEOUT, "ZMQ_SNDTIMEO") != 0)
		return 1;
	if (hwm >= 0 && (setopt_int(s, ZMQ_SNDHWM, hwm, "ZMQ_SNDHWM") != 0 ||
	                setopt_int(s, ZMQ_RCVHWM, hwm, "ZMQ_RCVHWM") != 0))
		return 1;
	if (type == ZMQ_SUB && zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0) != 0)
		return fail_zmq("ZMQ_SUBSCRIBE");
	return 0;
}

static int
close_all(void *data, void *ctl, void *ctx)
{
	int ret = 0;

	if (data != NULL && zmq_close(data) != 0)
		ret = fail_zmq("zmq_close");
	if (ctl != NULL && zmq_close(ctl) != 0)
		ret = fail_zmq("zmq_close");
	if (ctx != NULL) {
		while (zmq_ctx_term(ctx) != 0)
			if (errno != EINTR) {
				ret = fail_zmq("zmq_ctx_term");
				break;
			}
	}
	return ret;
}

/* ------------------------------------------------------------ receiver */

/* Drop what comes before END; ack the first HELLO on the control PAIR. */
static int
recv_hello(void *data, void *ctl)
{
	char buf[16];
	bool acked = false;
	int  rc;

	for (;;) {
		rc = xrecv(data, buf, sizeof(buf));
		if (rc < 0)
			return fail_zmq("receive HELLO");
		if (rc == sizeof(hello_end) &&
		    memcmp(buf, hello_end, sizeof(hello_end)) == 0)
			return acked ? 0 : fail("END before HELLO");
		if (rc != sizeof(hello) ||
		    memcmp(buf, hello, sizeof(hello)) != 0)
			return fail("not a HELLO");
		if (!acked && xsend(ctl, hello, sizeof(hello)) != 0)
			return fail_zmq("ack HELLO");
		acked = true;
	}
}

/*
 * One window: messages numbered first .. first + w - 1 (sizes >= 8 B).
 * A gap in the numbers, or the end of the window not there after LOSS_MS
 * (PUB/SUB only), counts as lost.  Returns 0, or -1 on error.
 */
static int
recv_window(void *data, uint8_t *buf, const struct plan *p, uint64_t first,
            bool lossy, uint64_t *lost)
{
	uint64_t next = first, end = first + p->window, seq, got = 0;
	int      rc;

	while (next < end) {
		rc = xrecv(data, buf, (size_t) p->size);
		if (rc < 0 && errno == EAGAIN && lossy) {
			*lost += end - next;
			return 0;
		}
		if (rc < 0)
			return fail_zmq("receive");
		if ((size_t) rc != p->size)
			return fail("a message of the wrong size");
		if (p->size < sizeof(seq)) {
			next = first + ++got;
			continue;
		}
		memcpy(&seq, buf, sizeof(seq));
		if (seq < next || seq >= end)
			return fail("a message out of order");
		*lost += seq - next;
		next = seq + 1;
	}
	return 0;
}

static int
receive_loop(const struct opts *o, void *data, void *ctl)
{
	struct plan p;
	uint8_t    *buf = NULL;
	size_t      cap = 0;
	uint64_t    i, lost, cpu0, ack[3];
	bool        lossy = o->pattern->type[0] == ZMQ_PUB;
	int         ret   = 1;

	if (lossy && setopt_int(data, ZMQ_RCVTIMEO, LOSS_MS, "ZMQ_RCVTIMEO"))
		return 1;
	for (;;) {
		if (xrecv_exact(ctl, &p, sizeof(p)) != 0) {
			fail_zmq("receive plan");
			goto out;
		}
		if (p.magic != PLAN_MAGIC ||
		    (p.cmd != CMD_SIZE && p.cmd != CMD_DONE)) {
			fail("bad plan message");
			goto out;
		}
		if (xsend(ctl, &p, sizeof(p)) != 0) {
			fail_zmq("acknowledge plan");
			goto out;
		}
		if (p.cmd == CMD_DONE)
			break;
		if (p.size > cap || buf == NULL) {
			free(buf);
			cap = p.size > 8 ? (size_t) p.size : 8;
			buf = calloc(1, cap);
			if (buf == NULL) {
				fail_errno("malloc", ENOMEM);
				goto out;
			}
		}
		lost = 0;
		cpu0 = pp_cpu_ns();
		for (i = 0; i < p.iters; i++) {
			if (i == p.warmup)
				cpu0 = pp_cpu_ns();
			if (recv_window(data, buf, &p, i * p.window, lossy,
			                &lost) != 0)
				goto out;
			ack[0] = i;
			ack[1] = pp_cpu_ns() - cpu0;
			ack[2] = lost;
			if (xsend(ctl, ack,
			          i + 1 == p.iters ? LAST_ACK_SIZE : ACK_SIZE) !=
			    0) {
				fail_zmq("send ack");
				goto out;
			}
		}
	}
	ret = 0;
out:
	free(buf);
	return ret;
}

/* Read until EOF: the sender closes the pipe once it is done. */
static int
wait_release(int fd)
{
	char    c;
	ssize_t n;

	while ((n = read(fd, &c, 1)) != 0)
		if (n < 0 && errno != EINTR)
			return fail_errno("read release pipe", errno);
	return 0;
}

/* Bind s to addr and append its endpoint and a newline to eps. */
static int
bind_tell(void *s, const char *addr, char *eps, size_t cap)
{
	char   ep[256];
	size_t len = sizeof(ep), at = strlen(eps);

	if (zmq_bind(s, addr) != 0)
		return fail_zmq(addr);
	if (zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &len) != 0)
		return fail_zmq("ZMQ_LAST_ENDPOINT");
	snprintf(eps + at, cap - at, "%s\n", ep);
	return 0;
}

static int
receiver(const struct opts *o, char addr[2][200], int ep_fd, int release_fd)
{
	void   *ctx = NULL, *data = NULL, *ctl = NULL;
	char    eps[520] = "";
	size_t  len;
	ssize_t n;
	int     ret = 1;

	if (pin(o->cpus[1]) != 0)
		return 1;
	ctx = zmq_ctx_new();
	if (ctx == NULL)
		return fail_zmq("zmq_ctx_new");
	if (open_socket(ctx, o->pattern->type[1], o->hwm, &data) != 0 ||
	    open_socket(ctx, ZMQ_PAIR, -1, &ctl) != 0 ||
	    bind_tell(data, addr[0], eps, sizeof(eps)) != 0 ||
	    bind_tell(ctl, addr[1], eps, sizeof(eps)) != 0)
		goto out;
	len = strlen(eps);
	n   = write(ep_fd, eps, len);
	if (n != (ssize_t) len) {
		fail_errno("write endpoints", n < 0 ? errno : EIO);
		goto out;
	}
	if (close(ep_fd) != 0) {
		ep_fd = -1;
		fail_errno("close endpoint pipe", errno);
		goto out;
	}
	ep_fd = -1;
	if (recv_hello(data, ctl) != 0 || receive_loop(o, data, ctl) != 0)
		goto out;
	/* Keep the sockets open until the DONE ack has arrived. */
	ret = wait_release(release_fd);
out:
	if (ep_fd >= 0)
		close(ep_fd);
	if (close_all(data, ctl, ctx) != 0)
		ret = 1;
	return ret;
}

/* -------------------------------------------------------------- sender */

/* HELLO every HELLO_MS until the receiver acks one, then END. */
static int
send_hello(void *data, void *ctl)
{
	zmq_pollitem_t it = {.socket = ctl, .events = ZMQ_POLLIN};
	char           buf[16];
	int            rc, waited = 0;

	for (;;) {
		if (xsend(data, hello, sizeof(hello)) != 0)
			return fail_zmq("send HELLO");
		rc = zmq_poll(&it, 1, HELLO_MS);
		if (rc < 0 && errno != EINTR)
			return fail_zmq("zmq_poll");
		if (rc > 0)
			break;
		if (++waited * HELLO_MS > IO_TIMEOUT)
			return fail("no HELLO acked: the receiver is gone?");
	}
	if (xrecv_exact(ctl, buf, sizeof(hello)) != 0)
		return fail_zmq("receive HELLO ack");
	if (xsend(data, hello_end, sizeof(hello_end)) != 0)
		return fail_zmq("send END");
	return 0;
}

static int
plan_send(void *ctl, const struct plan *p)
{
	struct plan a;

	if (xsend(ctl, p, sizeof(*p)) != 0 ||
	    xrecv_exact(ctl, &a, sizeof(a)) != 0)
		return fail_zmq(p->cmd == CMD_DONE ? "final handshake" : "plan");
	if (memcmp(&a, p, sizeof(*p)) != 0)
		return fail("bad plan acknowledgement");
	return 0;
}

static void
report(const struct opts *o, const char *path, size_t size, int iters,
       double us, uint64_t snd_cpu, uint64_t rcv_cpu, uint64_t lost)
{
	double msgs = (double) iters * o->window;
	double mbps = us > 0 ? (double) size * msgs / us : 0;
	double mps  = us > 0 ? msgs * 1e6 / us : 0;

	if (o->csv)
		printf("%zu,%.2f,%.0f,%s,%s,%.1f,%.1f,%llu\n", size, mbps, mps,
		       path, o->pattern->name, (double) snd_cpu / msgs,
		       (double) rcv_cpu / msgs, (unsigned long long) lost);
	else
		printf("  %10zu %6d %6d %12.2f %12.0f %9.1f %9.1f  %s%s\n",
		       size, iters, o->window, mbps, mps,
		       (double) snd_cpu / msgs, (double) rcv_cpu / msgs, path,
		       lost != 0 ? " (DROPPED)" : "");
}

static int
send_sizes(const struct opts *o, void *data, void *ctl, const char *what)
{
	struct plan p = {.magic = PLAN_MAGIC, .window = (uint64_t) o->window};
	uint8_t    *sb = NULL;
	uint64_t    ack[3], seq, cpu0 = 0;
	double      t0 = 0;
	size_t      max = 8, size;
	char        path[16];
	int         k, i, j, iters, warm, rc, major, minor, patch, ret = 1;

	snprintf(path, sizeof(path), "zmq_%s", o->transport);
	for (k = 0; k < o->nsizes; k++)
		if (o->sizes[k] > max)
			max = o->sizes[k];
	sb = malloc(max);
	if (sb == NULL) {
		fail_errno("malloc", ENOMEM);
		goto out;
	}
	zmq_version(&major, &minor, &patch);
	if (o->csv)
		printf(THR_CSV_HEADER "\n");
	else
		printf("# " PROG ": libzmq %d.%d.%d, %s (acks on a PAIR), %s\n"
		       "# MB/s = size * window * iters / time (1 MB = 10^6 B), "
		       "one %d B ack per window;\n"
		       "# HWM %d (0: none); snd/rcv ns = process CPU time of "
		       "that side over the timed\n# rounds / messages\n"
		       "# %10s %6s %6s %12s %12s %9s %9s  %s\n",
		       major, minor, patch, o->pattern->label, what, ACK_SIZE,
		       o->hwm, "size", "iters", "window", "MB/s", "msgs/s",
		       "snd ns", "rcv ns", "path");
	if (fflush(stdout) != 0) {
		fail_errno("stdout", errno);
		goto out;
	}
	for (k = 0; k < o->nsizes; k++) {
		size  = o->sizes[k];
		iters = o->iters > 0 ? o->iters : size <= 65536 ? 100 : 20;
		warm  = o->warmup >= 0 ? o->warmup : size <= 65536 ? 10 : 2;
		p.cmd    = CMD_SIZE;
		p.size   = size;
		p.iters  = (uint64_t) (iters + warm);
		p.warmup = (uint64_t) warm;
		if (plan_send(ctl, &p) != 0)
			goto out;
		pp_fill(sb, size, (uint64_t) k);
		for (i = 0; i < warm + iters; i++) {
			if (i == warm) {
				t0   = pp_now_us();
				cpu0 = pp_cpu_ns();
			}
			for (j = 0; j < o->window; j++) {
				seq = (uint64_t) i * p.window + (uint64_t) j;
				if (size >= sizeof(seq))
					memcpy(sb, &seq, sizeof(seq));
				if (xsend(data, sb, size) != 0) {
					fail_zmq("send");
					goto out;
				}
			}
			rc = xrecv(ctl, ack, sizeof(ack));
			if (rc < 0) {
				fail_zmq("receive ack");
				goto out;
			}
			if (rc != (i + 1 == warm + iters ? LAST_ACK_SIZE
			                                 : ACK_SIZE) ||
			    ack[0] != (uint64_t) i) {
				fprintf(stderr, PROG ": %zu B: bad ack\n", size);
				goto out;
			}
		}
		if (ack[2] != 0)
			fprintf(stderr, PROG ": %zu B: the receiver missed %llu "
			        "messages\n", size, (unsigned long long) ack[2]);
		report(o, path, size, iters, pp_now_us() - t0,
		       pp_cpu_ns() - cpu0, ack[1], ack[2]);
		if (fflush(stdout) != 0) {
			fail_errno("stdout", errno);
			goto out;
		}
	}
	/* Wait for the ack of DONE: nothing of ours is in flight after. */
	p.cmd  = CMD_DONE;
	p.size = p.iters = p.warmup = 0;
	ret    = plan_send(ctl, &p);
out:
	free(sb);
	return ret;
}

/* eps: the data endpoint, a newline, the control endpoint, a newline. */
static int
sender(const struct opts *o, char *eps, const char *what)
{
	void *ctx, *data = NULL, *ctl = NULL;
	char *nl1, *nl2;
	int   ret = 1;

	nl1 = strchr(eps, '\n');
	nl2 = nl1 != NULL ? strchr(nl1 + 1, '\n') : NULL;
	if (nl2 == NULL)
		return fail("bad endpoints from the receiver");
	*nl1 = *nl2 = '\0';
	ctx         = zmq_ctx_new();
	if (ctx == NULL)
		return fail_zmq("zmq_ctx_new");
	if (open_socket(ctx, o->pattern->type[0], o->hwm, &data) != 0 ||
	    open_socket(ctx, ZMQ_PAIR, -1, &ctl) != 0)
		goto out;
	if (zmq_connect(data, eps) != 0) {
		fail_zmq(eps);
		goto out;
	}
	if (zmq_connect(ctl, nl1 + 1) != 0) {
		fail_zmq(nl1 + 1);
		goto out;
	}
	if (send_hello(data, ctl) != 0)
		goto out;
	ret = send_sizes(o, data, ctl, what);
out:
	if (close_all(data, ctl, ctx) != 0)
		ret = 1;
	return ret;
}

/* ------------------------------------------------------------- driver */

/* Read the child's endpoints until EOF; nothing means it failed to bind. */
static int
read_endpoints(int fd, char *ep, size_t cap)
{
	ssize_t got = pp_read_all(fd, ep, cap);

	if (got < 0)
		return fail_errno("read endpoint pipe", errno);
	return got > 0 ? 0 : fail("the receiver failed to bind");
}

static int
run_local(const struct opts *o)
{
	struct pp_peer *peer = pp_peer(); /* file: data, control sockets */
	char            addr[2][200], eps[520], what[600];
	const char     *failed;
	int             epfd[2], relfd[2], ret, rc, k;
	pid_t           pid, parent = getpid();

	for (k = 0; k < 2; k++) {
		if (strcmp(o->transport, "ipc") == 0) {
			snprintf(peer->file[k], sizeof(peer->file[k]),
			         "/tmp/" PROG ".%ld.%s.ipc", (long) getpid(),
			         k == 0 ? "data" : "ctl");
			snprintf(addr[k], sizeof(addr[k]), "ipc://%s",
			         peer->file[k]);
		} else {
			snprintf(addr[k], sizeof(addr[k]), "tcp://127.0.0.1:*");
		}
	}
	if (pipe(epfd) != 0)
		return fail_errno("pipe", errno);
	if (pipe(relfd) != 0)
		return fail_errno("pipe", errno);
	pid = pp_fork_peer(&failed);
	if (pid < 0)
		return fail_errno(failed, errno);
	if (pid == 0) {
		/* Die with the parent (even on SIGKILL), removing the
		 * socket files; on a clean exit the parent removes them. */
		side = "receiver";
		if (pp_peer_init(parent, &failed) != 0)
			_exit(errno != 0 ? fail_errno(failed, errno)
			                 : fail(failed));
		if (close(epfd[0]) != 0 || close(relfd[1]) != 0)
			_exit(fail_errno("close pipe", errno));
		_exit(receiver(o, addr, epfd[1], relfd[0]));
	}
	ret = 0;
	if (close(epfd[1]) != 0 || close(relfd[0]) != 0)
		ret = fail_errno("close pipe", errno);
	if (ret == 0 && pp_fatal_handlers() != 0)
		ret = fail_errno("sigaction", errno);
	if (ret == 0)
		ret = read_endpoints(epfd[0], eps, sizeof(eps));
	if (close(epfd[0]) != 0 && ret == 0)
		ret = fail_errno("close endpoint pipe", errno);
	if (ret == 0)
		ret = pin(o->cpus[0]);
	if (ret == 0) {
		snprintf(what, sizeof(what), "%.*s, cpus %d,%d",
		         (int) strcspn(eps, "\n"), eps, o->cpus[0], o->cpus[1]);
		ret = sender(o, eps, what);
	}
	/* Release the receiver: it closes once this end of the pipe is. */
	if (close(relfd[1]) != 0)
		ret = fail_errno("close release pipe", errno);
	rc = pp_reap_peer(pid, ret != 0, PROG ": receiver");
	if (rc < 0)
		ret = fail_errno("waitpid", errno);
	else if (rc > 0)
		ret = 1;
	for (k = 0; k < 2; k++)
		if (peer->file[k][0] != '\0' && unlink(peer->file[k]) != 0 &&
		    errno != ENOENT)
			ret = fail_errno(peer->file[k], errno);
	return ret;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"pattern", required_argument, NULL, 'a'},
	    {"transport", required_argument, NULL, 't'},
	    {"warmup", required_argument, NULL, 'w'},
	    {"hwm", required_argument, NULL, 'H'},
	    {"cpus", required_argument, NULL, 'u'},
	    {"local", no_argument, NULL, 'l'},
	    {"csv", no_argument, NULL, 'c'},
	    {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct opts o = {.transport = "tcp",
	                 .pattern   = &patterns[0],
	                 .iters     = 0,
	                 .warmup    = -1,
	                 .window    = 64,
	                 .cpus      = {0, 1}};
	int         c, major, minor, patch;
	size_t      t;

	if (pp_parse_sizes("all", o.sizes, &o.nsizes) != 0)
		return 2;
	while ((c = getopt_long(argc, argv, "t:S:I:W:Vh", lo, NULL)) != -1) {
		switch (c) {
		case 'a':
			for (t = 0; t < sizeof(patterns) / sizeof(patterns[0]);
			     t++)
				if (strcmp(optarg, patterns[t].name) == 0)
					break;
			if (t == sizeof(patterns) / sizeof(patterns[0])) {
				fprintf(stderr, PROG ": bad --pattern %s "
				                "(pushpull or pubsub)\n",
				        optarg);
				return 2;
			}
			o.pattern = &patterns[t];
			break;
		case 't':
			if (strcmp(optarg, "tcp") != 0 &&
			    strcmp(optarg, "ipc") != 0) {
				fprintf(stderr, PROG ": bad --transport %s "
				                "(tcp or ipc)\n",
				        optarg);
				return 2;
			}
			o.transport = optarg;
			break;
		case 'S':
			if (pp_parse_sizes(optarg, o.sizes, &o.nsizes) != 0) {
				fprintf(stderr, PROG ": bad -S %s\n", optarg);
				return 2;
			}
			break;
		case 'I':
			if (pp_parse_int(optarg, 1, &o.iters) != 0) {
				fprintf(stderr, PROG ": bad -I %s\n", optarg);
				return 2;
			}
			break;
		case 'W':
			if (pp_parse_int(optarg, 1, &o.window) != 0 ||
			    o.window > 1000000) {
				fprintf(stderr, PROG ": bad -W %s\n", optarg);
				return 2;
			}
			break;
		case 'w':
			if (pp_parse_int(optarg, 0, &o.warmup) != 0) {
				fprintf(stderr, PROG ": bad --warmup %s\n",
				        optarg);
				return 2;
			}
			break;
		case 'H':
			if (pp_parse_int(optarg, 0, &o.hwm) != 0) {
				fprintf(stderr, PROG ": bad --hwm %s\n",
				        optarg);
				return 2;
			}
			break;
		case 'u':
			if (pp_parse_cpus(optarg, o.cpus) != 0) {
				fprintf(stderr, PROG ": bad --cpus %s\n",
				        optarg);
				return 2;
			}
			break;
		case 'l':
			break; /* always: as rmq_bw --local */
		case 'c':
			o.csv = true;
			break;
		case 'V':
			zmq_version(&major, &minor, &patch);
			printf(PROG " (libzmq %d.%d.%d)\n", major, minor,
			       patch);
			return fflush(stdout) != 0 ? 1 : 0;
		case 'h':
			usage(stdout);
			return fflush(stdout) != 0 ? 1 : 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	return run_local(&o);
}
