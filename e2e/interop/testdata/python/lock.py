"""Test fixture: takes a lock with the real redis-py Lock (Debian's python3-redis) so
that redlockctl's interop tests can inspect and force-release it.

Run with /usr/bin/python3 (the interpreter python3-redis is installed for):

  lock.py hold --addr HOST:PORT --key K [--timeout SECONDS]
  lock.py wait --addr HOST:PORT --key K [--timeout SECONDS] [--blocking-timeout SECONDS]

One JSON object per line on stdout:
  {"event": "acquired", "value": "...", "waited_ms": N}
  {"event": "waiting"}                 wait: about to block in Lock.acquire()
  {"event": "released"} / {"event": "release-failed", "error": "..."}
  {"event": "acquire-failed"}          wait: blocking_timeout ran out (exit 1)
hold keeps the lock until stdin closes, then releases it. wait blocks in acquire()
until it gets the lock, reports it, then does the same.
"""
import argparse
import json
import sys
import time

import redis


def emit(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def main():
    p = argparse.ArgumentParser(prog="lock.py")
    p.add_argument("mode", choices=["hold", "wait"])
    p.add_argument("--addr", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--timeout", type=float, default=None, help="lock TTL in seconds (default: none)")
    p.add_argument("--blocking-timeout", type=float, default=30.0)
    a = p.parse_args()
    host, port = a.addr.rsplit(":", 1)
    r = redis.Redis(host=host, port=int(port), socket_timeout=2, socket_connect_timeout=2)
    lock = r.lock(a.key, timeout=a.timeout)

    start = time.monotonic()
    if a.mode == "wait":
        emit(event="waiting")
        if not lock.acquire(blocking=True, blocking_timeout=a.blocking_timeout):
            emit(event="acquire-failed")
            return 1
    elif not lock.acquire(blocking=False):
        emit(event="acquire-failed")
        return 1
    waited = int((time.monotonic() - start) * 1000)
    emit(event="acquired", value=lock.local.token.decode(), waited_ms=waited)

    sys.stdin.read()  # hold until the parent closes stdin
    try:
        lock.release()
        emit(event="released")
    except redis.exceptions.LockError as e:
        emit(event="release-failed", error=str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
