/*
 * The fabric link: the socket's libfabric endpoint (ep.c), on which every
 * peer starts.  Its rows are the path table's (select.c): the table names
 * a row for the message's size, and when this peer cannot take it there
 * (its slabs, its ring), the next row by size does, unless the path was
 * forced.  The rows post to the endpoint themselves (paths/tx.c): the
 * link needs no put of its own.
 */
#include "conn/peer.h"
#include "link_ops.h"
#include "paths/path.h"
#include "socket.h"
#include "util.h"

/* Can path carry len bytes to p?  why: the row's reason if not. */
static int
can_carry(struct rmq_socket *s, struct rmq_peer *p, int path, size_t len,
          char *why, size_t whylen)
{
	const struct rmq_path_ops *row = s->path_ops[path];

	return row->can_carry != NULL ? row->can_carry(s, p, len, why, whylen)
	                              : 0;
}

/* Has path room for len bytes to p now (the ring's slots)? */
static bool
has_room(struct rmq_socket *s, struct rmq_peer *p, int path, size_t len)
{
	const struct rmq_path_ops *row = s->path_ops[path];

	return row->has_room == NULL || row->has_room(s, p, len);
}

/*
 * The path for len bytes to p when the table's choice will not do: moved
 * on to another range's row when this peer cannot take it there (its
 * slabs, its ring): one whose range holds len, or one that stretches past
 * its range into what its peer allows (eager, into the peer's slabs).  A
 * row that can carry len but has no room now is waited for when no other
 * can; one that cannot gives way to the rendezvous row.  A forced path
 * that cannot carry the message is an error that says why.
 */
static int __attribute__((noinline))
choose_again(struct rmq_socket *s, struct rmq_peer *p, int path, size_t len)
{
	const struct rmq_path_table *t = &s->paths;
	char                         why[256];
	size_t                       max;
	int                          rc, r, row;

	rc = can_carry(s, p, path, len, why, sizeof(why));
	if (rc == 0 && (t->force >= 0 || has_room(s, p, path, len)))
		return path;
	if (t->force >= 0) {
		rmq_log(RMQ_LOG_INFO, "%s", why);
		return rc;
	}
	for (r = 1; r < RMQ_RANGES; r++) {
		row = t->range_row[r];
		max = rmq_range_max(t, r);
		if (row < 0 || row == path)
			continue;
		if (((max > 0 && len <= max) ||
		     (s->path_ops[row]->flags & RMQ_ROW_F_STRETCH)) &&
		    can_carry(s, p, row, len, why, sizeof(why)) == 0)
			return row;
	}
	return rc == 0 ? path : t->rndv_path;
}

/* The table's row for len, if this peer can take it there now (the
 * common case, kept small: xfer.c calls it on every send that does not
 * go the short way); else the search above. */
int
rmq_fabric_choose(struct rmq_socket *s, struct rmq_peer *p, size_t len)
{
	int                        path = rmq_path_select(&s->paths, len);
	const struct rmq_path_ops *row  = s->path_ops[path];

	if (s->paths.force < 0 &&
	    (row->can_carry == NULL ||
	     row->can_carry(s, p, len, NULL, 0) == 0) &&
	    (row->has_room == NULL || row->has_room(s, p, len)))
		return path;
	return choose_again(s, p, path, len);
}

/* The short way of the table's first range row (path_ops.h), if any. */
int
rmq_fabric_send_now(struct rmq_socket *s, struct rmq_peer *p, const void *buf,
                    size_t len, uint32_t msgid)
{
	return s->paths.send_now != NULL
	           ? s->paths.send_now(s, p, buf, len, msgid)
	           : 1;
}

const struct rmq_link_ops rmq_link_fabric = {
	.name     = "fabric",
	.choose   = rmq_fabric_choose,
	.send_now = rmq_fabric_send_now,
};
