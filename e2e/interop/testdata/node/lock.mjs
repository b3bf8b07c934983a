// Test fixture: takes a lock with the real node-redlock (v5) over ioredis so that
// redlockctl's interop tests can inspect and force-release it.
//
//   node lock.mjs acquire --addrs A,B,C --resources r1[,r2] --ttl 10000
//   node lock.mjs using   --addrs A,B,C --resources r1 --ttl 2000 --threshold 1000
//
// One JSON object per line on stdout:
//   {"event":"acquired","value":"...","resources":[...]}
//   {"event":"aborted","error":"..."}       using(): the routine's abort signal fired
//   {"event":"released"} / {"event":"release-failed","error":"..."}
// It holds the lock until stdin closes, then releases it and exits 0. Failing to
// acquire exits 1; bad usage exits 2.
import Redis from "ioredis";
import Redlock from "redlock";

function parse(argv) {
  const opts = { mode: argv[0] };
  for (let i = 1; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, "");
    if (i + 1 >= argv.length) usage(`flag --${name} needs a value`);
    opts[name] = argv[i + 1];
  }
  if (!["acquire", "using"].includes(opts.mode)) usage(`unknown mode ${opts.mode}`);
  if (!opts.addrs || !opts.resources) usage("--addrs and --resources are required");
  return opts;
}

function usage(msg) {
  process.stderr.write(`lock.mjs: ${msg}\n`);
  process.exit(2);
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

// Remembers the value of the latest acquisition: using() does not hand it to the routine.
class RecordingRedlock extends Redlock {
  _random() {
    this.lastValue = super._random();
    return this.lastValue;
  }
}

const stdinClosed = new Promise((resolve) => {
  process.stdin.on("end", resolve);
  process.stdin.on("close", resolve);
  process.stdin.resume();
});

const opts = parse(process.argv.slice(2));
const clients = opts.addrs.split(",").map((addr) => {
  const [host, port] = addr.split(":");
  return new Redis({ host, port: Number(port), maxRetriesPerRequest: 1, connectTimeout: 1000 });
});
const resources = opts.resources.split(",");
const ttl = Number(opts.ttl ?? 10000);
const redlock = new RecordingRedlock(clients, { retryCount: 2, retryDelay: 100, retryJitter: 50 });
redlock.on("error", () => {}); // per-node errors show up in the results below

async function main() {
  if (opts.mode === "acquire") {
    let lock;
    try {
      lock = await redlock.acquire(resources, ttl, { retryCount: 0 });
    } catch (err) {
      emit({ event: "acquire-failed", error: String(err && err.message) });
      return 1;
    }
    emit({ event: "acquired", value: lock.value, resources });
    await stdinClosed;
    try {
      await lock.release({ retryCount: 0 });
      emit({ event: "released" });
    } catch (err) {
      emit({ event: "release-failed", error: String(err && err.message) });
    }
    return 0;
  }
  const threshold = Number(opts.threshold ?? 500);
  try {
    await redlock.using(resources, ttl, { automaticExtensionThreshold: threshold }, async (signal) => {
      emit({ event: "acquired", value: redlock.lastValue, resources });
      const aborted = new Promise((resolve) => signal.addEventListener("abort", resolve));
      const which = await Promise.race([aborted.then(() => "aborted"), stdinClosed.then(() => "stdin")]);
      if (which === "aborted") {
        emit({ event: "aborted", error: String(signal.error && signal.error.message) });
        await stdinClosed;
      }
    });
    emit({ event: "released" });
  } catch (err) {
    emit({ event: "release-failed", error: String(err && err.message) });
  }
  return 0;
}

const code = await main();
await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
process.exit(code);
