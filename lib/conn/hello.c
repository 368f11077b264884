/*
 * The HELLO of the handshake (hello.c): what we tell a peer, and what we
 * take from the one it sent, each path adding its own fields.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <rdma/fi_domain.h>

#include "caps.h"
#include "conn/addr.h"
#include "conn/hello.h"
#include "conn/peer.h"
#include "ep.h"
#include "path_ops.h"
#include "pattern_ops.h"
#include "socket.h"
#include "util.h"

/*
 * Our HELLO for p: our fields and each path's.  A sockaddr endpoint bound
 * to INADDR_ANY is told to the peer with the address its control
 * connection reached us on, which routes back to us.
 */
void
rmq_hello_fill(struct rmq_socket *s, int fd, struct rmq_peer *p,
           struct rmq_hello *h)
{
	union rmq_inaddr fin, loc;
	socklen_t        sl = sizeof(loc), fl;
	const uint8_t   *addr;
	size_t           alen;
	char             why[128];
	int              i;

	memset(h, 0, sizeof(*h));
	h->pattern = s->pat->self_id;
	snprintf(h->prov, sizeof(h->prov), "%s",
	         s->info->fabric_attr->prov_name);
	h->conn      = p->id;
	h->rcvhwm    = (uint32_t) s->rcvhwm;
	h->maxmsg    = s->maxmsg < 0 ? UINT64_MAX : (uint64_t) s->maxmsg;
	h->eager_max = (uint32_t) (s->min_multi - RMQ_HDR_SIZE);
	/* The endpoint it will talk to (a dialer picks it here; if none has
	 * room, its HELLO is refused by rmq_hello_accept with the reason). */
	(void) rmq_peer_shard_pick(s, p, why, sizeof(why));
	addr         = rmq_ep_shard_addr(s, p->shard, &alen);
	h->addr_len  = (uint16_t) alen;
	memcpy(h->addr, addr, alen);
	h->features  = RMQ_FEAT_TOOK; /* our BYE can say what we took */
	if (s->rid_len > 0) {
		h->features |= RMQ_FEAT_RID;
		h->rid_len   = s->rid_len;
		memcpy(h->rid, s->rid, s->rid_len);
	}
	for (i = 0; i < RMQ_PATHS; i++)
		if (s->path_ops[i]->hello_out != NULL)
			s->path_ops[i]->hello_out(s, p, h);
	/* h->addr sits at no particular alignment in the frame: copies. */
	if (!(s->prov->flags & RMQ_PROV_ADDR_SOCKADDR) ||
	    alen < sizeof(fin.in) || alen > sizeof(fin))
		return;
	memset(&fin, 0, sizeof(fin));
	memcpy(&fin, h->addr, alen);
	fl = rmq_inaddr_len(&fin);
	if (fl != alen || !rmq_inaddr_any(&fin) ||
	    getsockname(fd, &loc.sa, &sl) != 0 ||
	    loc.sa.sa_family != fin.sa.sa_family)
		return;
	if (fin.sa.sa_family == AF_INET6) {
		fin.in6.sin6_addr     = loc.in6.sin6_addr;
		fin.in6.sin6_scope_id = loc.in6.sin6_scope_id;
	} else {
		fin.in.sin_addr = loc.in.sin_addr;
	}
	memcpy(h->addr, &fin, fl);
}

/* Validate a peer's HELLO; on success fill the peer.  reason on error. */
int
rmq_hello_accept(struct rmq_socket *s, struct rmq_peer *p,
             const struct rmq_hello *h, char *reason, size_t rl)
{
	const char *ours = s->info->fabric_attr->prov_name;
	sa_family_t family, want;
	int         i, rc;

	if (strcmp(h->prov, ours) != 0) {
		snprintf(reason, rl, "peer uses provider '%s', we use '%s'",
		         h->prov, ours);
		return -RMQ_EPROVIDER;
	}
	if (!rmq_pattern_takes(s->pat, h->pattern)) {
		snprintf(reason, rl,
		         "a %s socket cannot talk to a peer of type 0x%x "
		         "(needs %s)",
		         s->pat->name, h->pattern, s->pat->peer_name);
		return -RMQ_EPATTERN;
	}
	/* What it grants us is checked before anything of ours is given or
	 * set up (the wire decoder has checked the ring's numbers and a
	 * non-zero RCVHWM): its slabs take what ours take, at least. */
	if (h->eager_max < RMQ_SLAB_MSG_MIN) {
		snprintf(reason, rl,
		         "peer's eager limit %u is below the minimum %u",
		         h->eager_max, RMQ_SLAB_MSG_MIN);
		return -RMQ_EPROTO;
	}
	memcpy(&family, h->addr, sizeof(family));
	if (s->info->addr_format == FI_SOCKADDR_IN ||
	    s->info->addr_format == FI_SOCKADDR_IN6) {
		want = s->info->addr_format == FI_SOCKADDR_IN6 ? AF_INET6
		                                                : AF_INET;
		if ((family == AF_INET || family == AF_INET6) &&
		    family != want) {
			snprintf(reason, rl,
			         "peer's fabric endpoint is %s, ours %s: bind "
			         "and connect with one address family",
			         family == AF_INET6 ? "IPv6" : "IPv4",
			         want == AF_INET6 ? "IPv6" : "IPv4");
			return -RMQ_EADDR;
		}
		if (family != want ||
		    h->addr_len != (want == AF_INET6
		                        ? sizeof(struct sockaddr_in6)
		                        : sizeof(struct sockaddr_in))) {
			snprintf(reason, rl, "bad fabric address (%u bytes)",
			         h->addr_len);
			return -RMQ_EPROTO;
		}
	}
	if (s->info->addr_format == FI_ADDR_STR &&
	    memchr(h->addr, '\0', h->addr_len) == NULL) {
		snprintf(reason, rl, "fabric address is not a string");
		return -RMQ_EPROTO;
	}
	rc = rmq_peer_shard_pick(s, p, reason, rl);
	if (rc != 0)
		return rc;
	rc = fi_av_insert(rmq_ep_shard_av(s, p->shard), h->addr, 1,
	                  &p->fiaddr, 0, NULL);
	if (rc != 1) {
		snprintf(reason, rl, "fi_av_insert: %s",
		         fi_strerror(rc < 0 ? -rc : FI_EINVAL));
		return -RMQ_EPROTO;
	}
	p->rid       = h->conn;
	p->rcvhwm    = h->rcvhwm;
	p->credits   = h->rcvhwm;
	p->maxmsg    = h->maxmsg;
	p->eager_max = h->eager_max;
	p->chan.took_ok = (h->features & RMQ_FEAT_TOOK) != 0;
	for (i = 0; i < RMQ_PATHS; i++)
		if (s->path_ops[i]->hello_in != NULL &&
		    (rc = s->path_ops[i]->hello_in(s, p, h, reason, rl)) != 0)
			return rc;
	/* Last, once nothing else refuses it: the pattern keeps its
	 * routing id (a ROUTER refuses one already connected). */
	if (s->pat->hello_in != NULL)
		return s->pat->hello_in(s->pstate, s, p, p->pat, h->pattern,
		                        h->rid, h->rid_len, reason, rl);
	return 0;
}
