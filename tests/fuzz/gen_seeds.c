/*
 * gen_seeds: writes the seed corpora of tests/fuzz/ -- valid inputs for
 * each target, built with librmq's own encoders (lib/wire.c) where there
 * is one.  The output is committed under tests/fuzz/corpus/<target>/;
 * run it again after a wire format changes:
 *
 *   ninja -C build-fuzz tests/fuzz/gen_seeds
 *   build-fuzz/tests/fuzz/gen_seeds tests/fuzz/corpus \
 *       config/rmq.yaml.example tests/fuzz/fuzz_yaml.dict
 *
 * (or `ninja -C build-fuzz fuzz-seeds`, which does both).  File names say
 * what each seed is; libFuzzer reads every file of the directory.  The
 * dictionary gives fuzz_yaml the schema's words (keys, choices, units).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "paths/batch.h"
#include "rmq.h"
#include "schema.h"
#include "wire.h"

#define FRAME_MAX (RMQ_CTRL_HDR_SIZE + RMQ_CTRL_BODY_MAX)

static const char *outdir;

static void
put_file(const char *target, const char *name, const void *b, size_t n)
{
	char  path[1024];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", outdir, target);
	if (mkdir(path, 0777) != 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof path, "%s/%s/%s", outdir, target, name);
	f = fopen(path, "wb");
	if (f == NULL || (n > 0 && fwrite(b, 1, n, f) != n) || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* ---- fuzz_ctrl: control frames ---- */

static void
hello_base(struct rmq_hello *h, const char *prov)
{
	memset(h, 0, sizeof *h);
	h->pattern   = 0x0102;
	snprintf(h->prov, sizeof h->prov, "%s", prov);
	h->conn      = 0x00010003;
	h->rcvhwm    = 1000;
	h->maxmsg    = UINT64_MAX;
	h->eager_max = (1u << 20) - RMQ_HDR_SIZE;
}

/* A struct sockaddr_in for 127.0.0.1:port, as tcp and sockets name it. */
static void
addr_in(struct rmq_hello *h, uint16_t port)
{
	static const uint8_t a[16] = {2, 0, 0, 0, 127, 0, 0, 1};

	memcpy(h->addr, a, sizeof a);
	h->addr[2]  = (uint8_t) (port >> 8);
	h->addr[3]  = (uint8_t) port;
	h->addr_len = sizeof a;
}

static void
ctrl_seeds(void)
{
	static const char shm_addr[] = "fi_shm://4242:0";
	struct rmq_hello  h;
	struct rmq_reject r;
	uint8_t           b[FRAME_MAX], stream[4 * FRAME_MAX];
	uint8_t           pat[5 + 5] = {1, 7, 0, 0, 0, 'n', 'e', 'w', 's', '.'};
	size_t            n, s = 0, i;

	/* tcp: a sockaddr_in, batches taken. */
	hello_base(&h, "tcp");
	addr_in(&h, 47000);
	h.features = RMQ_FEAT_BATCH;
	n = rmq_ctrl_encode_hello(b, &h);
	put_file("fuzz_ctrl", "hello-tcp", b, n);
	memcpy(stream + s, b, n);
	s += n;

	/* shm: a string address, and a ring. */
	hello_base(&h, "shm");
	memcpy(h.addr, shm_addr, sizeof shm_addr);
	h.addr_len       = sizeof shm_addr;
	h.features       = RMQ_FEAT_RING | RMQ_FEAT_BATCH;
	h.ring_addr      = 0x7f0012340000ull;
	h.ring_key       = 0x1234;
	h.ring_slots     = 256;
	h.ring_slot_size = 4096;
	h.maxmsg         = 64u << 20;
	n = rmq_ctrl_encode_hello(b, &h);
	put_file("fuzz_ctrl", "hello-shm-ring", b, n);

	/* The largest: a 31-byte provider name, a 512-byte address. */
	hello_base(&h, "ofi_rxm;verbs-0123456789abcdefg");
	for (i = 0; i < RMQ_ADDR_MAX; i++)
		h.addr[i] = (uint8_t) (i * 7 + 1);
	h.addr_len       = RMQ_ADDR_MAX;
	h.features       = RMQ_FEAT_RING;
	h.ring_slots     = RMQ_RING_SLOTS_MAX;
	h.ring_slot_size = 1u << 20;
	n = rmq_ctrl_encode_hello(b, &h);
	put_file("fuzz_ctrl", "hello-max", b, n);

	memset(&r, 0, sizeof r);
	r.code = RMQ_EPATTERN;
	snprintf(r.reason, sizeof r.reason,
	         "a PUB socket cannot talk to a peer of type 0x102 (needs SUB)");
	n = rmq_ctrl_encode_reject(b, &r);
	put_file("fuzz_ctrl", "reject", b, n);

	{
		uint8_t nonce[RMQ_AUTH_NONCE], mac[RMQ_AUTH_MAC];

		memset(nonce, 0xa5, sizeof nonce);
		memset(mac, 0x5a, sizeof mac);
		n = rmq_ctrl_encode_auth(b, nonce, mac);
		put_file("fuzz_ctrl", "auth", b, n);
	}

	n = rmq_ctrl_encode_bye(b, 123456789, RMQ_BYE_NO_TOOK);
	put_file("fuzz_ctrl", "bye", b, n);
	memcpy(stream + s, b, n);
	s += n;
	n = rmq_ctrl_encode_bye(b, 123456789, 12345);
	put_file("fuzz_ctrl", "bye-took", b, n);
	n = rmq_ctrl_encode_bye_ack(b);
	put_file("fuzz_ctrl", "bye-ack", b, n);
	memcpy(stream + s, b, n);
	s += n;

	/* A SUB's SUBSCRIBE "news." (seq 7), as patterns/pubsub.c sends. */
	n = rmq_ctrl_encode_pat(b, pat, sizeof pat);
	put_file("fuzz_ctrl", "pat-subscribe", b, n);
	memcpy(stream + s, b, n);
	s += n;

	/* A whole connection: HELLO, a pattern frame, BYE, BYE_ACK. */
	put_file("fuzz_ctrl", "stream", stream, s);
}

/* ---- fuzz_hdr: fabric messages ---- */

static size_t
msg(uint8_t *b, uint8_t type, uint32_t msgid, uint32_t len)
{
	struct rmq_hdr h = {RMQ_WIRE_VERSION, type, 3, 0x00020001, msgid, len};

	rmq_hdr_encode(b, &h);
	return RMQ_HDR_SIZE;
}

static void
hdr_seeds(void)
{
	static const char *const names[] = {"fin", "credit", "cts", "rcredit",
	                                    "abort", "helped"};
	static const uint8_t     types[] = {RMQ_MT_FIN, RMQ_MT_CREDIT,
	                                    RMQ_MT_CTS, RMQ_MT_RCREDIT,
	                                    RMQ_MT_ABORT, RMQ_MT_HELPED};
	uint8_t        b[256];
	struct rmq_rts r;
	size_t         n, i;

	n = msg(b, RMQ_MT_DATA, 1, 11);
	memcpy(b + n, "hello world", 11);
	put_file("fuzz_hdr", "data", b, n + 11);
	n = msg(b, RMQ_MT_DATA | RMQ_MT_F_INJECT, 2, 0);
	put_file("fuzz_hdr", "data-inject-empty", b, n);

	r = (struct rmq_rts){1u << 20, 0x7f0000001000ull, 0xabcd, 77, 0};
	n = msg(b, RMQ_MT_RTS, 3, 0);
	rmq_rts_encode(b + n, &r);
	put_file("fuzz_hdr", "rts-read", b, RMQ_RTS_SIZE);
	r.flags = RMQ_RTS_F_SEND;
	rmq_rts_encode(b + n, &r);
	put_file("fuzz_hdr", "rts-send", b, RMQ_RTS_SIZE);
	r.flags = RMQ_RTS_F_WRITE;
	rmq_rts_encode(b + n, &r);
	put_file("fuzz_hdr", "rts-write", b, RMQ_RTS_SIZE);
	r.flags = RMQ_RTS_F_CMA;
	rmq_rts_encode(b + n, &r);
	put_file("fuzz_hdr", "rts-cma", b, RMQ_RTS_SIZE);
	r.flags = RMQ_RTS_F_CMA | RMQ_RTS_F_SHARE;
	rmq_rts_encode(b + n, &r);
	put_file("fuzz_hdr", "rts-cma-share", b, RMQ_RTS_SIZE);
	/* HELP: {length, the asker's buffer, offset, cookie, 0}; msgid the
	 * cookie. */
	r = (struct rmq_rts){1u << 19, 0x7f0000300000ull, 1u << 19, 77, 0};
	n = msg(b, RMQ_MT_HELP, 77, 0);
	rmq_rts_encode(b + n, &r);
	put_file("fuzz_hdr", "help", b, RMQ_RTS_SIZE);
	/* GRANT: {length, our buffer, key, grant id, 0}; msgid the cookie. */
	r = (struct rmq_rts){1u << 20, 0x7f0000200000ull, 0x55, 9, 0};
	n = msg(b, RMQ_MT_GRANT, 77, 0);
	rmq_rts_encode(b + n, &r);
	put_file("fuzz_hdr", "grant", b, RMQ_RTS_SIZE);

	for (i = 0; i < sizeof types; i++) {
		n = msg(b, types[i], 77,
		        types[i] == RMQ_MT_ABORT || types[i] == RMQ_MT_HELPED
		            ? 71
		            : 4);
		put_file("fuzz_hdr", names[i], b, n);
	}

	n = msg(b, RMQ_MT_SEG, 4, 32);
	rmq_seg_encode(b + n, 100000);
	memset(b + RMQ_SEG_HDR_SIZE, 's', 32);
	put_file("fuzz_hdr", "seg", b, RMQ_SEG_HDR_SIZE + 32);

	/* BATCH: two items, "abc" (padded) and an empty one. */
	n = msg(b, RMQ_MT_BATCH, 2, 8 + 8 + 8);
	rmq_put32(b + n, 3);
	rmq_put32(b + n + 4, 10);
	memcpy(b + n + 8, "abc\0\0\0\0\0", 8);
	rmq_put32(b + n + 16, 0);
	rmq_put32(b + n + 20, 11);
	put_file("fuzz_hdr", "batch", b, n + 24);

	/* A ring slot: header of type RING, then its payload. */
	n = msg(b, RMQ_MT_RING, 5, 40);
	memset(b + n, 'r', 40);
	put_file("fuzz_hdr", "ring", b, n + 40);
}

/* ---- fuzz_batch: u32 count | BATCH body ---- */

static size_t
item(uint8_t *b, uint32_t msgid, const void *p, uint32_t len)
{
	size_t pad = ((size_t) len + 7) & ~(size_t) 7;

	rmq_put32(b, len);
	rmq_put32(b + 4, msgid);
	memset(b + RMQ_BATCH_ITEM_HDR, 0, pad);
	memcpy(b + RMQ_BATCH_ITEM_HDR, p, len);
	return RMQ_BATCH_ITEM_HDR + pad;
}

static void
batch_seeds(void)
{
	static uint8_t b[4 + 4 * (RMQ_BATCH_ITEM_HDR + RMQ_BATCH_ITEM_MAX)];
	static uint8_t big[RMQ_BATCH_ITEM_MAX];
	size_t         n;

	memset(big, 'B', sizeof big);
	n = 4;
	rmq_put32(b, 1);
	n += item(b + n, 1, "", 0);
	put_file("fuzz_batch", "one-empty", b, n);

	n = 4;
	rmq_put32(b, 3);
	n += item(b + n, 100, "a", 1);
	n += item(b + n, 101, "12345678", 8);
	n += item(b + n, 102, "hello, world", 12);
	put_file("fuzz_batch", "three", b, n);

	/* The largest item, and one above RMQ_MAXMSGSIZE of the harness. */
	n = 4;
	rmq_put32(b, 2);
	n += item(b + n, 7, big, RMQ_BATCH_ITEM_MAX);
	n += item(b + n, 8, big, 700);
	put_file("fuzz_batch", "big", b, n);

	/* Many small ones, as a coalescing sender packs them. */
	n = 4;
	rmq_put32(b, 16);
	for (uint32_t i = 0; i < 16; i++)
		n += item(b + n, 1000 + i, "msg-0123456789", i);
	put_file("fuzz_batch", "sixteen", b, n);

	/* A message of three frames (RMQ_MSGID_MORE on all but the last),
	 * then one of a frame, then one left open at the batch's end. */
	n = 4;
	rmq_put32(b, 6);
	n += item(b + n, 5 | RMQ_MSGID_MORE, "id", 2);
	n += item(b + n, 5 | RMQ_MSGID_MORE, "", 0);
	n += item(b + n, 5, "body", 4);
	n += item(b + n, 6, "alone", 5);
	n += item(b + n, 7 | RMQ_MSGID_MORE, big, 600);
	n += item(b + n, 7 | RMQ_MSGID_MORE, "open", 4);
	put_file("fuzz_batch", "frames", b, n);
}

/* ---- fuzz_yaml: configuration files ---- */

static const struct {
	const char *name, *text;
} yaml_seeds[] = {
	{"nested", "provider: tcp\nlog: debug\nthresholds:\n  eager_max: 64KiB\n"
	           "  ring_max: 32K\n  rndv: rndv_write\n  path: auto\n"
	           "limits:\n  sndhwm: 500\n  max_msg_size: -1\n"},
	{"dotted", "thresholds.eager_max: 8KiB\nmemory.slab_size: 4MiB\n"
	           "timeouts.send_ms: -1\nnuma.policy: cpuset\n"
	           "numa.cpuset: \"0-3,8\"\ntcp.interface: lo\n"},
	{"sections", "thresholds:\n  reqrep:\n    path: seg\n    eager_max: 1KiB\n"
	             "  pubsub:\n    fanout_log: 4\n"
	             "thresholds.sockets:\n  bulk:\n    rndv: rndv_read\n"
	             "  \"ctl*\":\n    path: eager\n"},
	{"lists", "provider_order: tcp, shm\nsockets.interface: \"\"\n"},
	{"list-block", "provider_order:\n  - verbs\n  - tcp\nstrict: yes\n"
	               "coalesce:\n  enabled: true\n  window_us: 20\n"},
	{"flow", "{provider: shm, log: {level: warn}, ring: {slots: 64, "
	         "slot_size: 4KiB}}\n"},
	{"alias", "limits:\n  sndhwm: &x 64\n  rcvhwm: *x\n"}, /* refused */
};

static void
yaml_seeds_write(const char *example)
{
	char   buf[64 * 1024];
	size_t n = 0, i;
	FILE  *f;

	for (i = 0; i < sizeof yaml_seeds / sizeof yaml_seeds[0]; i++)
		put_file("fuzz_yaml", yaml_seeds[i].name, yaml_seeds[i].text,
		         strlen(yaml_seeds[i].text));
	f = fopen(example, "rb");
	if (f == NULL) {
		perror(example);
		exit(1);
	}
	n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	put_file("fuzz_yaml", "rmq.yaml.example", buf, n);
}

/* ---- fuzz_yaml's dictionary: the schema's words ---- */

static void
dict_word(FILE *f, const char *w, size_t n)
{
	static char  seen[512][64];
	static int   nseen;
	size_t       i;
	int          j;

	if (n == 0 || n >= sizeof seen[0])
		return;
	for (j = 0; j < nseen; j++)
		if (strlen(seen[j]) == n && memcmp(seen[j], w, n) == 0)
			return; /* once each */
	if (nseen < (int) (sizeof seen / sizeof seen[0])) {
		memcpy(seen[nseen], w, n);
		seen[nseen++][n] = '\0';
	}
	fputc('"', f);
	for (i = 0; i < n; i++) {
		if (w[i] == '"' || w[i] == '\\')
			fprintf(f, "\\%c", w[i]);
		else if (w[i] < 0x20 || w[i] > 0x7e)
			fprintf(f, "\\x%02X", (unsigned char) w[i]);
		else
			fputc(w[i], f);
	}
	fputs("\"\n", f);
}

static void
dict_key(FILE *f, const struct rmq_schema_key *k)
{
	const struct rmq_schema_choice *c;
	const char                     *p = k->name, *dot;

	dict_word(f, k->name, strlen(k->name));
	while ((dot = strchr(p, '.')) != NULL) { /* each part of it */
		dict_word(f, p, (size_t) (dot - p));
		p = dot + 1;
	}
	if (p != k->name)
		dict_word(f, p, strlen(p));
	for (c = k->choices; c != NULL && c->name != NULL; c++)
		dict_word(f, c->name, strlen(c->name));
}

static void
dict_write(const char *path)
{
	static const char *const extra[] = {
		"sockets", "reqrep", "pubsub", "pair", "pipeline", "fanout",
		": ", "\n  ", "\n    ", "- ", "[", "]", "{", "}", ", ", "#",
		"\"", "'", "---", "...", "&a", "*a", "!!str", "? ", "|", ">",
		"KiB", "MiB", "GiB", "K", "M", "G", "B", "-1", "0", "65536",
		"none", "~", "null", "yes", "no", "0-3,8",
	};
	FILE  *f = fopen(path, "w");
	size_t i;

	if (f == NULL) {
		perror(path);
		exit(1);
	}
	fputs("# fuzz_yaml's dictionary: written by gen_seeds.c from the "
	      "schema (config/schema.c).\n", f);
	for (i = 0; i < rmq_schema_nkeys(); i++)
		dict_key(f, rmq_schema_at(i));
	for (i = 0; i < RMQ_CFG_NPK; i++)
		dict_key(f, &rmq_schema_path_keys[i]);
	for (i = 0; i < sizeof extra / sizeof extra[0]; i++)
		dict_word(f, extra[i], strlen(extra[i]));
	if (fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

int
main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s CORPUS_DIR rmq.yaml.example "
		        "YAML_DICT\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	if (mkdir(outdir, 0777) != 0 && errno != EEXIST) {
		perror(outdir);
		return 1;
	}
	ctrl_seeds();
	hdr_seeds();
	batch_seeds();
	yaml_seeds_write(argv[2]);
	dict_write(argv[3]);
	return 0;
}
