<?php
// Test fixture: takes a lock or a semaphore with the real Symfony Lock / Semaphore
// RedisStore (Debian's php-symfony-lock, php-symfony-semaphore, php-redis) so that
// redlockctl's interop tests can inspect and force-release it.
//
//   php lock.php exclusive --addrs A[,B,C] --key K [--ttl 60]   (several addrs: CombinedStore, consensus)
//   php lock.php shared    --addrs A --key K [--ttl 60]
//   php lock.php semaphore --addrs A --key K [--limit 2] [--ttl 60]
//
// One JSON object per line on stdout: {"event":"acquired"}, then, when stdin closes,
// {"event":"state","acquired":true|false} (what the library believes after
// redlockctl's work) and {"event":"released"}. Failing to acquire exits 1; bad usage
// exits 2.
require_once '/usr/share/php/Symfony/Component/Lock/autoload.php';
require_once '/usr/share/php/Symfony/Component/Semaphore/autoload.php';

use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\CombinedStore;
use Symfony\Component\Lock\Store\RedisStore;
use Symfony\Component\Lock\Strategy\ConsensusStrategy;
use Symfony\Component\Semaphore\SemaphoreFactory;
use Symfony\Component\Semaphore\Store\RedisStore as SemaphoreRedisStore;

function emit(array $o): void { fwrite(STDOUT, json_encode($o) . "\n"); fflush(STDOUT); }
function usage(string $m): void { fwrite(STDERR, "lock.php: $m\n"); exit(2); }

$mode = $argv[1] ?? '';
$opts = ['ttl' => '60', 'limit' => '2'];
for ($i = 2; $i < count($argv); $i += 2) {
    if (!isset($argv[$i + 1])) usage("flag {$argv[$i]} needs a value");
    $opts[ltrim($argv[$i], '-')] = $argv[$i + 1];
}
if (!in_array($mode, ['exclusive', 'shared', 'semaphore'], true)) usage("unknown mode $mode");
if (!isset($opts['addrs'], $opts['key'])) usage('--addrs and --key are required');

$clients = [];
foreach (explode(',', $opts['addrs']) as $addr) {
    [$host, $port] = explode(':', $addr);
    $r = new \Redis();
    $r->connect($host, (int) $port, 2.0);
    $clients[] = $r;
}
$ttl = (float) $opts['ttl'];

if ($mode === 'semaphore') {
    $factory = new SemaphoreFactory(new SemaphoreRedisStore($clients[0]));
    $held = $factory->createSemaphore($opts['key'], (int) $opts['limit'], 1, $ttl);
    $ok = $held->acquire();
} else {
    $stores = array_map(fn ($c) => new RedisStore($c), $clients);
    $store = count($stores) > 1 ? new CombinedStore($stores, new ConsensusStrategy()) : $stores[0];
    $held = (new LockFactory($store))->createLock($opts['key'], $ttl, false);
    $ok = $mode === 'shared' ? $held->acquireRead() : $held->acquire();
}
if (!$ok) {
    emit(['event' => 'acquire-failed']);
    exit(1);
}
emit(['event' => 'acquired']);
while (!feof(STDIN)) {
    fgets(STDIN);
}
$still = $mode === 'semaphore' ? $held->isAcquired() : $held->isAcquired();
emit(['event' => 'state', 'acquired' => $still]);
try {
    $held->release();
} catch (\Throwable $e) {
    emit(['event' => 'release-failed', 'error' => $e->getMessage()]);
    exit(0);
}
emit(['event' => 'released']);
