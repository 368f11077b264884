/*
 * Connecting sockets that stay connected (dial.h): each connect's dialer,
 * its tries in the background, and the backoff between them.
 */
#include <errno.h>
#include <stdio.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <unistd.h>

#include "conn/auth.h"
#include "conn/ctrl.h"
#include "conn/dial.h"
#include "conn/hello.h"
#include "conn/peer.h"
#include "socket.h"
#include "util.h"

static void dial_timer(struct rmq_timer *t, int64_t now, void *owner);
static void dial_peer_gone(struct rmq_socket *s, struct rmq_peer *p);

/*
 * A TCP connect to a port nobody listens on can meet itself: the kernel
 * may pick that very port as our side, and the two ends open each other
 * (a simultaneous open).  The connection then holds the port the binder
 * is about to bind again after a restart.  Such a connection is refused.
 */
static bool
self_connected(int fd)
{
	union rmq_inaddr a, b;
	socklen_t        al = sizeof(a), bl = sizeof(b);

	if (getsockname(fd, &a.sa, &al) != 0 || getpeername(fd, &b.sa, &bl) != 0
	    || al != bl || a.sa.sa_family == AF_UNIX)
		return false;
	return memcmp(&a, &b, al) == 0;
}

static int
never(void *arg)
{
	RMQ_UNUSED(arg);
	return 0;
}

int
rmq_ctrl_dial(struct rmq_socket *s, const struct rmq_addr *a,
              int64_t deadline, int *fdp, union rmq_inaddr *sin)
{
	struct sockaddr_un un;
	struct rmq_waiter  w;
	socklen_t          sl;
	int                fd, rc, backoff_ms = 10;
	char               where[160];

	if (!a->unix_name && (rc = rmq_addr_resolve(a, false, sin)) != 0)
		return rc;
	for (;;) {
		fd = socket(a->unix_name ? AF_UNIX : sin->sa.sa_family,
		            SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (a->unix_name) {
			sl = rmq_addr_unix(&un, a->name);
			rc = connect(fd, (struct sockaddr *) &un, sl);
		} else {
			rc = connect(fd, &sin->sa, rmq_inaddr_len(sin));
		}
		if (rc == 0 && !self_connected(fd))
			break;
		rc = rc == 0 ? -ECONNREFUSED : -errno;
		close(fd);
		if (rc != -ECONNREFUSED && rc != -ENOENT && rc != -EAGAIN)
			goto fail;
		if (rmq_now_ns() >= deadline) {
			rc = -RMQ_ETIMEDOUT;
			goto fail;
		}
		/* The binding side may not be up yet: wait a little, the
		 * socket's other peers and listeners served meanwhile. */
		rmq_waiter_init(&w, backoff_ms);
		(void) rmq_wait_until(&s->reactor, &w, 0, never, NULL);
		if (backoff_ms < 100)
			backoff_ms *= 2;
	}
	if (!a->unix_name) {
		rmq_ctrl_tune(s, fd);
		sl = sizeof(*sin);
		getsockname(fd, &sin->sa, &sl); /* local side */
	}
	*fdp = fd;
	return 0;
fail:
	rmq_addr_show(a, where, sizeof(where));
	rmq_log(RMQ_LOG_INFO, "connect %s: %s", where, rmq_strerror(rc));
	return rc;
}


/* p is d's: its death or end comes back to dial_peer_gone. */
static void
dial_own(struct rmq_dialer *d, struct rmq_peer *p)
{
	d->p     = p;
	p->gone  = dial_peer_gone;
	p->maker = d;
}

static void
dial_disown(struct rmq_peer *p)
{
	p->gone  = NULL;
	p->maker = NULL;
}

void
rmq_dial_init(struct rmq_socket *s)
{
	s->ctrl->dials_seed = (uint32_t) rmq_now_ns() ^ (uint32_t) getpid();
	rmq_timer_add(&s->reactor, &s->ctrl->dial_timer, dial_timer);
	s->ctrl->dial_timer.when = INT64_MAX;
}

static void
dial_free(struct rmq_socket *s, struct rmq_dialer *d)
{
	struct rmq_dialer **dp;

	for (dp = &s->ctrl->dialers; *dp != NULL; dp = &(*dp)->next)
		if (*dp == d) {
			*dp = d->next;
			break;
		}
	free(d);
}

/* Let go of a try under way: its connection and its NEW peer. */
static void
dial_abandon(struct rmq_socket *s, struct rmq_dialer *d)
{
	if (d->src.idx >= 0)
		rmq_source_remove(&s->reactor, &d->src);
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
	if (d->state != RMQ_DIAL_UP && d->p != NULL) {
		rmq_peer_destroy(s, d->p); /* still NEW: never counted live */
		d->p = NULL;
	}
}

/* Random in [0, n): spreads a job's clients over the interval. */
static int
jitter(struct rmq_socket *s, int n)
{
	uint32_t x = s->ctrl->dials_seed;

	if (n <= 0)
		return 0;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	s->ctrl->dials_seed = x;
	return (int) (x % (uint32_t) n);
}

/* The next try after RMQ_RECONNECT_IVL (growing to _MAX); false if the
 * socket does not reconnect (then d is freed). */
static bool
dial_later(struct rmq_socket *s, struct rmq_dialer *d)
{
	int ms;

	if (s->reconnect_ivl < 0) {
		dial_free(s, d);
		return false;
	}
	ms       = d->ivl_ms > 0 ? d->ivl_ms : 1;
	d->state = RMQ_DIAL_WAIT;
	d->due   = rmq_now_ns() + (int64_t) (ms + jitter(s, ms)) * 1000000;
	if (s->reconnect_ivl_max > s->reconnect_ivl) {
		d->ivl_ms = d->ivl_ms > s->reconnect_ivl_max / 2
		                ? s->reconnect_ivl_max
		                : d->ivl_ms * 2;
		if (d->ivl_ms <= 0)
			d->ivl_ms = s->reconnect_ivl_max;
	}
	if (d->due < s->ctrl->dial_timer.when)
		rmq_timer_set(&s->reactor, &s->ctrl->dial_timer, d->due);
	return true;
}

static void
dial_failed(struct rmq_socket *s, struct rmq_dialer *d, int err)
{
	dial_abandon(s, d);
	if (d->tries++ == 0 || err != d->last_err)
		rmq_log(err == -RMQ_EAUTH ? RMQ_LOG_WARN : RMQ_LOG_DEBUG,
		        "connect %s: %s; trying again", d->endpoint,
		        rmq_strerror(err));
	d->last_err = err;
	(void) dial_later(s, d);
}

static void dial_ready(struct rmq_source *src, short revents, void *owner);

static int
dial_hello(struct rmq_socket *s, struct rmq_dialer *d)
{
	uint8_t          b[RMQ_CTRL_HDR_SIZE + RMQ_CTRL_BODY_MAX];
	struct rmq_hello h;

	rmq_hello_fill(s, d->fd, d->p, &h);
	/* A fresh connection's buffer takes a handshake frame whole: no
	 * wait for room. */
	return rmq_write_all(d->fd, b, rmq_ctrl_encode_hello(b, &h), 0);
}

/* The control connection is up: our HELLO (or our AUTH), then its
 * answer. */
static void
dial_connected(struct rmq_socket *s, struct rmq_dialer *d)
{
	uint8_t b[RMQ_CTRL_HDR_SIZE + RMQ_AUTH_NONCE + RMQ_AUTH_MAC];
	size_t  n;
	int     rc;

	if (!d->a.unix_name)
		rmq_ctrl_tune(s, d->fd);
	d->p = rmq_peer_new(s);
	if (d->p == NULL) {
		dial_failed(s, d, -RMQ_ENOMEM);
		return;
	}
	rmq_addr_show(&d->a, d->p->name, sizeof(d->p->name));
	d->auth.step = RMQ_AUTH_START;
	/* With auth.key_file, our HELLO waits until the binder has proven
	 * itself (dial_ready). */
	n = rmq_auth_on(s) ? rmq_auth_start(s, &d->auth, b) : 0;
	rc = n > 0 ? rmq_write_all(d->fd, b, n, 0) : dial_hello(s, d);
	if (rc != 0) {
		dial_failed(s, d, rc);
		return;
	}
	if (rmq_source_add(&s->reactor, &d->src, d->fd, dial_ready) != 0) {
		dial_failed(s, d, -RMQ_ENOMEM);
		return;
	}
	rmq_source_watch(&s->reactor, &d->src); /* the answer, in a call or not */
	d->state = RMQ_DIAL_HELLO;
	d->have  = 0;
	d->due   = rmq_deadline(s->handshake_ms);
	if (d->due < s->ctrl->dial_timer.when)
		rmq_timer_set(&s->reactor, &s->ctrl->dial_timer, d->due);
}

/* One try: a non-blocking connect. */
static void
dial_try(struct rmq_socket *s, struct rmq_dialer *d)
{
	struct sockaddr_un un;
	socklen_t          sl;
	int                fd, rc;

	fd = socket(d->a.unix_name ? AF_UNIX : d->sin.sa.sa_family,
	            SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		dial_failed(s, d, -errno);
		return;
	}
	if (d->a.unix_name) {
		sl = rmq_addr_unix(&un, d->a.name);
		rc = connect(fd, (struct sockaddr *) &un, sl);
	} else {
		rc = connect(fd, &d->sin.sa, rmq_inaddr_len(&d->sin));
	}
	d->fd = fd;
	if (rc == 0 && self_connected(fd)) {
		dial_failed(s, d, -ECONNREFUSED);
		return;
	}
	if (rc == 0) {
		dial_connected(s, d);
		return;
	}
	if (errno != EINPROGRESS) {
		dial_failed(s, d, -errno);
		return;
	}
	d->state = RMQ_DIAL_CONNECTING;
	d->due   = rmq_deadline(s->handshake_ms);
}

/* CONNECTING: has the connect finished? */
static void
dial_check(struct rmq_socket *s, struct rmq_dialer *d, int64_t now)
{
	struct pollfd pfd = {.fd = d->fd, .events = POLLOUT};
	socklen_t     sl  = sizeof(int);
	int           err = 0;

	if (poll(&pfd, 1, 0) <= 0) {
		if (now >= d->due)
			dial_failed(s, d, -RMQ_ETIMEDOUT);
		return;
	}
	if (getsockopt(d->fd, SOL_SOCKET, SO_ERROR, &err, &sl) != 0)
		err = errno;
	if (err == 0 && self_connected(d->fd))
		err = ECONNREFUSED;
	if (err != 0)
		dial_failed(s, d, -err);
	else
		dial_connected(s, d);
}

/* HELLO: the binder's answer, as it comes. */
static void
dial_ready(struct rmq_source *src, short revents, void *owner)
{
	struct rmq_socket *s = owner;
	struct rmq_dialer *d = rmq_container_of(src, struct rmq_dialer, src);
	size_t             need = RMQ_CTRL_HDR_SIZE, body = 0;
	ssize_t            r;
	int                kind = 0, rc;
	char               why[160] = "";

	RMQ_UNUSED(revents);
	for (;;) {
		if (d->have >= RMQ_CTRL_HDR_SIZE) {
			rc = rmq_ctrl_decode_hdr(d->buf, &kind, &body);
			if (rc != 0) {
				dial_failed(s, d, rc);
				return;
			}
			need = RMQ_CTRL_HDR_SIZE + body;
			if (d->have == need && d->auth.step != RMQ_AUTH_WANT)
				break;
			if (d->have == need) { /* the binder's proof */
				rc = rmq_auth_connecter(s, &d->auth, d->fd, kind,
				                        d->buf + RMQ_CTRL_HDR_SIZE,
				                        body, why, sizeof(why));
				if (rc == 0) /* its REJECT */
					break;
				if (rc == 1)
					rc = dial_hello(s, d);
				if (rc != 0) {
					rmq_log(RMQ_LOG_DEBUG, "connect %s: %s",
					        d->endpoint, why);
					dial_failed(s, d, rc);
					return;
				}
				d->have = 0;
				need    = RMQ_CTRL_HDR_SIZE;
				continue;
			}
		}
		r = recv(d->fd, d->buf + d->have, need - d->have, 0);
		if (r > 0) {
			d->have += (size_t) r;
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		dial_failed(s, d, r == 0 ? -RMQ_ECONNRESET : -errno);
		return;
	}
	rmq_source_remove(&s->reactor, &d->src);
	rc = rmq_ctrl_answer(s, d->p, d->fd, kind, d->buf, body,
	                     RMQ_LOG_DEBUG);
	if (rc != 0) {
		dial_failed(s, d, rc);
		return;
	}
	/* The channel is the peer's now. */
	rmq_log(d->was_up ? RMQ_LOG_INFO : RMQ_LOG_DEBUG,
	        "connect %s: connected", d->endpoint);
	if (d->was_up)
		s->stats.reconnects++;
	d->fd        = -1;
	d->state     = RMQ_DIAL_UP;
	dial_own(d, d->p);
	d->tries     = 0;
	d->ivl_ms    = s->reconnect_ivl;
	d->was_up    = true;
}

static void
dial_timer(struct rmq_timer *t, int64_t now, void *owner)
{
	struct rmq_socket *s = owner;
	struct rmq_dialer *d, *next;
	int64_t            when = INT64_MAX;

	for (d = s->ctrl->dialers; d != NULL; d = next) {
		next = d->next; /* a try may free d (no reconnecting) */
		if (d->state == RMQ_DIAL_WAIT && now >= d->due)
			dial_try(s, d);
		else if (d->state == RMQ_DIAL_CONNECTING)
			dial_check(s, d, now);
		else if (d->state == RMQ_DIAL_HELLO && now >= d->due)
			dial_failed(s, d, -RMQ_ETIMEDOUT);
	}
	for (d = s->ctrl->dialers; d != NULL; d = d->next) {
		if (d->state == RMQ_DIAL_CONNECTING)
			when = now + 1000000; /* look again in a millisecond */
		else if (d->state != RMQ_DIAL_UP && d->due < when)
			when = d->due;
	}
	t->when = when;
}

int
rmq_dial_add(struct rmq_socket *s, const char *endpoint,
             const struct rmq_addr *a, const union rmq_inaddr *sin,
             struct rmq_peer *p)
{
	struct rmq_dialer *d;

	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return -RMQ_ENOMEM;
	snprintf(d->endpoint, sizeof(d->endpoint), "%s", endpoint);
	d->a       = *a;
	if (sin != NULL)
		d->sin = *sin;
	d->fd      = -1;
	d->src.idx = -1;
	d->ivl_ms  = s->reconnect_ivl;
	d->next    = s->ctrl->dialers;
	s->ctrl->dialers = d;
	if (p != NULL) {
		d->state  = RMQ_DIAL_UP;
		d->was_up = true;
		dial_own(d, p);
		return 0;
	}
	dial_try(s, d);
	rmq_timer_set(&s->reactor, &s->ctrl->dial_timer, rmq_now_ns());
	return 0;
}

static void
dial_peer_gone(struct rmq_socket *s, struct rmq_peer *p)
{
	struct rmq_dialer *d = p->maker;

	dial_disown(p);
	if (d == NULL || d->p != p)
		return;
	d->p = NULL;
	if (dial_later(s, d))
		rmq_log(RMQ_LOG_DEBUG, "connect %s: peer gone, reconnecting",
		        d->endpoint);
}

static int
left(void *arg)
{
	const struct rmq_peer *p = arg;

	return p->state == RMQ_PEER_DEAD || p->chan.src.fd < 0 ||
	       p->chan.bye_acked;
}

/* Goodbye to p: up to the linger, until it has all we sent it. */
static void
dial_leave(struct rmq_socket *s, struct rmq_peer *p)
{
	struct rmq_waiter w;

	rmq_peer_hold(p);
	rmq_ctrl_bye(s, p, RMQ_BYE_NO_TOOK); /* its messages stay readable */
	rmq_waiter_init(&w, s->linger);
	if (rmq_wait_until(&s->reactor, &w, 0, left, p) != 0)
		rmq_log(RMQ_LOG_DEBUG, "disconnect %s: linger expired",
		        p->name);
	rmq_peer_fail(s, p, 0, "disconnected");
	rmq_peer_release(s, p);
}

int
rmq_dial_remove(struct rmq_socket *s, const char *endpoint)
{
	struct rmq_dialer *d;
	struct rmq_peer   *p;

	for (d = s->ctrl->dialers; d != NULL; d = d->next)
		if (strcmp(d->endpoint, endpoint) == 0)
			break;
	if (d == NULL)
		return -ENOENT;
	p = d->state == RMQ_DIAL_UP ? d->p : NULL;
	dial_abandon(s, d);
	dial_free(s, d);
	if (p != NULL) {
		dial_disown(p);
		dial_leave(s, p);
	}
	return 0;
}

bool
rmq_dial_pending(const struct rmq_socket *s)
{
	const struct rmq_dialer *d;

	for (d = s->ctrl->dialers; d != NULL; d = d->next)
		if (d->state != RMQ_DIAL_UP)
			return true;
	return false;
}

void
rmq_dial_close(struct rmq_socket *s)
{
	struct rmq_dialer *d;

	while ((d = s->ctrl->dialers) != NULL) {
		if (d->state == RMQ_DIAL_UP && d->p != NULL)
			dial_disown(d->p);
		dial_abandon(s, d);
		dial_free(s, d);
	}
	rmq_timer_remove(&s->reactor, &s->ctrl->dial_timer);
}
