// gRPC on the HTTP port: a connection that opens with the HTTP/2 connection preface (plaintext h2c with prior
// knowledge, as grpcurl -plaintext and the gRPC libraries send it) goes to the gRPC server; any other stays with
// the HTTP/1.1 server. The bytes read to tell them apart are put back before either reads the connection.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

/** What the first bytes say: 'h2' once the whole preface is there, 'http' at the first byte that differs. */
export function connectionKind(head: Buffer): 'h2' | 'http' | 'undecided' {
  const n = Math.min(head.length, preface.length);
  if (!head.subarray(0, n).equals(preface.subarray(0, n))) return 'http';
  return head.length >= preface.length ? 'h2' : 'undecided';
}

/**
 * Takes over the HTTP server's connections: each is read until its kind is known (within `timeoutMs`, else it is
 * closed), then handed to the HTTP/1.1 server or to `h2`. Answers the connections open, of every kind and stage:
 * what a shutdown cuts at the end of its grace (runtime/http/listener.ts, closeWithin).
 */
export function shareConnections(server: Server, h2: (socket: Socket) => void, timeoutMs: number): Set<Socket> {
  const http = server.listeners('connection') as ((socket: Socket) => void)[];
  const open = new Set<Socket>();
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    let head = Buffer.alloc(0);
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    const done = () => {
      clearTimeout(timer);
      socket.off('readable', onReadable);
      socket.off('close', onClose);
    };
    const onClose = () => clearTimeout(timer);
    const onReadable = () => {
      let chunk: Buffer | null;
      while ((chunk = socket.read() as Buffer | null) !== null) head = Buffer.concat([head, chunk]);
      const kind = connectionKind(head);
      if (kind === 'undecided') return;
      done();
      socket.unshift(head);
      if (kind === 'h2') h2(socket);
      else for (const listener of http) listener.call(server, socket);
    };
    socket.on('readable', onReadable);
    socket.on('close', onClose);
  });
  return open;
}
