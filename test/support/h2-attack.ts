// Raw HTTP/2 on a socket, to misbehave as no client library would: an rpc whose announced message never comes.
import { connect, type Socket } from 'node:net';

const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

/** HPACK literal header fields without indexing, no Huffman (names and values under 127 bytes). */
function headerBlock(headers: [string, string][]): Buffer {
  return Buffer.concat(
    headers.flatMap(([name, value]) => [
      Buffer.from([0x00, name.length]),
      Buffer.from(name),
      Buffer.from([value.length]),
      Buffer.from(value),
    ]),
  );
}

/**
 * Opens an h2c connection to host:port, starts `streams` rpcs at `path` and announces for each a message of
 * 1,000 bytes of which it sends 3; resolves once the bytes are written, with the socket still open.
 */
export function startStalledRpc(host: string, port: number, path: string, streams = 1): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, host, () => {
      const headers = headerBlock([
        [':method', 'POST'],
        [':scheme', 'http'],
        [':path', path],
        [':authority', `${host}:${port}`],
        ['content-type', 'application/grpc'],
        ['te', 'trailers'],
      ]);
      const message = Buffer.from([0, 0, 0, 0x03, 0xe8, 1, 2, 3]);
      const rpcs = Array.from({ length: streams }, (_, i) => [
        frame(0x1, 0x4, 2 * i + 1, headers),
        frame(0x0, 0, 2 * i + 1, message),
      ]).flat();
      socket.write(Buffer.concat([preface, frame(0x4, 0, 0, Buffer.alloc(0)), ...rpcs]), (e) =>
        e ? reject(e) : resolve(socket),
      );
    });
    socket.on('error', () => socket.destroy());
  });
}

/** The streams the server reset on this connection, with their error codes, as its frames arrive. */
export function resetStreams(socket: Socket): Map<number, number> {
  const resets = new Map<number, number>();
  let buffered = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 9 && buffered.length >= 9 + buffered.readUIntBE(0, 3)) {
      const length = buffered.readUIntBE(0, 3);
      if (buffered[3] === 0x3) resets.set(buffered.readUInt32BE(5) & 0x7fffffff, buffered.readUInt32BE(9));
      buffered = buffered.subarray(9 + length);
    }
  });
  return resets;
}
