/* The libzmq reference of the PUB→SUB benchmark: libzmq itself, from C (Debian's libzmq3-dev),
 * no binding in between. Same line protocol as zmq-pubsub-bun-peer.ts (see zmq-pubsub.ts), but it
 * sends one pre-encoded vLLM batch (the bytes our encoder makes, read from a file) and checks only
 * each payload's length: no msgpack on either side, so compare it with the "no codec" rows.
 *   cc -O2 -o peer zmq-pubsub-c-peer.c -lzmq
 *   peer pub HWM DURATION_MS PAYLOAD_FILE
 *   peer sub ENDPOINT PAYLOAD_BYTES
 * The publisher sets ZMQ_XPUB_NODROP and sends blocking: at the HWM it waits for room instead of
 * dropping, as the other peers do; it sends in batches of 256 and reads the clock between them. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

static const char TOPIC[] = "kv@bench";
static const uint64_t WARM_SEQ = 0xfffffffffffffffeULL;
static const uint64_t END_SEQ = 0xffffffffffffffffULL;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* CPU time (user + system) of the whole process, libzmq's I/O thread included. */
static double cpu_ms(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static void die(const char *what) {
  fprintf(stderr, "zmq-pubsub-c-peer: %s: %s\n", what, zmq_strerror(zmq_errno()));
  exit(1);
}

static void put_seq(unsigned char *b, uint64_t seq) {
  for (int i = 7; i >= 0; i--, seq >>= 8) b[i] = (unsigned char)(seq & 0xff);
}

static uint64_t get_seq(const unsigned char *b) {
  uint64_t seq = 0;
  for (int i = 0; i < 8; i++) seq = (seq << 8) | b[i];
  return seq;
}

/* Sends [topic, seq, payload]; a blocking send with NODROP waits at the HWM until there is room. */
static void send3(void *pub, uint64_t seq, const void *payload, size_t len) {
  unsigned char seqb[8];
  put_seq(seqb, seq);
  if (zmq_send(pub, TOPIC, sizeof TOPIC - 1, ZMQ_SNDMORE) < 0) die("send topic");
  if (zmq_send(pub, seqb, 8, ZMQ_SNDMORE) < 0) die("send seq");
  if (zmq_send(pub, payload, len, 0) < 0) die("send payload");
}

/* Waits up to timeout_ms for a stdin line; returns 1 for a line containing `word`, -1 at EOF. */
static int stdin_has(const char *word, int timeout_ms) {
  static char buf[4096];
  static size_t used = 0;
  struct pollfd p = {0, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return 0;
  ssize_t n = read(0, buf + used, sizeof buf - 1 - used);
  if (n <= 0) return -1;
  used += (size_t)n;
  buf[used] = 0;
  int found = strstr(buf, word) != NULL;
  if (found || used > sizeof buf / 2) used = 0;
  return found;
}

static int run_pub(int hwm, double duration_ms, const char *payload_file) {
  FILE *f = fopen(payload_file, "rb");
  if (!f) {
    perror(payload_file);
    return 1;
  }
  static unsigned char payload[1 << 20];
  size_t len = fread(payload, 1, sizeof payload, f);
  fclose(f);

  void *ctx = zmq_ctx_new();
  void *pub = zmq_socket(ctx, ZMQ_PUB);
  int one = 1, linger = 1000;
  zmq_setsockopt(pub, ZMQ_SNDHWM, &hwm, sizeof hwm);
  zmq_setsockopt(pub, ZMQ_XPUB_NODROP, &one, sizeof one);
  zmq_setsockopt(pub, ZMQ_LINGER, &linger, sizeof linger);
  if (zmq_bind(pub, "tcp://127.0.0.1:*") != 0) die("bind");
  char endpoint[256];
  size_t elen = sizeof endpoint;
  zmq_getsockopt(pub, ZMQ_LAST_ENDPOINT, endpoint, &elen);
  printf("{\"endpoint\":\"%s\"}\n", endpoint);
  fflush(stdout);

  /* Slow joiner: idle until "warm", then warm-up messages every 2 ms until "go". */
  int r;
  while ((r = stdin_has("warm", 1000)) == 0) {}
  if (r < 0) return 0;
  while ((r = stdin_has("go", 2)) == 0) send3(pub, WARM_SEQ, payload, len);
  if (r < 0) return 0;

  double t0 = now_ms(), c0 = cpu_ms(), deadline = t0 + duration_ms;
  uint64_t n = 0;
  while (now_ms() < deadline) {
    for (int i = 0; i < 256; i++, n++) send3(pub, n, payload, len);
  }
  double elapsed = now_ms() - t0, cpu = cpu_ms() - c0;
  send3(pub, END_SEQ, payload, 0);
  printf("{\"done\":true,\"sent\":%llu,\"elapsedMs\":%.3f,\"cpuMs\":%.3f,\"dropped\":0,\"payloadBytes\":%zu}\n", (unsigned long long)n, elapsed, cpu, len);
  fflush(stdout);
  while (stdin_has("\n", 1000) >= 0) {} /* until the orchestrator closes stdin */
  zmq_close(pub);
  zmq_ctx_term(ctx);
  return 0;
}

static int run_sub(const char *endpoint, size_t expected) {
  void *ctx = zmq_ctx_new();
  void *sub = zmq_socket(ctx, ZMQ_SUB);
  int hwm = 10000, linger = 0;
  zmq_setsockopt(sub, ZMQ_RCVHWM, &hwm, sizeof hwm);
  zmq_setsockopt(sub, ZMQ_LINGER, &linger, sizeof linger);
  zmq_setsockopt(sub, ZMQ_SUBSCRIBE, TOPIC, sizeof TOPIC - 1);
  if (zmq_connect(sub, endpoint) != 0) die("connect");
  int warm = 0;
  uint64_t received = 0, bad = 0;
  double t0 = 0, c0 = cpu_ms();
  zmq_msg_t frames[3];
  for (int i = 0; i < 3; i++) zmq_msg_init(&frames[i]);
  for (;;) {
    int got = 0, more = 1;
    while (more) {
      zmq_msg_t *m = &frames[got < 3 ? got : 2];
      if (zmq_msg_recv(m, sub, 0) < 0) die("recv");
      got++;
      more = zmq_msg_more(m);
    }
    if (got != 3 || zmq_msg_size(&frames[1]) != 8) {
      bad++;
      continue;
    }
    uint64_t seq = get_seq(zmq_msg_data(&frames[1]));
    if (seq == WARM_SEQ) {
      if (!warm) {
        printf("{\"warm\":true}\n");
        fflush(stdout);
      }
      warm = 1;
      continue;
    }
    if (seq == END_SEQ) break;
    if (received == 0) {
      t0 = now_ms();
      c0 = cpu_ms();
    }
    received++;
    if (zmq_msg_size(&frames[2]) != expected) bad++;
  }
  printf("{\"received\":%llu,\"elapsedMs\":%.3f,\"cpuMs\":%.3f,\"badDecodes\":%llu}\n", (unsigned long long)received, now_ms() - t0, cpu_ms() - c0, (unsigned long long)bad);
  fflush(stdout);
  for (int i = 0; i < 3; i++) zmq_msg_close(&frames[i]);
  zmq_close(sub);
  zmq_ctx_term(ctx);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "pub") == 0) return run_pub(atoi(argv[2]), atof(argv[3]), argv[4]);
  if (argc == 4 && strcmp(argv[1], "sub") == 0) return run_sub(argv[2], (size_t)strtoull(argv[3], NULL, 10));
  fprintf(stderr, "usage: %s pub HWM DURATION_MS PAYLOAD_FILE | sub ENDPOINT PAYLOAD_BYTES\n", argv[0]);
  return 2;
}
