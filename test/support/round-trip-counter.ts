// A proxy between a server and its PostgreSQL that counts round trips: the client's Sync and Query messages, each
// of which PostgreSQL answers with one ReadyForQuery. Reads the frontend protocol's framing only (a type byte and
// a length; the startup message has no type byte), and forwards every byte unchanged.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

export interface RoundTripCounter {
  /** the database URL through the proxy */
  url: string;
  roundTrips(): number;
  /** the client's messages of this type byte so far ('D': Describe, 'P': Parse, ...) */
  messages(type: string): number;
  close(): Promise<void>;
}

export async function countRoundTrips(databaseUrl: string): Promise<RoundTripCounter> {
  const target = new URL(databaseUrl);
  let roundTrips = 0;
  const byType = new Map<number, number>();
  const sockets = new Set<Socket>();
  const listener = createServer((client) => {
    const server = connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, server]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    let pending = Buffer.alloc(0);
    let started = false;
    client.on('data', (chunk: Buffer) => {
      server.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const header = started ? 5 : 4;
        if (pending.length < header) break;
        const length = started ? pending.readInt32BE(1) + 1 : pending.readInt32BE(0);
        if (pending.length < length) break;
        if (started && (pending[0] === 0x53 || pending[0] === 0x51)) roundTrips++;
        if (started) byType.set(pending[0], (byType.get(pending[0]) ?? 0) + 1);
        started = true;
        pending = pending.subarray(length);
      }
    });
    server.pipe(client);
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', () => r()));
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  // In the clear: an SSLRequest before the startup message, and what follows it, could not be counted.
  url.searchParams.set('sslmode', 'disable');
  url.port = String((listener.address() as AddressInfo).port);
  return {
    url: url.toString(),
    roundTrips: () => roundTrips,
    messages: (type) => byType.get(type.charCodeAt(0)) ?? 0,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        listener.close(() => r());
      }),
  };
}
