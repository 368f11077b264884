/*
 * The out-of-band control channel.  Every connection has a stream socket
 * (TCP at HOST:PORT, or an abstract Unix socket for shm://NAME) beside its
 * fabric path.  It carries the handshake (magic, wire version, pattern,
 * provider, fabric address, credits, limits), the goodbye, and tells at once
 * when a peer dies (EOF).  Data never goes over it.
 *
 * The binding side accepts without blocking: an accepted connection waits
 * in s->pendings until its HELLO is complete or handshake_ms passes, so a
 * slow or garbage client cannot stall the socket.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "pattern.h"
#include "rmq_int.h"

/* ---- endpoint strings ---- */

static bool
split_host_port(const char *rest, char *host, size_t hl, char *port,
                size_t pl)
{
	const char *colon = strrchr(rest, ':');
	size_t      n;
	char       *end;
	long        v;

	if (colon == NULL || colon == rest || colon[1] == '\0')
		return false;
	n = (size_t) (colon - rest);
	if (n >= hl || strlen(colon + 1) >= pl)
		return false;
	v = strtol(colon + 1, &end, 10);
	if (*end != '\0' || v < 0 || v > 65535)
		return false;
	memcpy(host, rest, n);
	host[n] = '\0';
	snprintf(port, pl, "%ld", v);
	if (strcmp(host, "*") == 0)
		snprintf(host, hl, "0.0.0.0");
	return true;
}

int
rmq_addr_parse(rmq_ctx *ctx, const char *endpoint, struct rmq_addr *a)
{
	const char *sep;
	char        scheme[16], why[300] = "";
	size_t      n;

	memset(a, 0, sizeof(*a));
	if (endpoint == NULL)
		return -RMQ_EINVAL;
	sep = strstr(endpoint, "://");
	if (sep == NULL || (n = (size_t) (sep - endpoint)) >= sizeof(scheme)) {
		rmq_log(RMQ_LOG_ERROR, "'%s': expected scheme://address",
		        endpoint);
		return -RMQ_EADDR;
	}
	memcpy(scheme, endpoint, n);
	scheme[n] = '\0';
	if (strcmp(scheme, "fabric") == 0) {
		if (strcmp(ctx->cfg.provider, "auto") == 0)
			a->prov = rmq_prov_auto(&ctx->cfg, why, sizeof(why));
		else
			a->prov = rmq_prov_by_name(ctx->cfg.provider);
		if (a->prov == NULL) {
			rmq_log(RMQ_LOG_ERROR, "'%s': %s", endpoint,
			        why[0] ? why : "no provider available");
			return -RMQ_ENODEV;
		}
	} else {
		a->prov = rmq_prov_by_name(scheme);
		if (a->prov == NULL) {
			rmq_log(RMQ_LOG_ERROR,
			        "'%s': unknown transport '%s' (expected shm, "
			        "tcp, sockets, verbs, efa or fabric)",
			        endpoint, scheme);
			return -RMQ_EADDR;
		}
	}
	if (split_host_port(sep + 3, a->host, sizeof(a->host), a->port,
	                    sizeof(a->port)))
		return 0;
	/* shm://NAME: a name, the control channel on a Unix socket. */
	if ((a->prov->flags & RMQ_PROV_LOCAL_ONLY) && sep[3] != '\0' &&
	    strlen(sep + 3) < sizeof(a->name) &&
	    strpbrk(sep + 3, ":/") == NULL) {
		a->unix_name = true;
		snprintf(a->name, sizeof(a->name), "%s", sep + 3);
		return 0;
	}
	rmq_log(RMQ_LOG_ERROR, "'%s': expected %s://HOST:PORT%s", endpoint,
	        scheme,
	        (a->prov->flags & RMQ_PROV_LOCAL_ONLY) ? " or shm://NAME" : "");
	return -RMQ_EADDR;
}

static socklen_t
unix_addr(struct sockaddr_un *un, const char *name)
{
	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	/* Abstract namespace: no file to clean up, gone with the process. */
	snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1, "rmq/%s", name);
	return (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 +
	                    strlen(un->sun_path + 1));
}

static int
resolve(const struct rmq_addr *a, bool passive, struct sockaddr_in *sin)
{
	struct addrinfo hints = {0}, *res = NULL;
	int             rc;

	hints.ai_family   = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags    = passive ? AI_PASSIVE : 0;
	rc = getaddrinfo(a->host, a->port, &hints, &res);
	if (rc != 0 || res == NULL) {
		rmq_log(RMQ_LOG_ERROR, "cannot resolve %s:%s: %s", a->host,
		        a->port, gai_strerror(rc));
		return -RMQ_EADDR;
	}
	memcpy(sin, res->ai_addr, sizeof(*sin));
	freeaddrinfo(res);
	return 0;
}

/*
 * A control connection tells us at once when the peer process dies (EOF).
 * When its host vanishes (power, cable, partition) nothing arrives: TCP
 * keepalives probe an idle channel after 2 s, every 1 s, and give up after
 * 3 misses, so a lost host is noticed in about 5 s.
 */
static void
tcp_tune(int fd)
{
	int one = 1, idle = 2, intvl = 1, cnt = 3;

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

/*
 * The node to open the fabric endpoint on: an IPv4 address or NULL.  With
 * an interface in the config (tcp.interface ...), a bind to * and every
 * connect use that interface's address; a bind to an address that is not
 * the interface's is an error.
 */
static int
ep_node(struct rmq_socket *s, const struct rmq_prov *prov,
        const struct sockaddr_in *sin, bool bind, char *buf, size_t len,
        const char **nodep)
{
	struct rmq_knobs k;
	struct in_addr   a;
	char             where[300], have[256], asked[INET_ADDRSTRLEN];

	*nodep = NULL;
	if (!(prov->flags & RMQ_PROV_ADDR_SOCKADDR))
		return 0;
	rmq_prov_knobs(&s->ctx->cfg, prov, &k);
	a = sin->sin_addr;
	if (k.iface != NULL) {
		rmq_cfg_where(&s->ctx->cfg, k.iface_key, where, sizeof(where));
		if (bind && sin->sin_addr.s_addr != htonl(INADDR_ANY) &&
		    !rmq_iface_has(k.iface, sin->sin_addr)) {
			inet_ntop(AF_INET, &sin->sin_addr, asked, sizeof(asked));
			rmq_iface_ipv4(k.iface, &a, have, sizeof(have));
			rmq_log(RMQ_LOG_ERROR,
			        "%s: bind to %s: not an address of '%s' (its "
			        "address: %s); bind to * or to it",
			        where, asked, k.iface, have[0] ? have : "none");
			return -RMQ_EADDR;
		}
		if (!bind || sin->sin_addr.s_addr == htonl(INADDR_ANY)) {
			if (rmq_iface_ipv4(k.iface, &a, have, sizeof(have)) != 0) {
				rmq_log(RMQ_LOG_ERROR,
				        "%s: '%s' has no IPv4 address", where,
				        k.iface);
				return -RMQ_EADDR;
			}
		}
	}
	*nodep = inet_ntop(AF_INET, &a, buf, (socklen_t) len);
	return 0;
}

int
rmq_ctrl_listen(struct rmq_socket *s, const struct rmq_addr *a)
{
	struct rmq_listener *l;
	struct sockaddr_in   sin;
	struct sockaddr_un   un;
	socklen_t            sl;
	char                 node[64];
	const char          *nodep = NULL;
	int                  fd = -1, rc, one = 1;

	if (!a->unix_name) {
		rc = resolve(a, true, &sin);
		if (rc != 0)
			return rc;
	}
	if (!a->unix_name) {
		rc = ep_node(s, a->prov, &sin, true, node, sizeof(node), &nodep);
		if (rc != 0)
			return rc;
	}
	rc = rmq_ep_open(s, a->prov, nodep);
	if (rc != 0)
		return rc;
	fd = socket(a->unix_name ? AF_UNIX : AF_INET,
	            SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (a->unix_name) {
		sl = unix_addr(&un, a->name);
		rc = bind(fd, (struct sockaddr *) &un, sl);
	} else {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		rc = bind(fd, (struct sockaddr *) &sin, sizeof(sin));
	}
	if (rc == 0)
		rc = listen(fd, 128);
	if (rc != 0) {
		rc = -errno;
		rmq_log(RMQ_LOG_ERROR, "bind %s%s%s: %s",
		        a->unix_name ? a->name : a->host,
		        a->unix_name ? "" : ":", a->unix_name ? "" : a->port,
		        strerror(-rc));
		close(fd);
		return rc;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL) {
		close(fd);
		return -RMQ_ENOMEM;
	}
	l->fd = fd;
	if (a->unix_name) {
		snprintf(l->endpoint, sizeof(l->endpoint), "%s://%s",
		         a->prov->name, a->name);
	} else {
		sl = sizeof(sin);
		getsockname(fd, (struct sockaddr *) &sin, &sl);
		snprintf(l->endpoint, sizeof(l->endpoint), "%s://%s:%u",
		         a->prov->name, a->host, ntohs(sin.sin_port));
	}
	snprintf(s->last_endpoint, sizeof(s->last_endpoint), "%s",
	         l->endpoint);
	l->next      = s->listeners;
	s->listeners = l;
	return 0;
}

/* ---- handshake ---- */

/*
 * Our fabric address for this connection.  A sockaddr endpoint bound to
 * INADDR_ANY is told to the peer with the address its control connection
 * reached us on, which routes back to us.
 */
static void
hello_fill(struct rmq_socket *s, int fd, struct rmq_peer *p,
           struct rmq_hello *h)
{
	struct sockaddr_in *fin, loc;
	socklen_t           sl = sizeof(loc);

	memset(h, 0, sizeof(*h));
	h->pattern = s->ops->wire_id;
	snprintf(h->prov, sizeof(h->prov), "%s",
	         s->info->fabric_attr->prov_name);
	h->conn     = p->id;
	h->rcvhwm   = (uint32_t) s->rcvhwm;
	h->maxmsg   = s->maxmsg < 0 ? UINT64_MAX : (uint64_t) s->maxmsg;
	h->eager_max = (uint32_t) (s->min_multi - RMQ_HDR_SIZE);
	h->addr_len = (uint16_t) s->fabaddr_len;
	memcpy(h->addr, s->fabaddr, s->fabaddr_len);
	if (p->ring != NULL) {
		h->features      |= RMQ_FEAT_RING;
		h->ring_addr      = s->dom->caps.mr_virt_addr
		                        ? (uint64_t) (uintptr_t) p->ring
		                        : 0;
		h->ring_key       = fi_mr_key(p->ring_mr);
		h->ring_slots     = p->ring_slots;
		h->ring_slot_size = (uint32_t) p->ring_slot;
	}
	fin = (struct sockaddr_in *) (void *) h->addr;
	if ((s->prov->flags & RMQ_PROV_ADDR_SOCKADDR) &&
	    s->fabaddr_len >= sizeof(*fin) && fin->sin_family == AF_INET &&
	    fin->sin_addr.s_addr == htonl(INADDR_ANY) &&
	    getsockname(fd, (struct sockaddr *) &loc, &sl) == 0 &&
	    loc.sin_family == AF_INET)
		fin->sin_addr = loc.sin_addr;
}

static int
write_all(int fd, const uint8_t *b, size_t n, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};
	ssize_t       w;

	while (n > 0) {
		w = send(fd, b, n, MSG_NOSIGNAL);
		if (w > 0) {
			b += w;
			n -= (size_t) w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (poll(&pfd, 1, timeout_ms) <= 0)
			return -RMQ_ETIMEDOUT;
	}
	return 0;
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
	(void) write_all(fd, b, rmq_ctrl_encode_reject(b, &r), 100);
}

/* Validate a peer's HELLO; on success fill the peer.  reason on error. */
static int
hello_accept(struct rmq_socket *s, struct rmq_peer *p,
             const struct rmq_hello *h, char *reason, size_t rl)
{
	const char *ours = s->info->fabric_attr->prov_name;
	int         rc;

	if (strcmp(h->prov, ours) != 0) {
		snprintf(reason, rl, "peer uses provider '%s', we use '%s'",
		         h->prov, ours);
		return -RMQ_EPROVIDER;
	}
	if (!rmq_pattern_compatible(s->ops->wire_id, h->pattern)) {
		snprintf(reason, rl,
		         "a %s socket cannot talk to a peer of type 0x%x "
		         "(needs %s)",
		         s->ops->name, h->pattern, s->ops->peer_name);
		return -RMQ_EPATTERN;
	}
	if (s->info->addr_format == FI_SOCKADDR_IN &&
	    (h->addr_len != sizeof(struct sockaddr_in) ||
	     ((const struct sockaddr_in *) (const void *) h->addr)
	             ->sin_family != AF_INET)) {
		snprintf(reason, rl, "bad fabric address (%u bytes)",
		         h->addr_len);
		return -RMQ_EPROTO;
	}
	if (s->info->addr_format == FI_ADDR_STR &&
	    memchr(h->addr, '\0', h->addr_len) == NULL) {
		snprintf(reason, rl, "fabric address is not a string");
		return -RMQ_EPROTO;
	}
	rc = fi_av_insert(s->av, h->addr, 1, &p->fiaddr, 0, NULL);
	if (rc != 1) {
		snprintf(reason, rl, "fi_av_insert: %s",
		         fi_strerror(rc < 0 ? -rc : FI_EINVAL));
		return -RMQ_EPROTO;
	}
	p->rid     = h->conn;
	p->rcvhwm  = h->rcvhwm;
	p->credits = h->rcvhwm;
	p->maxmsg  = h->maxmsg;
	p->eager_max = h->eager_max;
	if (h->features & RMQ_FEAT_RING) {
		p->rring_addr  = h->ring_addr;
		p->rring_key   = h->ring_key;
		p->rring_slots = h->ring_slots;
		p->rring_slot  = h->ring_slot_size;
		p->rring_free  = h->ring_slots;
	}
	p->state   = RMQ_PEER_LIVE;
	s->nlive++;
	s->stats.peers_connected++;
	s->lost_peer = false;
	return 0;
}

static int
read_frame(int fd, uint8_t *b, int timeout_ms, int *kind, size_t *body)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	int64_t       dl  = rmq_deadline(timeout_ms);
	size_t        have = 0, need = RMQ_CTRL_HDR_SIZE;
	ssize_t       r;
	int           rc, ms;

	while (have < need) {
		ms = (int) ((dl - rmq_now_ns()) / 1000000);
		if (timeout_ms >= 0 && ms <= 0)
			return -RMQ_ETIMEDOUT;
		if (poll(&pfd, 1, timeout_ms < 0 ? -1 : ms) <= 0)
			continue;
		r = recv(fd, b + have, need - have, 0);
		if (r == 0)
			return -RMQ_ECONNRESET;
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		have += (size_t) r;
		if (have == RMQ_CTRL_HDR_SIZE && need == RMQ_CTRL_HDR_SIZE) {
			rc = rmq_ctrl_decode_hdr(b, kind, body);
			if (rc != 0)
				return rc;
			need += *body;
		}
	}
	return 0;
}

static int
connect_retry(const struct rmq_addr *a, int64_t deadline, int *fdp,
              struct sockaddr_in *sin)
{
	struct sockaddr_un un;
	socklen_t          sl;
	int                fd, rc, backoff_ms = 10;

	if (!a->unix_name && (rc = resolve(a, false, sin)) != 0)
		return rc;
	for (;;) {
		fd = socket(a->unix_name ? AF_UNIX : AF_INET,
		            SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (a->unix_name) {
			sl = unix_addr(&un, a->name);
			rc = connect(fd, (struct sockaddr *) &un, sl);
		} else {
			rc = connect(fd, (struct sockaddr *) sin, sizeof(*sin));
		}
		if (rc == 0)
			break;
		rc = -errno;
		close(fd);
		if (rc != -ECONNREFUSED && rc != -ENOENT && rc != -EAGAIN)
			return rc;
		if (rmq_now_ns() >= deadline)
			return -RMQ_ETIMEDOUT;
		usleep((useconds_t) backoff_ms * 1000);
		if (backoff_ms < 100)
			backoff_ms *= 2;
	}
	if (!a->unix_name) {
		tcp_tune(fd);
		sl = sizeof(*sin);
		getsockname(fd, (struct sockaddr *) sin, &sl); /* local side */
	}
	*fdp = fd;
	return 0;
}

int
rmq_ctrl_connect(struct rmq_socket *s, const struct rmq_addr *a)
{
	uint8_t            b[RMQ_CTRL_HDR_SIZE + RMQ_CTRL_BODY_MAX];
	struct rmq_hello   h;
	struct rmq_reject  rj;
	struct rmq_peer   *p = NULL;
	struct sockaddr_in loc;
	int64_t            dl = rmq_deadline(s->connect_ms);
	char               node[64], reason[160] = "";
	const char        *nodep = NULL;
	size_t             body;
	int                fd = -1, rc, kind, ms;

	if (s->ops->max_peers != 0 && s->nlive >= s->ops->max_peers)
		return -RMQ_EPEERFULL;
	rc = connect_retry(a, dl, &fd, &loc);
	if (rc != 0) {
		rmq_log(RMQ_LOG_ERROR, "connect %s%s%s: %s",
		        a->unix_name ? a->name : a->host,
		        a->unix_name ? "" : ":", a->unix_name ? "" : a->port,
		        rmq_strerror(rc));
		return rc;
	}
	if (!a->unix_name) {
		rc = ep_node(s, a->prov, &loc, false, node, sizeof(node),
		             &nodep);
		if (rc != 0)
			goto out;
	}
	rc = rmq_ep_open(s, a->prov, nodep);
	if (rc != 0)
		goto out;
	p = rmq_peer_new(s);
	if (p == NULL) {
		rc = -RMQ_ENOMEM;
		goto out;
	}
	snprintf(p->name, sizeof(p->name), "%s:%s",
	         a->unix_name ? a->name : a->host, a->unix_name ? "" : a->port);
	if (rmq_ring_rx_init(s, p) != 0)
		rmq_log(RMQ_LOG_WARN, "%s: no ring for this peer", p->name);
	hello_fill(s, fd, p, &h);
	rc = write_all(fd, b, rmq_ctrl_encode_hello(b, &h), s->handshake_ms);
	if (rc != 0)
		goto out;
	/* The binding side answers when it next progresses. */
	ms = s->connect_ms < 0 ? -1
	                       : (int) ((dl - rmq_now_ns()) / 1000000);
	if (ms >= 0 && ms < s->handshake_ms)
		ms = s->handshake_ms;
	rc = read_frame(fd, b, ms, &kind, &body);
	if (rc == 0 && kind == RMQ_CK_REJECT) {
		rc = rmq_ctrl_decode_reject(&rj, b + RMQ_CTRL_HDR_SIZE, body);
		if (rc == 0) {
			rmq_log(RMQ_LOG_ERROR, "%s refused us: %s", p->name,
			        rj.reason);
			rc = rj.code > 0 && rj.code < RMQ_ERR_MAX
			         ? -(int) rj.code
			         : -RMQ_EPROTO;
		}
		goto out;
	}
	if (rc == 0 && kind != RMQ_CK_HELLO)
		rc = -RMQ_EPROTO;
	if (rc == 0)
		rc = rmq_ctrl_decode_hello(&h, b + RMQ_CTRL_HDR_SIZE, body);
	if (rc == 0)
		rc = hello_accept(s, p, &h, reason, sizeof(reason));
	if (rc != 0) {
		rmq_log(RMQ_LOG_ERROR, "handshake with %s: %s%s%s", p->name,
		        rmq_strerror(rc), reason[0] != '\0' ? ": " : "",
		        reason);
		goto out;
	}
	set_nonblock(fd);
	p->fd = fd;
	fd    = -1;
out:
	if (rc != 0 && p != NULL) {
		p->state = RMQ_PEER_DEAD;
		rmq_peer_destroy(s, p);
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

/* ---- the binding side, driven by progress ---- */

static void
pending_drop(struct rmq_socket *s, struct rmq_pending *pd)
{
	struct rmq_pending **pp;

	for (pp = &s->pendings; *pp != NULL; pp = &(*pp)->next)
		if (*pp == pd) {
			*pp = pd->next;
			break;
		}
	close(pd->fd);
	free(pd);
}

static void
pending_fail(struct rmq_socket *s, struct rmq_pending *pd, int code,
             const char *reason)
{
	rmq_log(RMQ_LOG_WARN, "handshake from %s rejected: %s (%s)", pd->name,
	        reason, rmq_strerror(code));
	send_reject(pd->fd, code, "%s", reason);
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
	if (s->ops->max_peers != 0 && s->nlive >= s->ops->max_peers) {
		pending_fail(s, pd, RMQ_EPEERFULL,
		             "this PAIR socket already has its peer");
		return;
	}
	p = rmq_peer_new(s);
	if (p == NULL) {
		pending_fail(s, pd, RMQ_ENOMEM, "out of memory");
		return;
	}
	snprintf(p->name, sizeof(p->name), "%s", pd->name);
	rc = hello_accept(s, p, &h, reason, sizeof(reason));
	if (rc != 0) {
		rmq_peer_destroy(s, p);
		pending_fail(s, pd, -rc, reason);
		return;
	}
	if (rmq_ring_rx_init(s, p) != 0)
		rmq_log(RMQ_LOG_WARN, "%s: no ring for this peer", p->name);
	hello_fill(s, pd->fd, p, &h);
	rc = write_all(pd->fd, b, rmq_ctrl_encode_hello(b, &h), 1000);
	if (rc != 0) {
		rmq_log(RMQ_LOG_WARN, "handshake with %s: %s", pd->name,
		        rmq_strerror(rc));
		s->nlive--;
		p->state = RMQ_PEER_DEAD;
		rmq_peer_destroy(s, p);
		s->stats.handshake_errors++;
		pending_drop(s, pd);
		return;
	}
	fd     = pd->fd;
	pd->fd = -1;
	p->fd  = fd;
	pending_drop(s, pd);
	rmq_log(RMQ_LOG_INFO, "peer %s connected", p->name);
}

static void
pending_read(struct rmq_socket *s, struct rmq_pending *pd)
{
	size_t  need = RMQ_CTRL_HDR_SIZE, body = 0;
	ssize_t r;
	int     kind = 0, rc;

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
			if (kind != RMQ_CK_HELLO) {
				pending_fail(s, pd, RMQ_EPROTO,
				             "expected HELLO");
				return;
			}
			need = RMQ_CTRL_HDR_SIZE + body;
			if (pd->have == need) {
				pending_hello(s, pd, body);
				return;
			}
		}
		r = recv(pd->fd, pd->buf + pd->have, need - pd->have, 0);
		if (r > 0) {
			pd->have += (size_t) r;
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		rmq_log(RMQ_LOG_WARN, "handshake from %s: connection closed",
		        pd->name);
		s->stats.handshake_errors++;
		pending_drop(s, pd);
		return;
	}
}

static void
accept_all(struct rmq_socket *s, struct rmq_listener *l)
{
	struct rmq_pending *pd;
	struct sockaddr_in  sin;
	socklen_t           sl;
	int                 fd;

	for (;;) {
		sl = sizeof(sin);
		fd = accept4(l->fd, (struct sockaddr *) &sin, &sl,
		             SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		pd = calloc(1, sizeof(*pd));
		if (pd == NULL) {
			close(fd);
			return;
		}
		if (sin.sin_family == AF_INET)
			tcp_tune(fd);
		pd->fd       = fd;
		pd->deadline = rmq_deadline(s->handshake_ms);
		if (sin.sin_family == AF_INET)
			snprintf(pd->name, sizeof(pd->name), "%s:%u",
			         inet_ntoa(sin.sin_addr), ntohs(sin.sin_port));
		else
			snprintf(pd->name, sizeof(pd->name), "local peer");
		pd->next    = s->pendings;
		s->pendings = pd;
		pending_read(s, pd);
	}
}

void
rmq_ctrl_closing(struct rmq_socket *s, struct rmq_peer *p, int64_t now)
{
	uint8_t b[RMQ_CTRL_HDR_SIZE];

	if (p->state != RMQ_PEER_CLOSING)
		return;
	if (p->recvd >= p->bye_count) {
		if (p->fd >= 0)
			(void) write_all(p->fd, b, rmq_ctrl_encode_bye_ack(b),
			                 100);
		rmq_peer_fail(s, p, 0, "left");
	} else if (p->closing_deadline == 0) {
		p->closing_deadline = now + (int64_t) s->handshake_ms * 1000000;
	} else if (now >= p->closing_deadline) {
		rmq_peer_fail(s, p, -RMQ_ECONNRESET,
		              "left before its messages arrived");
	}
}

/* One complete control frame from a connected peer. */
static void
peer_frame(struct rmq_socket *s, struct rmq_peer *p, int kind,
           const uint8_t *body, size_t len)
{
	uint64_t sent;

	if (kind == RMQ_CK_BYE_ACK && len == 0) {
		p->bye_acked = true;
		return;
	}
	if (kind == RMQ_CK_BYE && rmq_ctrl_decode_bye(&sent, body, len) == 0) {
		p->bye_count = sent;
		if (p->state == RMQ_PEER_LIVE) {
			p->state = RMQ_PEER_CLOSING;
			s->nlive--;
		}
		rmq_log(RMQ_LOG_INFO, "peer %s said goodbye", p->name);
		rmq_progress_cq(s);
		rmq_ctrl_closing(s, p, rmq_now_ns());
		return;
	}
	s->stats.proto_errors++;
	rmq_peer_fail(s, p, -RMQ_EPROTO, "garbage on control channel");
}

/* A peer's control channel is readable: BYE, BYE_ACK, EOF or garbage. */
static void
peer_ctrl_read_held(struct rmq_socket *s, struct rmq_peer *p)
{
	size_t  body, need;
	ssize_t r;
	int     kind, rc;

	for (;;) {
		r = recv(p->fd, p->cbuf + p->chave, sizeof(p->cbuf) - p->chave,
		         0);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (r <= 0)
			break;
		p->chave += (size_t) r;
		while (p->chave >= RMQ_CTRL_HDR_SIZE) {
			rc = rmq_ctrl_decode_hdr(p->cbuf, &kind, &body);
			need = RMQ_CTRL_HDR_SIZE + body;
			if (rc != 0 || need > sizeof(p->cbuf)) {
				s->stats.proto_errors++;
				rmq_peer_fail(s, p, -RMQ_EPROTO,
				              "garbage on control channel");
				return;
			}
			if (p->chave < need)
				break;
			peer_frame(s, p, kind, p->cbuf + RMQ_CTRL_HDR_SIZE,
			           body);
			if (p->state == RMQ_PEER_DEAD)
				return;
			memmove(p->cbuf, p->cbuf + need, p->chave - need);
			p->chave -= need;
		}
	}
	/* EOF or error: take in what the fabric still holds first. */
	rmq_progress_cq(s);
	if (p->state == RMQ_PEER_DEAD)
		return;
	if ((p->state == RMQ_PEER_CLOSING && p->recvd >= p->bye_count) ||
	    p->bye_acked) {
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
peer_ctrl_read(struct rmq_socket *s, struct rmq_peer *p)
{
	rmq_peer_hold(p);
	peer_ctrl_read_held(s, p);
	rmq_peer_release(s, p);
}

int
rmq_ctrl_poll(struct rmq_socket *s, int timeout_ms)
{
	struct pollfd        stackfds[64], *fds = stackfds;
	struct rmq_listener *l;
	struct rmq_pending  *pd, *pdn;
	int64_t              now;
	int                  n = 0, cap = 64, i, k, rc, events = 0;

	cap = 2 + s->peers_cap;
	for (l = s->listeners; l != NULL; l = l->next)
		cap++;
	for (pd = s->pendings; pd != NULL; pd = pd->next)
		cap++;
	if (cap > 64) {
		fds = calloc((size_t) cap, sizeof(*fds));
		if (fds == NULL)
			return -RMQ_ENOMEM;
	}
	for (l = s->listeners; l != NULL; l = l->next)
		fds[n++] = (struct pollfd){.fd = l->fd, .events = POLLIN};
	for (pd = s->pendings; pd != NULL; pd = pd->next)
		fds[n++] = (struct pollfd){.fd = pd->fd, .events = POLLIN};
	for (i = 0; i < s->peers_cap; i++)
		if (s->peers[i] != NULL && s->peers[i]->fd >= 0)
			fds[n++] = (struct pollfd){.fd = s->peers[i]->fd,
			                           .events = POLLIN};
	if (timeout_ms != 0 && s->cq_fd >= 0)
		fds[n++] = (struct pollfd){.fd = s->cq_fd, .events = POLLIN};
	rc = poll(fds, (nfds_t) n, timeout_ms);
	if (rc <= 0)
		goto expire;
	/* Walk the same order as built; objects may go away meanwhile. */
	k = 0;
	for (l = s->listeners; l != NULL; l = l->next, k++)
		if (fds[k].revents != 0) {
			accept_all(s, l);
			events++;
		}
	for (i = 0; i < n; i++) {
		if (fds[i].revents == 0 || i < k)
			continue;
		for (pd = s->pendings; pd != NULL; pd = pd->next)
			if (pd->fd == fds[i].fd)
				break;
		if (pd != NULL) {
			pending_read(s, pd);
			events++;
			continue;
		}
		for (int j = 0; j < s->peers_cap; j++) {
			struct rmq_peer *p = s->peers[j];

			if (p != NULL && p->fd == fds[i].fd) {
				peer_ctrl_read(s, p);
				events++;
				break;
			}
		}
	}
expire:
	now = rmq_now_ns();
	for (pd = s->pendings; pd != NULL; pd = pdn) {
		pdn = pd->next;
		if (now >= pd->deadline)
			pending_fail(s, pd, RMQ_ETIMEDOUT,
			             "no complete HELLO in time");
	}
	if (fds != stackfds)
		free(fds);
	return events;
}

void
rmq_ctrl_bye(struct rmq_socket *s, struct rmq_peer *p)
{
	uint8_t b[RMQ_CTRL_HDR_SIZE + 8];

	if (p->fd < 0 || p->bye_sent)
		return;
	p->bye_sent = true;
	if (write_all(p->fd, b, rmq_ctrl_encode_bye(b, p->sent), 100) != 0)
		p->bye_acked = true; /* nobody to wait for */
	RMQ_UNUSED(s);
}
