/*
 * The out-of-band control channel (ctrl.h): listening, dialling, the
 * handshake, the goodbye, and watching each peer's channel for its BYE or
 * its death.  The sockets are sources of the socket's reactor; a timer
 * expires slow handshakes and peers that said goodbye.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rdma/fi_domain.h>

#include "conn/addr.h"
#include "conn/auth.h"
#include "conn/ctrl.h"
#include "conn/hello.h"
#include "conn/peer.h"
#include "ctx.h"
#include "path_ops.h"
#include "pattern_ops.h"
#include "socket.h"
#include "util.h"

/*
 * A control connection tells us at once when the peer process dies (EOF).
 * When its host vanishes (power, cable, partition) nothing arrives: TCP
 * keepalives probe an idle channel after 2 s (1 s below a keepalive_ms of
 * 4 s), every 1 s, and give up after timeouts.keepalive_ms / 1 s - 2 (or
 * 1) misses, 3 by default, so a lost host is noticed within keepalive_ms,
 * and an outage shorter than the misses is ridden out (the fabric's own
 * TCP connection retransmits meanwhile).
 */
void
rmq_ctrl_tune(const struct rmq_socket *s, int fd)
{
	int ka = s->ctx->cfg.keepalive_ms / 1000, one = 1, intvl = 1;
	int idle = ka >= 4 ? 2 : 1, cnt = ka - idle > 0 ? ka - idle : 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

static void
set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* A frame being read from a channel the reactor watches. */
struct frame_read {
	struct rmq_source src;
	uint8_t          *b;
	size_t            have, need, body;
	int               kind;
	int               err;  /* 0, or why it ended badly */
	bool              done;
};

static void
frame_ready(struct rmq_source *src, short revents, void *owner)
{
	struct frame_read *f = rmq_container_of(src, struct frame_read, src);
	ssize_t            r;
	int                rc;

	RMQ_UNUSED(revents);
	RMQ_UNUSED(owner);
	while (!f->done) {
		r = recv(src->fd, f->b + f->have, f->need - f->have, 0);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (r <= 0) {
			f->err  = r == 0 ? -RMQ_ECONNRESET : -errno;
			f->done = true;
			return;
		}
		f->have += (size_t) r;
		if (f->have == RMQ_CTRL_HDR_SIZE &&
		    f->need == RMQ_CTRL_HDR_SIZE) {
			rc = rmq_ctrl_decode_hdr(f->b, &f->kind, &f->body);
			if (rc != 0) {
				f->err  = rc;
				f->done = true;
				return;
			}
			f->need += f->body;
		}
		f->done = f->have == f->need;
	}
}

static int
frame_in(void *arg)
{
	struct frame_read *f = arg;

	if (!f->done)
		return 0;
	return f->err != 0 ? f->err : 1;
}

/*
 * Read one control frame from fd (non-blocking) into b, within
 * timeout_ms (-1: forever), while the socket's reactor runs: its other
 * peers and listeners are served meanwhile.
 */
static int
read_frame(struct rmq_socket *s, int fd, uint8_t *b, int timeout_ms,
           int *kind, size_t *body)
{
	struct frame_read f = {.b = b, .need = RMQ_CTRL_HDR_SIZE};
	struct rmq_waiter w;
	int               rc;

	rc = rmq_source_add(&s->reactor, &f.src, fd, frame_ready);
	if (rc != 0)
		return rc;
	frame_ready(&f.src, POLLIN, s); /* it may be there already */
	rmq_waiter_init(&w, timeout_ms);
	rc = rmq_wait_until(&s->reactor, &w, 0, frame_in, &f);
	rmq_source_remove(&s->reactor, &f.src);
	if (rc == -RMQ_EAGAIN)
		return -RMQ_ETIMEDOUT;
	*kind = f.kind;
	*body = f.body;
	return rc;
}

static void
send_reject(int fd, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
send_reject(int fd, int code, const char *fmt, ...)
{
	struct rmq_reject r = {.code = (uint32_t) code};
	uint8_t           b[RMQ_CTRL_HDR_SIZE + 4 + sizeof(r.reason)];
	va_list           ap;

	va_start(ap, fmt);
	vsnprintf(r.reason, sizeof(r.reason), fmt, ap);
	va_end(ap);
	(void) rmq_write_all(fd, b, rmq_ctrl_encode_reject(b, &r), 100);
}

/* ---- the handshake ---- */

static void chan_ready(struct rmq_source *src, short revents, void *owner);

/* The handshake is done: p watches its channel, and is LIVE.  So does the
 * context thread: a goodbye is answered while the application computes. */
static int
peer_start(struct rmq_socket *s, struct rmq_peer *p, int fd)
{
	set_nonblock(fd);
	if (rmq_source_add(&s->reactor, &p->chan.src, fd, chan_ready) != 0)
		return -RMQ_ENOMEM;
	rmq_source_watch(&s->reactor, &p->chan.src);
	rmq_peer_live(s, p);
	return 0;
}

/* How long a connect waits for the binder's next step: what is left of
 * its deadline, at least the handshake time (-1: forever). */
static int
answer_ms(const struct rmq_socket *s, int64_t deadline)
{
	int ms = s->connect_ms < 0
	             ? -1
	             : (int) ((deadline - rmq_now_ns()) / 1000000);

	return ms >= 0 && ms < s->handshake_ms ? s->handshake_ms : ms;
}

struct ready_wait {
	struct rmq_socket *s;
	struct rmq_peer   *p;
};

static int
peer_is_ready(void *arg)
{
	struct ready_wait *rw = arg;

	if (rw->p->state != RMQ_PEER_LIVE)
		return -RMQ_ECONNRESET;
	return rw->s->pat->peer_ready(rw->s->pstate, rw->s, rw->p, rw->p->pat);
}

/*
 * A LIVE peer of a connect: wait (to the connect's deadline, at least the
 * handshake time) until the pattern says it is ready, e.g. a publisher
 * has our subscriptions.
 */
static int
peer_wait_ready(struct rmq_socket *s, struct rmq_peer *p, int64_t deadline)
{
	struct ready_wait rw = {s, p};
	struct rmq_waiter w;
	int               ms, rc;

	if (s->pat->peer_ready == NULL)
		return 0;
	ms = answer_ms(s, deadline);
	rmq_peer_hold(p);
	rmq_waiter_init(&w, ms);
	rc = rmq_wait_until(&s->reactor, &w, 0, peer_is_ready, &rw);
	if (rc != 0) {
		rc = rc == -RMQ_EAGAIN ? -RMQ_ETIMEDOUT : rc;
		rmq_log(RMQ_LOG_INFO, "connect %s: the peer did not get "
		        "ready: %s", p->name, rmq_strerror(rc));
		rmq_peer_fail(s, p, 0, "not ready in time");
	}
	rmq_peer_release(s, p);
	return rc;
}

int
rmq_ctrl_answer(struct rmq_socket *s, struct rmq_peer *p, int fd, int kind,
                const uint8_t *b, size_t body, int level)
{
	struct rmq_hello  h;
	struct rmq_reject rj;
	char              reason[160] = "";
	int               rc;

	if (kind == RMQ_CK_REJECT) {
		rc = rmq_ctrl_decode_reject(&rj, b + RMQ_CTRL_HDR_SIZE, body);
		if (rc != 0)
			return rc;
		rmq_log(level, "%s refused us: %s", p->name, rj.reason);
		if (rj.code == RMQ_EAUTH)
			s->stats.auth_failures++;
		/* an errno, a libfabric code or one of ours */
		return (rj.code > 0 && rj.code < 4096) ||
		               (rj.code >= RMQ_ERRNO_BASE &&
		                rj.code < RMQ_ERR_MAX)
		           ? -(int) rj.code
		           : -RMQ_EPROTO;
	}
	rc = kind == RMQ_CK_HELLO ? 0 : -RMQ_EPROTO;
	if (rc == 0)
		rc = rmq_ctrl_decode_hello(&h, b + RMQ_CTRL_HDR_SIZE, body);
	if (rc == 0)
		rc = rmq_hello_accept(s, p, &h, reason, sizeof(reason));
	if (rc != 0) {
		rmq_log(level, "handshake with %s: %s%s%s", p->name,
		        rmq_strerror(rc), reason[0] != '\0' ? ": " : "",
		        reason);
		return rc;
	}
	return peer_start(s, p, fd);
}

/* A connect with auth.key_file: the challenge and the proofs before our
 * HELLO.  1: proven; 0: the binder's REJECT is in b; else why not. */
static int
auth_dial(struct rmq_socket *s, struct rmq_peer *p, int fd, uint8_t *b,
          int ms, int *kind, size_t *body)
{
	struct rmq_auth au;
	char            reason[160] = "";
	int             rc;

	rc = rmq_write_all(fd, b, rmq_auth_start(s, &au, b), s->handshake_ms);
	if (rc == 0)
		rc = read_frame(s, fd, b, ms, kind, body);
	if (rc == 0)
		rc = rmq_auth_connecter(s, &au, fd, *kind, b + RMQ_CTRL_HDR_SIZE,
		                        *body, reason, sizeof(reason));
	if (rc < 0)
		rmq_log(RMQ_LOG_INFO, "handshake with %s: %s%s%s", p->name,
		        rmq_strerror(rc), reason[0] != '\0' ? ": " : "",
		        reason);
	return rc;
}

int
rmq_ctrl_handshake(struct rmq_socket *s, const struct rmq_addr *a, int fd,
                   int64_t deadline, struct rmq_peer **pp)
{
	uint8_t          b[RMQ_CTRL_HDR_SIZE + RMQ_CTRL_BODY_MAX];
	struct rmq_hello h;
	struct rmq_peer *p;
	size_t           body;
	int              rc, kind, ms;

	p = rmq_peer_new(s);
	if (p == NULL) {
		close(fd);
		return -RMQ_ENOMEM;
	}
	rmq_addr_show(a, p->name, sizeof(p->name));
	/* The binding side answers when it next progresses. */
	ms = answer_ms(s, deadline);
	set_nonblock(fd);
	rc = rmq_auth_on(s) ? auth_dial(s, p, fd, b, ms, &kind, &body) : 1;
	if (rc == 1) { /* proven, or no authentication: our HELLO */
		rmq_hello_fill(s, fd, p, &h);
		rc = rmq_write_all(fd, b, rmq_ctrl_encode_hello(b, &h),
		                    s->handshake_ms);
		if (rc == 0)
			rc = read_frame(s, fd, b, ms, &kind, &body);
	}
	if (rc == 0)
		rc = rmq_ctrl_answer(s, p, fd, kind, b, body, RMQ_LOG_INFO);
	if (rc == 0) {
		rc = peer_wait_ready(s, p, deadline);
		if (rc == 0) {
			rmq_peer_hold(p);
			*pp = p;
		}
		return rc;
	}
	close(fd);
	rmq_peer_destroy(s, p); /* still NEW: never counted live */
	return rc;
}

/* ---- the binding side, driven by the reactor ---- */

static void
pending_drop(struct rmq_socket *s, struct rmq_pending *pd)
{
	struct rmq_pending **pp;

	for (pp = &s->ctrl->pendings; *pp != NULL; pp = &(*pp)->next)
		if (*pp == pd) {
			*pp = pd->next;
			s->ctrl->npendings--;
			break;
		}
	rmq_source_remove(&s->reactor, &pd->src);
	if (pd->src.fd >= 0)
		close(pd->src.fd);
	free(pd);
}

static void
pending_fail(struct rmq_socket *s, struct rmq_pending *pd, int code,
             const char *reason)
{
	rmq_log(code == RMQ_ETIMEDOUT ? RMQ_LOG_INFO : RMQ_LOG_WARN, /* scans */
	        "handshake from %s rejected: %s (%s)", pd->name, reason,
	        rmq_strerror(code));
	send_reject(pd->src.fd, code, "%s", reason);
	s->stats.handshake_errors++;
	pending_drop(s, pd);
}

static void
pending_hello(struct rmq_socket *s, struct rmq_pending *pd, size_t body)
{
	uint8_t          b[RMQ_CTRL_HDR_SIZE + RMQ_CTRL_BODY_MAX];
	struct rmq_hello h;
	struct rmq_peer *p;
	char             reason[160];
	int              rc, fd;

	rc = rmq_ctrl_decode_hello(&h, pd->buf + RMQ_CTRL_HDR_SIZE, body);
	if (rc != 0) {
		pending_fail(s, pd, -rc, "malformed HELLO");
		return;
	}
	if (s->pat->max_peers != 0 && s->peers->nlive >= s->pat->max_peers) {
		snprintf(reason, sizeof(reason),
		         "this %s socket already has its peer%s", s->pat->name,
		         s->pat->max_peers > 1 ? "s" : "");
		pending_fail(s, pd, RMQ_EPEERFULL, reason);
		return;
	}
	p = rmq_peer_new(s);
	if (p == NULL) {
		pending_fail(s, pd, RMQ_ENOMEM, "out of memory");
		return;
	}
	snprintf(p->name, sizeof(p->name), "%s", pd->name);
	rc = rmq_hello_accept(s, p, &h, reason, sizeof(reason));
	if (rc != 0) {
		rmq_peer_destroy(s, p); /* still NEW */
		pending_fail(s, pd, -rc, reason);
		return;
	}
	rmq_hello_fill(s, pd->src.fd, p, &h);
	rc = rmq_write_all(pd->src.fd, b, rmq_ctrl_encode_hello(b, &h), 1000);
	fd = pd->src.fd;
	if (rc == 0) {
		/* The channel is the peer's now. */
		rmq_source_remove(&s->reactor, &pd->src);
		pd->src.fd = -1;
		rc = peer_start(s, p, fd);
		if (rc != 0)
			close(fd);
	}
	if (rc != 0) {
		rmq_log(RMQ_LOG_WARN, "handshake with %s: %s", pd->name,
		        rmq_strerror(rc));
		rmq_peer_destroy(s, p); /* still NEW */
		s->stats.handshake_errors++;
		pending_drop(s, pd);
		return;
	}
	pending_drop(s, pd);
	rmq_log(RMQ_LOG_INFO, "peer %s connected", p->name);
}

static void
pending_read(struct rmq_socket *s, struct rmq_pending *pd)
{
	size_t  need = RMQ_CTRL_HDR_SIZE, body = 0;
	ssize_t r;
	int     kind = 0, rc;
	char    why[160];

	for (;;) {
		if (pd->have >= RMQ_CTRL_HDR_SIZE) {
			rc = rmq_ctrl_decode_hdr(pd->buf, &kind, &body);
			if (rc != 0) {
				pending_fail(s, pd, -rc,
				             rc == -RMQ_EVERSION
				                 ? "unsupported wire version"
				                 : "not a librmq handshake");
				return;
			}
			need = RMQ_CTRL_HDR_SIZE + body;
			if (pd->have == need) {
				rc = rmq_auth_binder(s, &pd->auth, pd->src.fd,
				                     kind, pd->buf + RMQ_CTRL_HDR_SIZE,
				                     body, why, sizeof(why));
				if (rc == 0)
					pending_hello(s, pd, body);
				else if (rc < 0)
					pending_fail(s, pd, -rc, why);
				if (rc <= 0)
					return;
				pd->have = 0; /* an AUTH step: read on */
				need     = RMQ_CTRL_HDR_SIZE;
				continue;
			}
		}
		r = recv(pd->src.fd, pd->buf + pd->have, need - pd->have, 0);
		if (r > 0) {
			pd->have += (size_t) r;
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		rmq_log(RMQ_LOG_INFO, "handshake from %s: connection closed",
		        pd->name);
		s->stats.handshake_errors++;
		pending_drop(s, pd);
		return;
	}
}

static void
pending_ready(struct rmq_source *src, short revents, void *owner)
{
	RMQ_UNUSED(revents);
	pending_read(owner, rmq_container_of(src, struct rmq_pending, src));
}

static void
pending_drop_oldest(struct rmq_socket *s)
{
	struct rmq_pending *pd = s->ctrl->pendings;

	if (pd == NULL)
		return;
	while (pd->next != NULL)
		pd = pd->next;
	rmq_log(RMQ_LOG_DEBUG, "handshake from %s dropped: %d pending",
	        pd->name, s->ctrl->npendings);
	s->stats.handshake_errors++;
	pending_drop(s, pd);
}

static void
accept_ready(struct rmq_source *src, short revents, void *owner)
{
	struct rmq_socket   *s = owner;
	struct rmq_listener *l = rmq_container_of(src, struct rmq_listener, src);
	struct rmq_pending  *pd;
	union rmq_inaddr     sin;
	socklen_t            sl;
	int                  fd;

	RMQ_UNUSED(revents);
	for (;;) {
		sl = sizeof(sin);
		fd = accept4(l->src.fd, &sin.sa, &sl,
		             SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		/* Bounded: a flood of silent connections pushes out the
		 * oldest, and the newest (a real client, likely) is heard. */
		if (s->ctrl->npendings >= s->ctx->cfg.handshakes)
			pending_drop_oldest(s);
		pd = calloc(1, sizeof(*pd));
		if (pd == NULL ||
		    rmq_source_add(&s->reactor, &pd->src, fd, pending_ready) != 0) {
			free(pd);
			close(fd);
			return;
		}
		/* Its HELLO is answered even while the application computes
		 * (the context thread, thread.c). */
		rmq_source_watch(&s->reactor, &pd->src);
		if (sin.sa.sa_family != AF_UNIX)
			rmq_ctrl_tune(s, fd);
		pd->deadline = rmq_deadline(s->handshake_ms);
		if (sin.sa.sa_family != AF_UNIX)
			rmq_inaddr_show(&sin, pd->name, sizeof(pd->name));
		else
			snprintf(pd->name, sizeof(pd->name), "peer on this host");
		pd->next          = s->ctrl->pendings;
		s->ctrl->pendings  = pd;
		s->ctrl->npendings++;
		pending_read(s, pd);
	}
}

int
rmq_ctrl_listen(struct rmq_socket *s, const struct rmq_addr *a,
                const union rmq_inaddr *sin, const char *given)
{
	struct rmq_listener *l;
	union rmq_inaddr     bound;
	struct sockaddr_un   un;
	socklen_t            sl;
	char                 where[160];
	int                  fd, rc, one = 1;

	fd = socket(a->unix_name ? AF_UNIX : sin->sa.sa_family,
	            SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (a->unix_name) {
		sl = rmq_addr_unix(&un, a->name);
		rc = bind(fd, (struct sockaddr *) &un, sl);
	} else {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* [::] takes IPv6 only: its fabric endpoint is IPv6. */
		if (sin->sa.sa_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
			           sizeof(one));
		rc = bind(fd, &sin->sa, rmq_inaddr_len(sin));
	}
	if (rc == 0)
		rc = listen(fd, 128);
	if (rc != 0) {
		rc = -errno;
		rmq_addr_show(a, where, sizeof(where));
		rmq_log(RMQ_LOG_INFO, "bind %s: %s", where, strerror(-rc));
		close(fd);
		return rc;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL ||
	    rmq_source_add(&s->reactor, &l->src, fd, accept_ready) != 0) {
		free(l);
		close(fd);
		return -RMQ_ENOMEM;
	}
	rmq_source_watch(&s->reactor, &l->src);
	if (a->unix_name) {
		snprintf(l->endpoint, sizeof(l->endpoint), "%s://%s",
		         a->prov->name, a->name);
	} else {
		sl = sizeof(bound);
		getsockname(fd, &bound.sa, &sl);
		snprintf(l->endpoint, sizeof(l->endpoint), "%s://%s%s%s:%u",
		         a->prov->name, a->v6 ? "[" : "", a->host,
		         a->v6 ? "]" : "",
		         ntohs(bound.sa.sa_family == AF_INET6
		                   ? bound.in6.sin6_port
		                   : bound.in.sin_port));
	}
	snprintf(l->given, sizeof(l->given), "%s", given);
	snprintf(s->last_endpoint, sizeof(s->last_endpoint), "%s",
	         l->endpoint);
	l->next            = s->ctrl->listeners;
	s->ctrl->listeners  = l;
	return 0;
}

int
rmq_ctrl_unlisten(struct rmq_socket *s, const char *endpoint)
{
	struct rmq_listener **lp, *l;

	for (lp = &s->ctrl->listeners; (l = *lp) != NULL; lp = &l->next)
		if (strcmp(l->endpoint, endpoint) == 0 ||
		    strcmp(l->given, endpoint) == 0)
			break;
	if (l == NULL)
		return -ENOENT;
	*lp = l->next;
	rmq_source_remove(&s->reactor, &l->src);
	close(l->src.fd);
	free(l);
	return 0;
}

bool
rmq_ctrl_listening(const struct rmq_socket *s)
{
	return s->ctrl->listeners != NULL;
}

/* ---- connected peers ---- */

/* A rendezvous of ours to p still under way: its FIN or completion can
 * trail p's goodbye, and it would be taken for lost (and a PUSH would
 * send it again). */
static bool
transfers_out(struct rmq_socket *s, const struct rmq_peer *p)
{
	int i;

	for (i = 0; i < RMQ_PATHS; i++)
		if (s->path_ops[i]->peer_busy != NULL &&
		    s->path_ops[i]->peer_busy(s, p))
			return true;
	return false;
}

/* A CLOSING peer whose messages are all in: acknowledge and let it go. */
static void
closing_check(struct rmq_socket *s, struct rmq_peer *p, int64_t now)
{
	uint8_t b[RMQ_CTRL_HDR_SIZE];

	if (p->state != RMQ_PEER_CLOSING)
		return;
	if (p->recvd >= p->chan.bye_count && !transfers_out(s, p) &&
	    (s->pat->peer_quiet == NULL ||
	     s->pat->peer_quiet(s->pstate, s, p, p->pat))) {
		if (p->chan.src.fd >= 0)
			(void) rmq_write_all(p->chan.src.fd, b,
			                 rmq_ctrl_encode_bye_ack(b), 100);
		rmq_peer_fail(s, p, 0, "left");
	} else if (p->chan.closing_deadline == 0) {
		p->chan.closing_deadline =
		    now + (int64_t) s->handshake_ms * 1000000;
	} else if (now >= p->chan.closing_deadline) {
		rmq_peer_fail(s, p, -RMQ_ECONNRESET,
		              "left before its messages arrived");
	}
}

/* p's BYE says it took `took` of ours: the rest, unread or in flight when
 * it closed, are lost (at info for a pattern that drops by design). */
static void
bye_untaken(struct rmq_socket *s, struct rmq_peer *p, uint64_t took)
{
	if (took == RMQ_BYE_NO_TOOK || took >= p->sent)
		return;
	s->stats.dropped += p->sent - took;
	rmq_log(s->pat->lossy ? RMQ_LOG_INFO : RMQ_LOG_WARN,
	        "peer %s closed with %llu of our messages not taken", p->name,
	        (unsigned long long) (p->sent - took));
}

/* One complete control frame from a connected peer. */
static void
peer_frame(struct rmq_socket *s, struct rmq_peer *p, int kind,
           const uint8_t *body, size_t len)
{
	uint64_t sent, took;

	if (kind == RMQ_CK_BYE_ACK && len == 0) {
		p->chan.bye_acked = true;
		return;
	}
	if (kind == RMQ_CK_PAT && s->pat->ctrl_rx != NULL) {
		if (s->pat->ctrl_rx(s->pstate, s, p, p->pat, body, len) == 0)
			return;
		s->stats.proto_errors++;
		rmq_peer_fail(s, p, -RMQ_EPROTO, "bad pattern frame");
		return;
	}
	if (kind == RMQ_CK_BYE &&
	    rmq_ctrl_decode_bye(&sent, &took, body, len) == 0) {
		p->chan.bye_count = sent;
		rmq_peer_closing(s, p);
		rmq_log(RMQ_LOG_INFO, "peer %s said goodbye", p->name);
		bye_untaken(s, p, took);
		rmq_reactor_drain(&s->reactor);
		closing_check(s, p, rmq_now_ns());
		return;
	}
	s->stats.proto_errors++;
	rmq_peer_fail(s, p, -RMQ_EPROTO, "garbage on control channel");
}

/* A peer's control channel is readable: BYE, BYE_ACK, EOF or garbage. */
static void
chan_read(struct rmq_socket *s, struct rmq_peer *p)
{
	struct rmq_chan *c = &p->chan;
	size_t           body, need;
	ssize_t          r;
	int              kind, rc;

	for (;;) {
		r = recv(c->src.fd, c->buf + c->have, sizeof(c->buf) - c->have,
		         0);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (r <= 0)
			break;
		c->have += (size_t) r;
		while (c->have >= RMQ_CTRL_HDR_SIZE) {
			rc   = rmq_ctrl_decode_hdr(c->buf, &kind, &body);
			need = RMQ_CTRL_HDR_SIZE + body;
			if (rc != 0 || need > sizeof(c->buf)) {
				s->stats.proto_errors++;
				rmq_peer_fail(s, p, -RMQ_EPROTO,
				              "garbage on control channel");
				return;
			}
			if (c->have < need)
				break;
			peer_frame(s, p, kind, c->buf + RMQ_CTRL_HDR_SIZE,
			           body);
			if (p->state == RMQ_PEER_DEAD)
				return;
			memmove(c->buf, c->buf + need, c->have - need);
			c->have -= need;
		}
	}
	/* EOF or error: take in what the fabric still holds first. */
	rmq_reactor_drain(&s->reactor);
	if (p->state == RMQ_PEER_DEAD)
		return;
	if ((p->state == RMQ_PEER_CLOSING && p->recvd >= c->bye_count) ||
	    c->bye_acked) {
		rmq_peer_fail(s, p, 0, "left");
		return;
	}
	rmq_peer_fail(s, p, -RMQ_ECONNRESET,
	              p->state == RMQ_PEER_CLOSING
	                  ? "left before its messages arrived"
	                  : "control channel closed (peer died?)");
}

/* A goodbye may end the peer: keep it allocated while we look at it. */
static void
chan_ready(struct rmq_source *src, short revents, void *owner)
{
	struct rmq_socket *s = owner;
	struct rmq_peer   *p = rmq_container_of(src, struct rmq_peer, chan.src);

	RMQ_UNUSED(revents);
	rmq_peer_hold(p);
	chan_read(s, p);
	rmq_peer_release(s, p);
}

/* Every poll round: slow handshakes fail, closing peers finish. */
static void
ctrl_timer(struct rmq_timer *t, int64_t now, void *owner)
{
	struct rmq_socket  *s = owner;
	struct rmq_pending *pd, *pdn;
	struct rmq_peer    *p;
	int64_t             when = INT64_MAX;
	int                 i;

	for (pd = s->ctrl->pendings; pd != NULL; pd = pdn) {
		pdn = pd->next;
		if (now >= pd->deadline)
			pending_fail(s, pd, RMQ_ETIMEDOUT,
			             "no complete HELLO in time");
		else if (pd->deadline < when)
			when = pd->deadline;
	}
	/* Only a peer that is not LIVE can be closing. */
	for (i = 0; s->peers->n > s->peers->nlive && i < s->peers->cap; i++) {
		p = rmq_peer_at(s, i);
		if (p == NULL || p->state != RMQ_PEER_CLOSING)
			continue;
		rmq_peer_hold(p);
		closing_check(s, p, now);
		if (p->state == RMQ_PEER_CLOSING &&
		    p->chan.closing_deadline < when)
			when = p->chan.closing_deadline;
		if (p->state == RMQ_PEER_CLOSING && transfers_out(s, p) &&
		    now + 1000000 < when)
			when = now + 1000000; /* look again when it ends */
		rmq_peer_release(s, p);
	}
	t->when = when;
}

void
rmq_ctrl_init(struct rmq_socket *s)
{
	rmq_timer_add(&s->reactor, &s->ctrl->timer, ctrl_timer);
}

/* Tell p how many messages we sent it (and, if it reads it, how many of
 * its we took); it acknowledges when all of ours are in. */
void
rmq_ctrl_bye(struct rmq_socket *s, struct rmq_peer *p, uint64_t took)
{
	uint8_t b[RMQ_CTRL_HDR_SIZE + 16];
	size_t  n;

	RMQ_UNUSED(s);
	if (p->chan.src.fd < 0 || p->chan.bye_sent)
		return;
	p->chan.bye_sent = true;
	n = rmq_ctrl_encode_bye(b, p->sent,
	                        p->chan.took_ok ? took : RMQ_BYE_NO_TOOK);
	if (rmq_write_all(p->chan.src.fd, b, n, 100) != 0)
		p->chan.bye_acked = true; /* nobody to wait for */
}

/* At close: what is still queued goes unread. */
void
rmq_ctrl_bye_all(struct rmq_socket *s)
{
	struct rmq_peer *p;
	int              i;

	for (i = 0; i < s->peers->cap; i++)
		if ((p = rmq_peer_at(s, i)) != NULL &&
		    p->state != RMQ_PEER_DEAD)
			rmq_ctrl_bye(s, p, p->recvd - p->q.len);
}

int
rmq_ctrl_byes_unacked(struct rmq_socket *s, bool owed)
{
	struct rmq_peer *p;
	int              i, n = 0;

	for (i = 0; i < s->peers->cap; i++) {
		p = rmq_peer_at(s, i);
		n += p != NULL && p->chan.src.fd >= 0 && p->chan.bye_sent &&
		     !p->chan.bye_acked && p->state != RMQ_PEER_DEAD &&
		     (!owed || p->sent > 0);
	}
	return n;
}

int
rmq_ctrl_send_pat(struct rmq_socket *s, struct rmq_peer *p,
                  const uint8_t *body, size_t len)
{
	uint8_t b[RMQ_CTRL_HDR_SIZE + RMQ_CTRL_BODY_MAX];
	int     rc;

	if (len > RMQ_CTRL_BODY_MAX)
		return -RMQ_EINVAL;
	if (p->chan.src.fd < 0)
		return -RMQ_ECONNRESET;
	rc = rmq_write_all(p->chan.src.fd, b, rmq_ctrl_encode_pat(b, body, len),
	               1000);
	if (rc != 0)
		rmq_peer_fail(s, p, -RMQ_ECONNRESET,
		              "cannot write its control channel");
	return rc;
}

void
rmq_ctrl_close(struct rmq_socket *s)
{
	struct rmq_listener *l;

	while ((l = s->ctrl->listeners) != NULL) {
		s->ctrl->listeners = l->next;
		rmq_source_remove(&s->reactor, &l->src);
		close(l->src.fd);
		free(l);
	}
	while (s->ctrl->pendings != NULL)
		pending_drop(s, s->ctrl->pendings);
	rmq_timer_remove(&s->reactor, &s->ctrl->timer);
}
