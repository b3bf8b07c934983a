package redlock

import (
	"crypto/sha1"
	"encoding/hex"
)

// script is a Lua script sent as EVALSHA, falling back to EVAL when the master answers
// NOSCRIPT (see pipeline.go).
type script struct {
	src string
	sha string
}

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

// Script replies shared by the owner-checked scripts.
const (
	replyDone   = 1  // the value was there and the command ran
	replyAbsent = 0  // no key
	replyTaken  = -1 // the key holds another value
)

// releaseScript deletes KEYS[1] only if it holds ARGV[1]. Never a bare DEL.
var releaseScript = newScript(`local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
if v then return -1 end
return 0`)

// extendScript sets a new TTL (ms, ARGV[2]) on KEYS[1] only if it holds ARGV[1]. PEXPIRE
// never creates a key, so a master that lost the key stays out of the lock.
var extendScript = newScript(`local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if v then return -1 end
return 0`)

// fencedAcquireScript is round two of a fenced acquisition: KEYS[1] lock key, KEYS[2]
// fence counter, ARGV value, ttl ms, token. It takes the lock and stores the token only
// if the key is free and the stored counter is below the token, and always returns
// {status, counter}: status 1 taken by us, 0 key exists, -1 counter >= token.
var fencedAcquireScript = newScript(`local c = redis.call('GET', KEYS[2])
if c then
  c = tonumber(c)
  if not c then return redis.error_reply('ERR fence counter ' .. KEYS[2] .. ' is not an integer') end
else
  c = 0
end
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, c} end
local t = tonumber(ARGV[3])
if c >= t then return {-1, c} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SET', KEYS[2], ARGV[3])
return {1, t}`)

// scripts are loaded on every new connection.
var scripts = []*script{releaseScript, extendScript, fencedAcquireScript}
