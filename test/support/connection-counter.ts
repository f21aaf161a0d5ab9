// A listener on loopback that counts the connections made to it, closing each: a test of a refused address
// asserts that none reached it.
import { createServer, type AddressInfo } from 'node:net';

export interface ConnectionCounter {
  port: number;
  connections(): number;
  close(): Promise<void>;
}

export async function countConnections(): Promise<ConnectionCounter> {
  let connections = 0;
  const listener = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', () => r()));
  return {
    port: (listener.address() as AddressInfo).port,
    connections: () => connections,
    close: () => new Promise((r) => listener.close(() => r())),
  };
}
