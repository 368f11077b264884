/*
 * librmq wire formats.  Everything is fixed-width little-endian and encoded
 * byte by byte, so the layout does not depend on the compiler or the host.
 *
 * Fabric messages (fi_send / fi_inject into the peer's multi-recv slabs):
 *
 *   0      1      2             4                8               12      16
 *   +------+------+-------------+----------------+---------------+-------+
 *   | ver  | type |  credits    |  conn          |  msgid        |  len  |
 *   +------+------+-------------+----------------+---------------+-------+
 *
 *   ver      RMQ_WIRE_VERSION
 *   type     RMQ_MT_* (low 7 bits); RMQ_MT_F_INJECT marks an inject send
 *   credits  messages the sender has consumed from us since its last grant
 *   conn     OUR id for the sender, given to it in the handshake
 *   msgid    request id (REQ/REP); FIN: the cookie of the rendezvous
 *   len      DATA: payload bytes that follow; FIN: status (0 or errno)
 *
 *   type ownership: DATA and BATCH eager/inject, RTS and FIN the
 *   rendezvous family, CTS rndv_send, GRANT and ABORT rndv_write, SEG seg, RCREDIT ring,
 *   CREDIT none (lib/paths/, each row's rx_types).
 *
 *   BATCH (coalesced, paths/batch.c): msgid = the number of messages,
 *   len = the bytes that follow, each message an 8-byte item header
 *   (u32 length, u32 msgid) then its payload, padded to 8 bytes.
 *   RBATCH: the same body written into the receiver's ring (at the start
 *   of a ring message, in place of RING's header), for peers that said
 *   RMQ_FEAT_RBATCH: a ring message is one write, not bounded by the
 *   provider's buffers for two-sided sends.
 *
 *   RTS adds 32 bytes: u64 length, u64 remote address, u64 key, u32 cookie,
 *   u32 flags (RMQ_RTS_F_SEND: answer CTS and post a tagged receive; the
 *   payload comes as one fi_tsend with tag = conn << 32 | cookie;
 *   RMQ_RTS_F_WRITE: answer GRANT, the payload comes by fi_write;
 *   RMQ_RTS_F_CMA: a peer on this host, the address is the sender's own
 *   virtual address, which the receiver reads with process_vm_readv --
 *   the key still serves an fi_read where it cannot).
 *   CTS carries the cookie in msgid.  A ring message starts with a header
 *   of type RING in the ring slot itself.
 *
 *   HELP (local path only, to a sender whose RTS said RMQ_RTS_F_SHARE):
 *   msgid = the RTS's cookie, and the RTS layout {length, the receiver's
 *   address, offset in the message, cookie, 0}: the sender writes that
 *   part of its payload there (process_vm_writev) while the receiver
 *   reads the rest, then says HELPED {msgid = cookie, len = status}.
 *
 * Control channel frames (TCP or Unix stream, handshake and goodbye):
 *
 *   "RMQC" | u8 version | u8 kind | u16 body length | body
 */
#ifndef RMQ_WIRE_H
#define RMQ_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RMQ_WIRE_VERSION 1

enum rmq_msg_type {
	RMQ_MT_DATA   = 1, /* payload follows the header */
	RMQ_MT_RTS    = 2, /* rendezvous: come and read */
	RMQ_MT_FIN    = 3, /* rendezvous done (status in len) */
	RMQ_MT_CREDIT = 4, /* credits only */
	RMQ_MT_CTS    = 5, /* rendezvous by send: receive posted, go */
	RMQ_MT_SEG    = 6, /* one piece of a segmented message (seg) */
	RMQ_MT_GRANT  = 7, /* rndv_write: here is my buffer, write it */
	RMQ_MT_RCREDIT = 8, /* ring slots freed (in len) */
	RMQ_MT_RING   = 9, /* header at the start of a ring message */
	RMQ_MT_ABORT  = 10, /* rndv_write for grant msgid failed (len) */
	RMQ_MT_BATCH  = 11, /* coalesced: msgid messages in len bytes */
	RMQ_MT_RBATCH = 12, /* the same, written into a ring (RMQ_FEAT_RBATCH) */
	RMQ_MT_HELP   = 13, /* local: write this part of your RTS's payload
	                     * into my memory (RMQ_RTS_F_SHARE) */
	RMQ_MT_HELPED = 14, /* local: that part is written (status in len) */
};
#define RMQ_MT_F_INJECT 0x80
#define RMQ_MT_MASK     0x7f

/*
 * A message's frames (RMQ_SNDMORE) go as messages of their own, in order,
 * each with this bit of its msgid set but the last: every path carries
 * the msgid whole, so every path carries the framing.  What the patterns
 * put in a msgid (a REQ's request id) keeps to the other 31 bits.
 */
#define RMQ_MSGID_MORE 0x80000000u

#define RMQ_HDR_SIZE     16
#define RMQ_INJECT_BUF   4096 /* largest inject we build (on the stack) */
#define RMQ_EAGER_LIMIT  (64u << 20) /* eager_max never above (schema too) */
#define RMQ_RTS_EXT_SIZE 32
#define RMQ_RTS_SIZE     (RMQ_HDR_SIZE + RMQ_RTS_EXT_SIZE)

struct rmq_hdr {
	uint8_t  version;
	uint8_t  type;    /* with RMQ_MT_F_INJECT possibly set */
	uint16_t credits;
	uint32_t conn;
	uint32_t msgid;
	uint32_t len;
};

#define RMQ_RTS_F_SEND  0x1u
#define RMQ_RTS_F_WRITE 0x2u /* answer GRANT; payload comes by fi_write */
#define RMQ_RTS_F_CMA   0x4u /* read it from the sender's address space */
#define RMQ_RTS_F_SHARE 0x8u /* with CMA: the sender waits in this send and
                              * writes the part a HELP asks for */

/*
 * SEG adds 8 bytes: u64 total length of the message; len is this piece.
 * GRANT carries the RTS layout: {length, our buffer, key, grant id, 0};
 * msgid is the cookie of the RTS it answers.
 */
#define RMQ_SEG_EXT_SIZE 8
#define RMQ_SEG_HDR_SIZE (RMQ_HDR_SIZE + RMQ_SEG_EXT_SIZE)

/*
 * The 32-bit immediate of fi_writedata (verbs and efa carry only 4 bytes):
 *
 *   ring:  01 | peer slot (14 bits, the receiver's) | ring slot (16 bits)
 *   write: 10 | grant id (30 bits)                 -- rndv_write is done
 */
#define RMQ_IMM_KIND(d)      ((uint32_t) (d) >> 30)
#define RMQ_IMM_RING         1u
#define RMQ_IMM_WRITE        2u
#define RMQ_IMM_RING_MAKE(peer, slot)                                        \
	((RMQ_IMM_RING << 30) | (((uint32_t) (peer) & 0x3fffu) << 16) |        \
	 ((uint32_t) (slot) & 0xffffu))
#define RMQ_IMM_RING_PEER(d) (((uint32_t) (d) >> 16) & 0x3fffu)
#define RMQ_IMM_RING_SLOT(d) ((uint32_t) (d) & 0xffffu)
#define RMQ_IMM_WRITE_MAKE(id) ((RMQ_IMM_WRITE << 30) | ((id) & 0x3fffffffu))
#define RMQ_IMM_WRITE_ID(d)  ((uint32_t) (d) & 0x3fffffffu)
#define RMQ_RING_PEERS_MAX   16384 /* peer slots a ring can name */
#define RMQ_RING_SLOTS_MAX   65536

struct rmq_rts {
	uint64_t len;
	uint64_t raddr;
	uint64_t rkey;
	uint32_t cookie;
	uint32_t flags;  /* RMQ_RTS_F_* */
};

/* Control channel. */
#define RMQ_CTRL_MAGIC    "RMQC"
#define RMQ_CTRL_HDR_SIZE 8
#define RMQ_CTRL_BODY_MAX 1024
#define RMQ_ADDR_MAX      512
#define RMQ_PROVNAME_MAX  32

enum rmq_ctrl_kind {
	RMQ_CK_HELLO  = 1,
	RMQ_CK_REJECT = 2,
	RMQ_CK_BYE    = 3, /* u64: messages we sent you (DATA, RTS, FIN);
	                    * to a peer that said RMQ_FEAT_TOOK, then u64:
	                    * of yours, those we took (all we received but
	                    * what we leave unread) */
	RMQ_CK_BYE_ACK = 4, /* all of them arrived: you may close */
	RMQ_CK_PAT    = 5, /* the pattern's own: u8 op, then its body (a
	                    * SUB's subscriptions, their acknowledgements) */
	RMQ_CK_AUTH   = 6, /* before HELLO, with auth.key_file: a nonce and
	                    * a MAC (conn/auth.c) */
};

/* An AUTH frame's body: nonce, then MAC (zero in the first one). */
#define RMQ_AUTH_NONCE 32
#define RMQ_AUTH_MAC   32

struct rmq_hello {
	uint16_t pattern;   /* wire id of the sender's socket type */
	char     prov[RMQ_PROVNAME_MAX]; /* fi prov_name, NUL-terminated */
	uint32_t conn;      /* id the receiver must put in headers to us */
	uint32_t rcvhwm;    /* initial credits we grant */
	uint64_t maxmsg;    /* largest message we accept; UINT64_MAX none */
	uint32_t features;  /* RMQ_FEAT_*: which paths' fields follow the
	                     * address, in bit order (paths/ fill and read
	                     * them through their hello_out / hello_in) */
	uint32_t eager_max; /* largest payload our slabs take in one message:
	                     * larger ones must come by rendezvous */
	uint16_t addr_len;
	uint8_t  addr[RMQ_ADDR_MAX]; /* fi_getname() result */
	/* With RMQ_FEAT_RING: our ring for the peer's writes (24 bytes
	 * after the address). */
	uint64_t ring_addr;  /* address (FI_MR_VIRT_ADDR) or offset 0 */
	uint64_t ring_key;
	uint32_t ring_slots;
	uint32_t ring_slot_size;
	/* With RMQ_FEAT_LOCAL (56 bytes after those): this host, and the
	 * ring we made for the peer's messages in memory we share with it
	 * (link/local.c). */
	uint8_t  host[16];   /* the kernel's boot id */
	uint64_t host_name;  /* a hash of the host name */
	uint32_t uid, pid;   /* ours: the peer opens /proc/pid/fd/... */
	uint32_t lfd;        /* our memfd holding the ring; 0: none */
	uint32_t lefd;       /* our eventfd: written to wake us */
	uint32_t lsize;      /* the ring's bytes */
	uint32_t lflags;     /* RMQ_LOCAL_F_* */
	uint64_t lnonce;     /* written at the ring's head: the right one */
	/* With RMQ_FEAT_RID (after those): the sender's RMQ_ROUTING_ID, a
	 * length byte (1 to 255) and the bytes. */
	uint8_t  rid_len;
	uint8_t  rid[255];
};

#define RMQ_FEAT_RING  0x1u /* the ring's 24 bytes (paths/ring.c) */
#define RMQ_FEAT_BATCH 0x2u /* we take BATCH messages (no fields) */
#define RMQ_FEAT_RBATCH 0x4u /* we take RBATCH in our ring (no fields) */
#define RMQ_FEAT_LOCAL 0x8u /* this host and a shared ring: 56 bytes */
#define RMQ_FEAT_TOOK  0x10u /* we read a BYE's took (no fields) */
#define RMQ_FEAT_RID   0x20u /* our routing id: 1 + its length */
#define RMQ_FEAT_KNOWN                                                       \
	(RMQ_FEAT_RING | RMQ_FEAT_BATCH | RMQ_FEAT_RBATCH | RMQ_FEAT_LOCAL |  \
	 RMQ_FEAT_TOOK | RMQ_FEAT_RID)
#define RMQ_LOCAL_HELLO_SIZE 56
#define RMQ_LOCAL_F_MAPPED 0x1u /* we mapped the ring the peer announced */
#define RMQ_LOCAL_F_SHARE  0x2u /* we answer HELP (wire.h, RMQ_MT_HELP) */

struct rmq_reject {
	uint32_t code;      /* positive librmq error code */
	char     reason[200];
};

/* Little-endian fields, byte by byte. */
static inline void
rmq_put16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t) v;
	b[1] = (uint8_t) (v >> 8);
}

static inline void
rmq_put32(uint8_t *b, uint32_t v)
{
	rmq_put16(b, (uint16_t) v);
	rmq_put16(b + 2, (uint16_t) (v >> 16));
}

static inline void
rmq_put64(uint8_t *b, uint64_t v)
{
	rmq_put32(b, (uint32_t) v);
	rmq_put32(b + 4, (uint32_t) (v >> 32));
}

static inline uint16_t
rmq_get16(const uint8_t *b)
{
	return (uint16_t) (b[0] | (b[1] << 8));
}

static inline uint32_t
rmq_get32(const uint8_t *b)
{
	return (uint32_t) rmq_get16(b) | ((uint32_t) rmq_get16(b + 2) << 16);
}

static inline uint64_t
rmq_get64(const uint8_t *b)
{
	return (uint64_t) rmq_get32(b) | ((uint64_t) rmq_get32(b + 4) << 32);
}

void rmq_hdr_encode(uint8_t *b, const struct rmq_hdr *h);
/* Returns 0, or -RMQ_EPROTO / -RMQ_EVERSION for a header we cannot use. */
int  rmq_hdr_decode(struct rmq_hdr *h, const uint8_t *b, size_t len);
void rmq_rts_encode(uint8_t *b, const struct rmq_rts *r);
/* Returns 0 or -RMQ_EPROTO for unknown flags. */
int  rmq_rts_decode(struct rmq_rts *r, const uint8_t *b);
/* Does r name its payload by the sender's own virtual address, whatever
 * the provider's keys take (RMQ_RTS_F_CMA)? */
static inline bool
rmq_rts_own_va(const struct rmq_rts *r)
{
	return (r->flags & RMQ_RTS_F_CMA) != 0;
}

#define RMQ_BATCH_ITEM_HDR 8    /* u32 length, u32 msgid */
#define RMQ_BATCH_ITEM_MAX 1024 /* larger payloads go alone */

/* Bytes a batch item of n payload bytes takes (header, padding to 8). */
static inline size_t
rmq_batch_item_size(size_t n)
{
	return RMQ_BATCH_ITEM_HDR + ((n + 7) & ~(size_t) 7);
}

/* A BATCH or RBATCH body b[0..len) holds exactly count well-formed items
 * (each at most RMQ_BATCH_ITEM_MAX): 0, else -RMQ_EPROTO and *found, the
 * items read before the first bad one. */
int rmq_batch_check(const uint8_t *b, size_t len, uint32_t count,
                    uint32_t *found);

void     rmq_seg_encode(uint8_t *b, uint64_t total);
uint64_t rmq_seg_decode(const uint8_t *b);

/* Frame = 8-byte header + body; returns total bytes written. */
size_t rmq_ctrl_encode_hello(uint8_t *b, const struct rmq_hello *h);
size_t rmq_ctrl_encode_reject(uint8_t *b, const struct rmq_reject *r);
/* A BYE's took when it has none (an 8-byte BYE). */
#define RMQ_BYE_NO_TOOK UINT64_MAX
/* took RMQ_BYE_NO_TOOK: the 8-byte BYE, for a peer without RMQ_FEAT_TOOK. */
size_t rmq_ctrl_encode_bye(uint8_t *b, uint64_t sent, uint64_t took);
size_t rmq_ctrl_encode_bye_ack(uint8_t *b);
size_t rmq_ctrl_encode_auth(uint8_t *b, const uint8_t nonce[RMQ_AUTH_NONCE],
                            const uint8_t mac[RMQ_AUTH_MAC]);
/* A pattern frame: body (len <= RMQ_CTRL_BODY_MAX) is copied after the
 * header. */
size_t rmq_ctrl_encode_pat(uint8_t *b, const uint8_t *body, size_t len);
/*
 * Parse a frame header: returns 0 and the kind and body length, or
 * -RMQ_EPROTO (not our magic, body too long) / -RMQ_EVERSION.
 */
int rmq_ctrl_decode_hdr(const uint8_t *b, int *kind, size_t *body_len);
int rmq_ctrl_decode_hello(struct rmq_hello *h, const uint8_t *body,
                          size_t len);
int rmq_ctrl_decode_reject(struct rmq_reject *r, const uint8_t *body,
                           size_t len);
/* 8 bytes (took RMQ_BYE_NO_TOOK) or 16; else -RMQ_EPROTO. */
int rmq_ctrl_decode_bye(uint64_t *sent, uint64_t *took, const uint8_t *body,
                        size_t len);
int rmq_ctrl_decode_auth(uint8_t nonce[RMQ_AUTH_NONCE],
                         uint8_t mac[RMQ_AUTH_MAC], const uint8_t *body,
                         size_t len);

#endif /* RMQ_WIRE_H */
