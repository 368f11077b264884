/*
 * The rows, collected from the registry (path.h): each line of
 * rmq_path_rows names its row rmq_path_<name>, at its id.
 */
#include "paths/path.h"
#include "socket.h"

#define ROW_DECL(n, k) extern const struct rmq_path_ops rmq_path_##n;
RMQ_PATH_ROWS(ROW_DECL)
#undef ROW_DECL

#define ROW_ENTRY(n, k) [RMQ_ROW_ID_##n] = &rmq_path_##n,
const struct rmq_path_ops *const rmq_paths[RMQ_PATHS] = {
	RMQ_PATH_ROWS(ROW_ENTRY)
};
#undef ROW_ENTRY

/* The public ids (rmq.h) are the registry's order, and struct rmq_stats
 * has a slot for each of the first RMQ_PATH_MAX. */
_Static_assert((int) RMQ_ROW_ID_inject == (int) RMQ_PATH_INJECT &&
                   (int) RMQ_ROW_ID_eager == (int) RMQ_PATH_EAGER &&
                   (int) RMQ_ROW_ID_rndv_read == (int) RMQ_PATH_RNDV_READ &&
                   (int) RMQ_ROW_ID_rndv_send == (int) RMQ_PATH_RNDV_SEND &&
                   (int) RMQ_ROW_ID_ring == (int) RMQ_PATH_RING &&
                   (int) RMQ_ROW_ID_rndv_write == (int) RMQ_PATH_RNDV_WRITE &&
                   (int) RMQ_ROW_ID_seg == (int) RMQ_PATH_SEG &&
                   (int) RMQ_ROW_ID_local == (int) RMQ_PATH_LOCAL,
               "rmq.h's RMQ_PATH_* are the registry's ids");
_Static_assert((int) RMQ_PATHS >= (int) RMQ_PATH_COUNT,
               "every path rmq.h names has a row");

int
rmq_paths_init(struct rmq_socket *s)
{
	int i, rc;

	for (i = 0; i < RMQ_PATHS; i++)
		if (rmq_paths[i]->sock_init != NULL &&
		    (rc = rmq_paths[i]->sock_init(s)) != 0)
			return rc;
	return 0;
}

void
rmq_paths_close(struct rmq_socket *s)
{
	int i;

	for (i = 0; i < RMQ_PATHS; i++)
		if (rmq_paths[i]->sock_close != NULL)
			rmq_paths[i]->sock_close(s);
}

void
rmq_paths_fini(struct rmq_socket *s)
{
	int i;

	for (i = 0; i < RMQ_PATHS; i++)
		if (rmq_paths[i]->sock_fini != NULL)
			rmq_paths[i]->sock_fini(s);
}
