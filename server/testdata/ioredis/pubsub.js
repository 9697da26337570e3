// Publishes through ioredis's client for Redis Cluster and listens with a
// plain ioredis client on one node, for server/pubsub_cluster_test.go.
//
// Usage: node pubsub.js CLUSTER-HOST:PORT SUBSCRIBER-HOST:PORT COUNT
//
// It subscribes to "news" on the subscriber's node, publishes COUNT
// messages "0", "1", ... through the cluster client, which sends them to
// the node it chooses, and prints the messages heard within 10 seconds,
// in order, as a JSON array.
"use strict";

const Redis = require("ioredis");

function hostPort(addr) {
  const [host, port] = addr.split(":");
  return { host, port: Number(port) };
}

async function main() {
  const [clusterAddr, subscriberAddr, count] = process.argv.slice(2);
  const sub = new Redis(hostPort(subscriberAddr));
  const cluster = new Redis.Cluster([hostPort(clusterAddr)]);
  try {
    const heard = [];
    let done;
    const all = new Promise((resolve) => (done = resolve));
    sub.on("message", (channel, message) => {
      heard.push(message);
      if (heard.length === Number(count)) done();
    });
    await sub.subscribe("news");
    for (let i = 0; i < Number(count); i++) {
      await cluster.publish("news", String(i));
    }
    let timer;
    await Promise.race([all, new Promise((resolve) => (timer = setTimeout(resolve, 10000)))]);
    clearTimeout(timer);
    console.log(JSON.stringify(heard));
  } finally {
    sub.disconnect();
    cluster.disconnect();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
