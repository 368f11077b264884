/*
 * Unit tests for the path rows (lib/paths/): each row's can_carry at each
 * threshold edge, for each provider row (recorded fi_info values,
 * fi_recs.h), normal and strict; and the rows as a table: every message
 * type and immediate has one owner, every owner its handler.
 *
 * The socket and peer here are built by hand as bind/connect would build
 * them (the table from select.c, the slab and tx-slot sizes from ep.c and
 * tx.c, the peer's ring from the ring row's own handshake hook): no
 * endpoint is opened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkmain.h"

#include <check.h>

#include "conn/peer.h"
#include "ep.h"
#include "fi_recs.h"
#include "paths/path.h"
#include "paths/tx.h"
#include "util.h"
#include "pattern.h"
#include "select.h"
#include "socket.h"
#include "xfer.h"

/* A socket and one peer, as after the handshake. */
struct bench {
	struct rmq_socket    s;
	struct rmq_path_sock ps;
	struct rmq_dom       dom;
	struct rmq_peer   p;
	struct rmq_config cfg;
};

/*
 * r's socket (strict or not); the peer is like us, so its slabs take
 * what ours take; ring: whether it announced a ring.
 */
static void
bench_make(struct bench *b, const struct rec *r, bool strict, bool ring)
{
	struct rmq_hello h;
	char             why[160];

	memset(b, 0, sizeof(*b));
	rmq_config_defaults(&b->cfg);
	b->cfg.strict = strict;
	ck_assert_int_eq(caps_of(&b->dom.caps, r, &b->cfg), 0);
	b->s.dom      = &b->dom;
	b->s.ps       = &b->ps;
	b->s.pat      = rmq_pattern_find(RMQ_PAIR);
	b->s.path_ops = rmq_paths;
	rmq_path_opts_init(&b->s.popts);
	ck_assert_int_eq(rmq_path_table_build(&b->s.paths, &b->dom.caps,
	                                      &b->cfg, "pair", NULL,
	                                      &b->s.popts),
	                 0);
	b->s.min_multi = rmq_ep_min_multi(&b->s.paths);
	b->ps.tx.slot  = rmq_tx_slot_size(b->s.min_multi, &b->s.paths);
	snprintf(b->p.name, sizeof(b->p.name), "peer");
	b->p.eager_max = b->s.min_multi - RMQ_HDR_SIZE;
	if (ring && b->s.paths.ring_ok) {
		memset(&h, 0, sizeof(h));
		h.features       = RMQ_FEAT_RING;
		h.ring_slots     = (uint32_t) b->cfg.ring_slots;
		h.ring_slot_size = (uint32_t) b->cfg.ring_slot_size;
		ck_assert_int_eq(rmq_paths[RMQ_PATH_RING]->hello_in(&b->s, &b->p, &h, why,
		                                        sizeof(why)),
		                 0);
	}
}

static void
bench_free(struct bench *b)
{
	int i;

	for (i = 0; i < RMQ_PATH_COUNT; i++)
		if (rmq_paths[i]->peer_fini != NULL)
			rmq_paths[i]->peer_fini(&b->s, &b->p);
}

static int
carry(struct bench *b, int path, size_t len)
{
	char why[256];

	if (rmq_paths[path]->can_carry == NULL)
		return 0;
	return rmq_paths[path]->can_carry(&b->s, &b->p, len, why, sizeof(why));
}

/* path carries up to edge bytes to the peer, and not one more. */
static void
check_edge(struct bench *b, int path, size_t edge, int err, const char *what)
{
	ck_assert_msg(carry(b, path, edge) == 0, "%s: %s refuses %zu", what,
	              rmq_path_name(path), edge);
	ck_assert_msg(carry(b, path, edge + 1) == err,
	              "%s: %s at %zu: %d, not %d", what, rmq_path_name(path),
	              edge + 1, carry(b, path, edge + 1), err);
	ck_assert_int_eq(carry(b, path, 0), 0);
}

/*
 * What one inject carries, per provider: with 8 bytes of CQ data the
 * header rides there and the payload may fill inject_size; with 4
 * (strict, verbs) it sits beside the header; never more than the
 * 4096-byte buffer we build it in.  efa's row caps the table's inject
 * range at 32 (and so turns the header-as-data off), but a forced inject
 * carries what its inject size allows.
 */
static const struct {
	const struct rec *rec;
	size_t            normal, strict;
} inject_caps[] = {
	{&rec_shm, 4096, 4096 - RMQ_HDR_SIZE},
	{&rec_tcp, 64, 64 - RMQ_HDR_SIZE},
	{&rec_sockets, 255, 255 - RMQ_HDR_SIZE},
	{&rec_verbs, 4096 - RMQ_HDR_SIZE, 4096 - RMQ_HDR_SIZE},
	{&rec_efa_117, 4096 - 168 - RMQ_HDR_SIZE, 4096 - 168 - RMQ_HDR_SIZE},
	{&rec_efa_118, 4096 - RMQ_HDR_SIZE, 4096 - RMQ_HDR_SIZE},
};

START_TEST(test_inject_edge)
{
	struct bench b;
	size_t       i, cap;
	int          strict;

	for (i = 0; i < sizeof(inject_caps) / sizeof(inject_caps[0]); i++)
		for (strict = 0; strict < 2; strict++) {
			bench_make(&b, inject_caps[i].rec, strict, true);
			cap = strict ? inject_caps[i].strict
			             : inject_caps[i].normal;
			check_edge(&b, RMQ_PATH_INJECT, cap, -RMQ_EMSGSIZE,
			           inject_caps[i].rec->what);
			/* the table sends inject only within what it carries */
			ck_assert_uint_le(b.s.paths.inject_max, cap);
			/* A peer whose slabs take less: its limit. */
			b.p.eager_max = cap / 2;
			check_edge(&b, RMQ_PATH_INJECT, cap / 2, -RMQ_EMSGSIZE,
			           "small peer");
			bench_free(&b);
		}
}
END_TEST

/* eager: the peer's slabs, and our tx slots, whichever is smaller. */
START_TEST(test_eager_edge)
{
	struct bench b;
	size_t       i, edge;
	int          strict;

	for (i = 0; i < NALL; i++)
		for (strict = 0; strict < 2; strict++) {
			bench_make(&b, all_recs[i], strict, true);
			edge = b.p.eager_max;
			ck_assert_uint_ge(b.ps.tx.slot, RMQ_HDR_SIZE + edge);
			check_edge(&b, RMQ_PATH_EAGER, edge, -RMQ_EMSGSIZE,
			           all_recs[i]->what);
			/* at least RMQ_SLAB_MSG_MIN: seg pieces stay large */
			ck_assert_uint_ge(edge, RMQ_SLAB_MSG_MIN);
			/* a peer with bigger slabs: our tx slots */
			b.p.eager_max = 64u << 20;
			check_edge(&b, RMQ_PATH_EAGER,
			           b.ps.tx.slot - RMQ_HDR_SIZE, -RMQ_EMSGSIZE,
			           "big peer");
			bench_free(&b);
		}
}
END_TEST

/*
 * ring: a message takes at most a quarter of the peer's ring (68 slots of
 * 4 KiB by default: 17 slots, 69616 bytes after the header); a peer
 * without a ring cannot be written at all; a provider without the ring
 * (efa: SRD reorders writes) never gets one.
 */
START_TEST(test_ring_edge)
{
	struct bench b;
	size_t       i, quarter;
	int          strict;

	for (i = 0; i < NALL; i++)
		for (strict = 0; strict < 2; strict++) {
			bench_make(&b, all_recs[i], strict, true);
			if (!b.s.paths.ring_ok) {
				ck_assert_int_eq(carry(&b, RMQ_PATH_RING, 1),
				                 -RMQ_ENOTSUP);
				ck_assert(!rmq_path_can(&b.dom.caps,
				                        RMQ_PATH_RING, NULL));
				bench_free(&b);
				continue;
			}
			quarter = (size_t) b.cfg.ring_slots / 4 *
			              b.cfg.ring_slot_size - RMQ_HDR_SIZE;
			if (b.dom.caps.rma_chunk != SIZE_MAX &&
			    quarter + RMQ_HDR_SIZE > b.dom.caps.rma_chunk)
				quarter = b.dom.caps.rma_chunk - RMQ_HDR_SIZE;
			ck_assert_uint_eq(quarter, 69616);
			check_edge(&b, RMQ_PATH_RING, quarter, -RMQ_EMSGSIZE,
			           all_recs[i]->what);
			bench_free(&b);
			/* the same peer without a ring */
			bench_make(&b, all_recs[i], strict, false);
			ck_assert_int_eq(carry(&b, RMQ_PATH_RING, 0),
			                 -RMQ_ENOTSUP);
			ck_assert_int_eq(carry(&b, RMQ_PATH_EAGER, 100), 0);
			bench_free(&b);
		}
}
END_TEST

/* A smaller ring: the quarter moves with ring.slots and slot_size. */
START_TEST(test_ring_edge_config)
{
	struct rmq_hello h = {0};
	struct bench     b;
	char             why[128];

	bench_make(&b, &rec_tcp, false, false);
	h.features       = RMQ_FEAT_RING;
	h.ring_slots     = 8;
	h.ring_slot_size = 64;
	ck_assert_int_eq(rmq_paths[RMQ_PATH_RING]->hello_in(&b.s, &b.p, &h, why,
	                                        sizeof(why)),
	                 0);
	/* two slots of 64 bytes, the header in the first */
	check_edge(&b, RMQ_PATH_RING, 2 * 64 - RMQ_HDR_SIZE, -RMQ_EMSGSIZE,
	           "8 x 64");
	bench_free(&b);
}
END_TEST

/* The rendezvous rows and seg carry any size the table gives them. */
START_TEST(test_any_size)
{
	static const int paths[] = {RMQ_PATH_RNDV_READ, RMQ_PATH_RNDV_SEND,
	                            RMQ_PATH_RNDV_WRITE, RMQ_PATH_SEG};
	static const size_t sizes[] = {0, 1, 65536, 1u << 30, SIZE_MAX};
	struct bench        b;
	size_t              i, k, j;

	for (i = 0; i < NALL; i++) {
		bench_make(&b, all_recs[i], false, true);
		for (k = 0; k < sizeof(paths) / sizeof(paths[0]); k++)
			for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++)
				ck_assert_int_eq(carry(&b, paths[k], sizes[j]),
				                 0);
		bench_free(&b);
	}
}
END_TEST

/* The table: indexed by id, named as the API names them, complete. */
START_TEST(test_rows_table)
{
	static const char *const names[RMQ_PATH_COUNT] = {
		"inject", "eager", "rndv_read", "rndv_send", "ring",
		"rndv_write", "seg", "local",
	};
	const struct rmq_path_ops *row;
	const char                *n;
	int                        i, kind;

	ck_assert_int_ge(rmq_path_count(), RMQ_PATH_COUNT);
	for (i = 0; i < rmq_path_count(); i++) {
		row  = rmq_paths[i];
		n    = rmq_path_name(i);
		kind = rmq_path_kind(i);
		ck_assert_ptr_nonnull(row);
		if (i < RMQ_PATH_COUNT)
			ck_assert_str_eq(n, names[i]);
		ck_assert_int_eq(rmq_path_id(n), i);
		ck_assert(row->send != NULL);
		ck_assert_msg((row->rx_types != 0) == (row->on_rx != NULL),
		              "%s: rx_types and on_rx", n);
		ck_assert_msg((row->imm_kind != 0) == (row->on_imm != NULL),
		              "%s: imm_kind and on_imm", n);
		/* a payload fetched later is a payload that can be refused */
		ck_assert_msg((row->fetch != NULL) == (row->cancel != NULL),
		              "%s: fetch and cancel", n);
		/* a range row names its range, no other row does */
		ck_assert_msg((kind == RMQ_ROW_RANGE) ==
		                  (row->range > RMQ_RANGE_NONE &&
		                   row->range < RMQ_RANGES),
		              "%s: kind and range", n);
		ck_assert_msg(kind == RMQ_ROW_RANGE || kind == RMQ_ROW_LARGE ||
		                  kind == RMQ_ROW_LINK,
		              "%s: kind %d", n, kind);
		/* a batch carrier has both halves */
		ck_assert_msg((row->batch_cap != NULL) ==
		                  (row->batch_post != NULL),
		              "%s: batch_cap and batch_post", n);
	}
	ck_assert_str_eq(rmq_path_name(rmq_path_count()), "?");
	ck_assert_str_eq(rmq_path_name(-1), "?");
	ck_assert_int_eq(rmq_path_id("nosuch"), -RMQ_EINVAL);
	ck_assert_int_eq(rmq_path_id(NULL), -RMQ_EINVAL);
}
END_TEST

/* A provider row names its rendezvous by a path's name: a LARGE row. */
START_TEST(test_rows_provider_rndv)
{
	const struct rmq_prov *const *pr;
	int                           id;

	for (pr = rmq_prov_all(); *pr != NULL; pr++) {
		id = rmq_path_id((*pr)->rndv);
		ck_assert_msg(id >= 0, "%s: rndv \"%s\" is no path", (*pr)->name,
		              (*pr)->rndv != NULL ? (*pr)->rndv : "(none)");
		ck_assert_msg(rmq_path_kind(id) == RMQ_ROW_LARGE,
		              "%s: rndv %s cannot carry what lies above the "
		              "ranges", (*pr)->name, (*pr)->rndv);
	}
}
END_TEST

/* Every message type has one row that receives it (CREDIT none). */
START_TEST(test_rows_dispatch)
{
	static const struct {
		int type, owner;
	} owners[] = {
		{RMQ_MT_DATA, RMQ_PATH_EAGER},
		{RMQ_MT_RTS, RMQ_PATH_RNDV_READ},
		{RMQ_MT_FIN, RMQ_PATH_RNDV_READ},
		{RMQ_MT_CREDIT, -1},
		{RMQ_MT_CTS, RMQ_PATH_RNDV_SEND},
		{RMQ_MT_SEG, RMQ_PATH_SEG},
		{RMQ_MT_GRANT, RMQ_PATH_RNDV_WRITE},
		{RMQ_MT_RCREDIT, RMQ_PATH_RING},
		{RMQ_MT_RING, -1}, /* in the ring slot, not a message */
		{RMQ_MT_ABORT, RMQ_PATH_RNDV_WRITE},
		{RMQ_MT_BATCH, RMQ_PATH_EAGER},
		{RMQ_MT_RBATCH, -1}, /* in the ring slot, not a message */
		{RMQ_MT_HELP, RMQ_PATH_LOCAL},
		{RMQ_MT_HELPED, RMQ_PATH_LOCAL},
	};
	struct rmq_socket s;
	size_t            i;
	int               t, n, k;

	memset(&s, 0, sizeof(s));
	s.path_ops = rmq_paths;
	rmq_xfer_init(&s);
	for (i = 0; i < sizeof(owners) / sizeof(owners[0]); i++)
		ck_assert_msg(s.rx_owner[owners[i].type] == owners[i].owner,
		              "type %d: row %d", owners[i].type,
		              s.rx_owner[owners[i].type]);
	/* no type claimed twice */
	for (t = 0; t < RMQ_MT_SLOTS; t++) {
		for (k = 0, n = 0; k < RMQ_PATH_COUNT; k++)
			n += (rmq_paths[k]->rx_types >> t) & 1;
		ck_assert_int_le(n, 1);
	}
	ck_assert_int_eq(s.imm_owner[RMQ_IMM_RING], RMQ_PATH_RING);
	ck_assert_int_eq(s.imm_owner[RMQ_IMM_WRITE], RMQ_PATH_RNDV_WRITE);
	ck_assert_int_eq(s.imm_owner[0], -1);
	ck_assert_int_eq(s.imm_owner[3], -1);
}
END_TEST

static Suite *
pathrows_suite(void)
{
	Suite *su = suite_create("pathrows");
	TCase *tc = tcase_create("unit");

	tcase_add_test(tc, test_inject_edge);
	tcase_add_test(tc, test_eager_edge);
	tcase_add_test(tc, test_ring_edge);
	tcase_add_test(tc, test_ring_edge_config);
	tcase_add_test(tc, test_any_size);
	tcase_add_test(tc, test_rows_table);
	tcase_add_test(tc, test_rows_provider_rndv);
	tcase_add_test(tc, test_rows_dispatch);
	suite_add_tcase(su, tc);
	return su;
}

RMQ_CHECK_MAIN(pathrows_suite)
