/*
 * Endpoint strings and addresses (addr.c): "tcp://host:port",
 * "shm://NAME", "fabric://..." parsed into a provider and a control
 * address; where the fabric endpoint opens.
 */
#ifndef RMQ_ADDR_H
#define RMQ_ADDR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "config.h"
#include "prov.h"
#include "rmq.h"

/* An IPv4 or IPv6 address and port (the control channel, tcp and sockets
 * fabric addresses). */
union rmq_inaddr {
	struct sockaddr     sa;
	struct sockaddr_in  in;
	struct sockaddr_in6 in6;
};

struct rmq_addr {
	const struct rmq_prov *prov;
	bool   unix_name;   /* shm://NAME: abstract Unix socket */
	bool   v6;          /* tcp://[host]:port: IPv6 only */
	char   host[128];
	char   port[16];
	char   name[96];
};

int rmq_addr_parse(rmq_ctx *ctx, const char *endpoint, struct rmq_addr *a);
/*
 * host:port into ia (passive: for bind), -RMQ_ERESOLVE logged.  A name
 * is looked up as IPv4 first, then as IPv6; "[...]" only as IPv6.
 */
int rmq_addr_resolve(const struct rmq_addr *a, bool passive,
                     union rmq_inaddr *ia);
socklen_t rmq_inaddr_len(const union rmq_inaddr *ia);
/* The wildcard address (0.0.0.0, ::)? */
bool rmq_inaddr_any(const union rmq_inaddr *ia);
/* Our side of a route to ia (loc), sending nothing: 0 or -errno. */
int rmq_addr_route_local(const union rmq_inaddr *ia, union rmq_inaddr *loc);
/* "1.2.3.4:5" or "[::1]:5", for names and messages. */
void rmq_inaddr_show(const union rmq_inaddr *ia, char *buf, size_t len);
/* The abstract Unix socket address of shm://NAME. */
socklen_t rmq_addr_unix(struct sockaddr_un *un, const char *name);
/* "host:port", "[v6host]:port" or "NAME", for messages and endpoints. */
void rmq_addr_show(const struct rmq_addr *a, char *buf, size_t len);
/*
 * The node to open the fabric endpoint on: an IPv4 or IPv6 address in
 * buf, or NULL (*nodep).  ia: the address bound, or for a connect our side of
 * the control connection.  With an interface in the config
 * (tcp.interface ...), a bind to * and every connect use that interface's
 * address; a bind to another address is -RMQ_EADDR.
 */
int rmq_addr_ep_node(const struct rmq_config *cfg, const struct rmq_prov *prov,
                     const union rmq_inaddr *ia, bool bind, char *buf,
                     size_t len, const char **nodep);

#endif /* RMQ_ADDR_H */
