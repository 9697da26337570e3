// Drives a Redis-compatible server with ioredis for server/ioredis_test.go.
//
// Usage: node client.js HOST:PORT < plan.json
//
// The plan (JSON on stdin) says which bits to set and what to ask; this
// script runs it with ioredis's own command methods, pipelines and
// transactions, and prints every reply as one JSON object on stdout. The
// test computes the expected replies itself.
"use strict";

const Redis = require("ioredis");

// settled turns the [error, result] pairs of a pipeline or transaction
// into plain results, with each error as {error: message}.
function settled(pairs) {
  return pairs.map(([err, res]) => (err ? { error: err.message } : res));
}

async function run(redis, plan) {
  const out = {};

  out.setbits = [];
  for (const [key, offset, value] of plan.setbits) {
    out.setbits.push(await redis.setbit(key, offset, value));
  }

  const pipe = redis.pipeline();
  for (const offset of plan.pipeline.offsets) {
    pipe.setbit(plan.pipeline.key, offset, 1);
  }
  pipe.bitcount(plan.pipeline.key);
  out.pipeline = settled(await pipe.exec());

  const tx = redis.multi();
  for (const offset of plan.multi.offsets) {
    tx.setbit(plan.multi.key, offset, 1);
  }
  tx.bitcount(plan.multi.key);
  tx.set(plan.multi.counter, "not a number");
  tx.incr(plan.multi.counter);
  tx.getBuffer(plan.multi.key);
  out.multi = settled(await tx.exec()).map((r) =>
    Buffer.isBuffer(r) ? r.toString("hex") : r,
  );

  out.getbits = [];
  for (const [key, offset] of plan.getbits) {
    out.getbits.push(await redis.getbit(key, offset));
  }
  out.bitcounts = [];
  for (const { key, range } of plan.bitcounts) {
    out.bitcounts.push(await redis.bitcount(key, ...range));
  }
  out.bitpos = [];
  for (const { key, bit, range } of plan.bitpos) {
    out.bitpos.push(await redis.bitpos(key, bit, ...range));
  }
  out.bitops = [];
  for (const { op, dest, keys } of plan.bitops) {
    const length = await redis.bitop(op, dest, ...keys);
    const value = await redis.getBuffer(dest);
    out.bitops.push({ length, value: value.toString("hex") });
  }
  out.bitfields = [];
  for (const args of plan.bitfields) {
    out.bitfields.push(await redis.bitfield(plan.bitfieldKey, ...args));
  }

  const { key, value, seconds } = plan.expiring;
  out.set = await redis.set(key, value, "EX", seconds);
  out.get = await redis.get(key);
  out.ttl = await redis.ttl(key);

  out.values = {};
  for (const k of plan.values) {
    out.values[k] = (await redis.getBuffer(k)).toString("hex");
  }
  return out;
}

async function main() {
  const [host, port] = process.argv[2].split(/:(?=[^:]*$)/);
  const chunks = [];
  for await (const chunk of process.stdin) {
    chunks.push(chunk);
  }
  const plan = JSON.parse(Buffer.concat(chunks).toString());
  const redis = new Redis({
    host,
    port: Number(port),
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  try {
    console.log(JSON.stringify(await run(redis, plan)));
  } finally {
    redis.disconnect();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
