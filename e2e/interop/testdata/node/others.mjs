// Test fixture: takes a lock with other real npm lock libraries so that redlockctl's
// interop tests can inspect and force-release it:
//
//   node others.mjs mutex         --addrs A --key K [--ttl 3000]   redis-semaphore Mutex
//   node others.mjs redlock-mutex --addrs A,B,C --key K            redis-semaphore RedlockMutex
//   node others.mjs semaphore     --addrs A --key K [--limit 2]    redis-semaphore Semaphore
//   node others.mjs redlock-semaphore --addrs A,B,C --key K [--limit 2]  redis-semaphore RedlockSemaphore
//   node others.mjs warlock       --addrs A --key K                node-redis-warlock
//   node others.mjs simple-mutex  --addrs A --key K                simple-redis-mutex
//
// One JSON object per line on stdout: {"event":"acquired","key":...,"value":...} (the
// key and value or member the library wrote), {"event":"lost"} when redis-semaphore's
// refresh finds its lock gone, then, when stdin closes, {"event":"released"} or
// {"event":"release-failed","error":...}. Failing to acquire exits 1; bad usage exits 2.
import Redis from "ioredis";
import { createClient } from "redis";
import { Mutex, RedlockMutex, RedlockSemaphore, Semaphore } from "redis-semaphore";
import warlockOf from "node-redis-warlock";
import { tryLock } from "simple-redis-mutex";

function usage(msg) {
  process.stderr.write(`others.mjs: ${msg}\n`);
  process.exit(2);
}
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");

const mode = process.argv[2];
const opts = { ttl: "3000", limit: "2" };
for (let i = 3; i < process.argv.length; i += 2) {
  if (i + 1 >= process.argv.length) usage(`flag ${process.argv[i]} needs a value`);
  opts[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
}
if (!opts.addrs || !opts.key) usage("--addrs and --key are required");
const addrs = opts.addrs.split(",").map((a) => a.split(":"));
const ttl = Number(opts.ttl);
const stdinClosed = new Promise((resolve) => {
  process.stdin.on("end", resolve);
  process.stdin.on("close", resolve);
  process.stdin.resume();
});
const ioredis = () => addrs.map(([host, port]) => new Redis({ host, port: Number(port), maxRetriesPerRequest: 1 }));

async function semaphoreLib() {
  const clients = ioredis();
  const onLockLost = () => emit({ event: "lost" });
  const o = { lockTimeout: ttl, refreshInterval: Math.round(ttl / 4), onLockLost, acquireAttemptsLimit: 1 };
  let lock, key;
  if (mode === "mutex") [lock, key] = [new Mutex(clients[0], opts.key, o), `mutex:${opts.key}`];
  else if (mode === "redlock-mutex") [lock, key] = [new RedlockMutex(clients, opts.key, o), `mutex:${opts.key}`];
  else if (mode === "redlock-semaphore") [lock, key] = [new RedlockSemaphore(clients, opts.key, Number(opts.limit), o), `semaphore:${opts.key}`];
  else [lock, key] = [new Semaphore(clients[0], opts.key, Number(opts.limit), o), `semaphore:${opts.key}`];
  if (!(await lock.tryAcquire())) return fail(clients);
  emit({ event: "acquired", key, value: lock.identifier });
  await stdinClosed;
  await finish(() => lock.release());
  clients.forEach((c) => c.disconnect());
}

async function warlock() {
  const [client] = ioredis();
  const w = warlockOf(client);
  const got = await new Promise((resolve) => w.lock(opts.key, ttl, (err, unlock, id) => resolve({ err, unlock, id })));
  if (got.err || typeof got.unlock !== "function") return fail([client]);
  emit({ event: "acquired", key: w.makeKey(opts.key), value: got.id });
  await stdinClosed;
  await finish(() => new Promise((resolve, reject) => got.unlock((err) => (err ? reject(err) : resolve()))));
  client.disconnect();
}

async function simpleMutex() {
  const [host, port] = addrs[0];
  const client = createClient({ socket: { host, port: Number(port) } });
  await client.connect();
  const [ok, release] = await tryLock(client, opts.key, { timeout: ttl });
  if (!ok) return fail([]);
  const key = `@simple-redis-mutex:lock-${opts.key}`;
  emit({ event: "acquired", key, value: await client.get(key), fencing: release.fencingToken });
  await stdinClosed;
  await finish(() => release());
  await client.quit();
}

function fail(clients) {
  emit({ event: "acquire-failed" });
  clients.forEach((c) => c.disconnect());
  process.exit(1);
}

async function finish(release) {
  try {
    await release();
    emit({ event: "released" });
  } catch (err) {
    emit({ event: "release-failed", error: String(err && err.message) });
  }
}

const run = { mutex: semaphoreLib, "redlock-mutex": semaphoreLib, semaphore: semaphoreLib, "redlock-semaphore": semaphoreLib, warlock, "simple-mutex": simpleMutex }[mode];
if (!run) usage(`unknown mode ${mode}`);
await run();
process.exit(0);
