// Drives a cluster with ioredis's client for Redis Cluster, for
// server/clustermode_test.go.
//
// Usage: node cluster.js HOST:PORT write|read PREFIX
//
// "write" sets bits and strings under PREFIX through the master; "read"
// reads them back from the replicas (scaleReads: "slave"). Each prints
// its replies, and the master's and replicas' ports, as one JSON object.
"use strict";

const Redis = require("ioredis");

async function main() {
  const [addr, phase, prefix] = process.argv.slice(2);
  const [host, port] = addr.split(":");
  const cluster = new Redis.Cluster([{ host, port: Number(port) }], { scaleReads: "slave" });
  try {
    const out = { replies: [] };
    for (let i = 0; i < 10; i++) {
      const key = `${prefix}:bitmap:${i % 3}`;
      out.replies.push(phase === "write" ? await cluster.setbit(key, i, 1) : await cluster.getbit(key, i));
    }
    out.replies.push(phase === "write" ? await cluster.set(`${prefix}:s`, "v") : await cluster.get(`${prefix}:s`));
    out.masters = cluster.nodes("master").map((n) => `${n.options.host}:${n.options.port}`);
    out.replicas = cluster.nodes("slave").map((n) => `${n.options.host}:${n.options.port}`).sort();
    console.log(JSON.stringify(out));
  } finally {
    cluster.disconnect();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
