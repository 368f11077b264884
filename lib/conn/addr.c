/* Endpoint strings and addresses (addr.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "caps.h"
#include "conn/addr.h"
#include "ctx.h"
#include "util.h"

/* "host:port", "[v6host]:port" or "*:port" into a's host and port. */
static bool
split_host_port(const char *rest, struct rmq_addr *a)
{
	const char *colon, *host = rest;
	size_t      n;
	char       *end;
	long        v;

	if (rest[0] == '[') {
		colon = strchr(rest, ']');
		if (colon == NULL || colon[1] != ':')
			return false;
		host = rest + 1;
		n    = (size_t) (colon - host);
		colon++;
		a->v6 = true;
	} else {
		colon = strrchr(rest, ':');
		if (colon == NULL)
			return false;
		n = (size_t) (colon - rest);
	}
	if (n == 0 || n >= sizeof(a->host) || colon[1] == '\0' ||
	    strlen(colon + 1) >= sizeof(a->port))
		return false;
	v = strtol(colon + 1, &end, 10);
	if (*end != '\0' || v < 0 || v > 65535)
		return false;
	memcpy(a->host, host, n);
	a->host[n] = '\0';
	snprintf(a->port, sizeof(a->port), "%ld", v);
	if (strcmp(a->host, "*") == 0)
		snprintf(a->host, sizeof(a->host), a->v6 ? "::" : "0.0.0.0");
	/* An IPv6 literal without brackets (last colon the port's). */
	if (strchr(a->host, ':') != NULL)
		a->v6 = true;
	return true;
}

int
rmq_addr_parse(rmq_ctx *ctx, const char *endpoint, struct rmq_addr *a)
{
	const char *sep;
	char        scheme[16], why[300] = "", names[128];
	size_t      n;
	bool        local;

	memset(a, 0, sizeof(*a));
	if (endpoint == NULL)
		return -RMQ_EINVAL;
	sep = strstr(endpoint, "://");
	if (sep == NULL || (n = (size_t) (sep - endpoint)) >= sizeof(scheme)) {
		rmq_log(RMQ_LOG_INFO, "'%s': expected scheme://address",
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
			rmq_prov_names(names, sizeof(names), ", ", ", ");
			rmq_log(RMQ_LOG_INFO,
			        "'%s': unknown transport '%s' (expected %s or "
			        "fabric)",
			        endpoint, scheme, names);
			return -EPROTONOSUPPORT;
		}
	}
	if (split_host_port(sep + 3, a))
		return 0;
	a->v6 = false;
	/* shm://NAME: a name, the control channel on a Unix socket. */
	local = (a->prov->flags & RMQ_PROV_LOCAL_ONLY) != 0;
	if (local && sep[3] != '\0' &&
	    strlen(sep + 3) < sizeof(a->name) &&
	    strpbrk(sep + 3, ":/") == NULL) {
		a->unix_name = true;
		snprintf(a->name, sizeof(a->name), "%s", sep + 3);
		return 0;
	}
	rmq_log(RMQ_LOG_INFO, "'%s': expected %s://HOST:PORT or "
	        "%s://[IPV6]:PORT%s%s%s", endpoint, scheme,
	        scheme, local ? " or " : "", local ? a->prov->name : "",
	        local ? "://NAME" : "");
	return -RMQ_EADDR;
}

socklen_t
rmq_addr_unix(struct sockaddr_un *un, const char *name)
{
	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	/* Abstract namespace: no file to clean up, gone with the process. */
	snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1, "rmq/%s", name);
	return (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 +
	                    strlen(un->sun_path + 1));
}

static int
lookup(const struct rmq_addr *a, bool passive, int family,
       union rmq_inaddr *ia)
{
	struct addrinfo hints = {0}, *res = NULL;
	int             rc;

	hints.ai_family   = family;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags    = passive ? AI_PASSIVE : 0;
	rc = getaddrinfo(a->host, a->port, &hints, &res);
	if (rc == 0 && res != NULL && res->ai_addrlen <= sizeof(*ia)) {
		memset(ia, 0, sizeof(*ia));
		memcpy(ia, res->ai_addr, res->ai_addrlen);
	} else if (rc == 0) {
		rc = EAI_FAMILY;
	}
	if (res != NULL)
		freeaddrinfo(res);
	return rc;
}

int
rmq_addr_resolve(const struct rmq_addr *a, bool passive,
                 union rmq_inaddr *ia)
{
	int rc = EAI_NONAME;

	if (!a->v6)
		rc = lookup(a, passive, AF_INET, ia);
	/* A name with only IPv6 addresses, or an IPv6 literal. */
	if (rc != 0 && rc != EAI_AGAIN)
		rc = lookup(a, passive, AF_INET6, ia);
	if (rc != 0) {
		rmq_log(RMQ_LOG_INFO, "cannot resolve %s%s%s:%s: %s",
		        a->v6 ? "[" : "", a->host, a->v6 ? "]" : "", a->port,
		        gai_strerror(rc));
		return -RMQ_ERESOLVE;
	}
	return 0;
}

socklen_t
rmq_inaddr_len(const union rmq_inaddr *ia)
{
	return ia->sa.sa_family == AF_INET6 ? sizeof(ia->in6) : sizeof(ia->in);
}

bool
rmq_inaddr_any(const union rmq_inaddr *ia)
{
	if (ia->sa.sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&ia->in6.sin6_addr);
	return ia->in.sin_addr.s_addr == htonl(INADDR_ANY);
}

/* A UDP socket connected to ia knows which local address it would use. */
int
rmq_addr_route_local(const union rmq_inaddr *ia, union rmq_inaddr *loc)
{
	socklen_t sl = sizeof(*loc);
	int       fd, rc = 0;

	fd = socket(ia->sa.sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, &ia->sa, rmq_inaddr_len(ia)) != 0 ||
	    getsockname(fd, &loc->sa, &sl) != 0)
		rc = -errno;
	close(fd);
	return rc;
}

static const void *
inaddr_bits(const union rmq_inaddr *ia)
{
	return ia->sa.sa_family == AF_INET6 ? (const void *) &ia->in6.sin6_addr
	                                    : (const void *) &ia->in.sin_addr;
}

void
rmq_inaddr_show(const union rmq_inaddr *ia, char *buf, size_t len)
{
	char txt[INET6_ADDRSTRLEN];
	bool v6 = ia->sa.sa_family == AF_INET6;

	if (inet_ntop(ia->sa.sa_family, inaddr_bits(ia), txt, sizeof(txt)) ==
	    NULL)
		snprintf(txt, sizeof(txt), "?");
	snprintf(buf, len, "%s%s%s:%u", v6 ? "[" : "", txt, v6 ? "]" : "",
	         ntohs(v6 ? ia->in6.sin6_port : ia->in.sin_port));
}

void
rmq_addr_show(const struct rmq_addr *a, char *buf, size_t len)
{
	if (a->unix_name)
		snprintf(buf, len, "%s", a->name);
	else if (a->v6)
		snprintf(buf, len, "[%s]:%s", a->host, a->port);
	else
		snprintf(buf, len, "%s:%s", a->host, a->port);
}

/*
 * A concrete address for a bind to the wildcard, where the provider's
 * endpoint cannot sit on 0.0.0.0 or ::.  tcp;ofi_rxm settles two
 * connections crossing (both sides send first, as every new peer does)
 * by comparing its own address with the peer's: on the wildcard its own
 * is 0.0.0.0 while the peer sees the real one, the two sides can decide
 * differently, and then neither connection is kept (libfabric 1.17:
 * about half of the connections to a bind to * never carried a message).
 * So: the interface FI_TCP_IFACE names, else our side of the default
 * route, else the first non-loopback address, else loopback.  Handshakes
 * still come in on every interface; the data then goes to this one.
 */
static void
wildcard_pick(const struct rmq_prov *prov, union rmq_inaddr *use)
{
	static const struct in6_addr doc6 = {
	    .s6_addr = {0x20, 0x01, 0x0d, 0xb8, [15] = 1}};
	struct sockaddr_storage got;
	union rmq_inaddr        far = {0}, loc;
	struct ifaddrs         *ifa = NULL, *i;
	const char             *env = getenv("FI_TCP_IFACE");
	int                     family = use->sa.sa_family;
	in_port_t               port = family == AF_INET6 ? use->in6.sin6_port
	                                                  : use->in.sin_port;

	if (!(prov->flags & RMQ_PROV_NO_WILDCARD))
		return;
	if (env != NULL && strchr(env, ',') == NULL &&
	    rmq_iface_addr(env, family, &got, NULL, 0) == 0) {
		memcpy(use, &got, sizeof(*use));
		goto port;
	}
	/* Our side of a route out. */
	far.sa.sa_family = (sa_family_t) family;
	if (family == AF_INET6) {
		far.in6.sin6_addr = doc6;
		far.in6.sin6_port = htons(9);
	} else {
		far.in.sin_addr.s_addr = htonl(0xc0000201); /* 192.0.2.1 */
		far.in.sin_port        = htons(9);
	}
	if (rmq_addr_route_local(&far, &loc) == 0 && !rmq_inaddr_any(&loc)) {
		*use = loc;
		goto port;
	}
	if (getifaddrs(&ifa) == 0)
		for (i = ifa; i != NULL; i = i->ifa_next)
			if (i->ifa_addr != NULL &&
			    i->ifa_addr->sa_family == family &&
			    (i->ifa_flags & IFF_UP) &&
			    !(i->ifa_flags & IFF_LOOPBACK) &&
			    (family == AF_INET ||
			     !IN6_IS_ADDR_LINKLOCAL(
			         &((struct sockaddr_in6 *) i->ifa_addr)
			              ->sin6_addr))) {
				memcpy(use, i->ifa_addr, rmq_inaddr_len(use));
				freeifaddrs(ifa);
				goto port;
			}
	if (ifa != NULL)
		freeifaddrs(ifa);
	if (family == AF_INET6)
		use->in6.sin6_addr = in6addr_loopback;
	else
		use->in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
port:
	if (family == AF_INET6)
		use->in6.sin6_port = port;
	else
		use->in.sin_port = port;
}

int
rmq_addr_ep_node(const struct rmq_config *cfg, const struct rmq_prov *prov,
                 const union rmq_inaddr *ia, bool bind, char *buf,
                 size_t len, const char **nodep)
{
	struct rmq_knobs        k;
	struct sockaddr_storage got;
	union rmq_inaddr        use = *ia;
	int                     family = ia->sa.sa_family;
	char where[300], have[256], asked[INET6_ADDRSTRLEN + 8];

	*nodep = NULL;
	if (!(prov->flags & RMQ_PROV_ADDR_SOCKADDR))
		return 0;
	rmq_prov_knobs(cfg, prov, &k);
	if (k.iface != NULL) {
		rmq_config_where(cfg, k.iface_key, where, sizeof(where));
		if (bind && !rmq_inaddr_any(ia) &&
		    !rmq_iface_has(k.iface, &ia->sa)) {
			rmq_inaddr_show(ia, asked, sizeof(asked));
			*strrchr(asked, ':') = '\0'; /* no port */
			rmq_iface_addr(k.iface, family, &got, have,
			               sizeof(have));
			rmq_log(RMQ_LOG_ERROR,
			        "%s: bind to %s: not an address of '%s' (its "
			        "address: %s); bind to * or to it",
			        where, asked, k.iface, have[0] ? have : "none");
			return -RMQ_EADDR;
		}
		if (!bind || rmq_inaddr_any(ia)) {
			if (rmq_iface_addr(k.iface, family, &got, have,
			                   sizeof(have)) != 0) {
				rmq_log(RMQ_LOG_ERROR,
				        "%s: '%s' has no %s address", where,
				        k.iface,
				        family == AF_INET6 ? "IPv6" : "IPv4");
				return -RMQ_EADDR;
			}
			memcpy(&use, &got, sizeof(use));
		}
	} else if (bind && rmq_inaddr_any(ia)) {
		wildcard_pick(prov, &use);
	}
	*nodep = inet_ntop(family, inaddr_bits(&use), buf, (socklen_t) len);
	return 0;
}
